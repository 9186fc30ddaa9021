"""The LM metadata recommender (issue 12): users and items through a language model's text
embeddings, cached (``lm_mode="cache"``) or in the graph (``"dynamic"``, frozen or LoRA).

``LMConfig`` imports no torch; the rest is imported on first use, and ``transformers``/``peft``
only when a backbone is loaded.

    from coldbrew.models.lm import LMConfig, build
    model = build(dataset, LMConfig(lm_mode="dynamic", lora="8,16"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coldbrew.models.lm.config import LMConfig, LoraSpec

if TYPE_CHECKING:
    from coldbrew.models.lm.builder import build
    from coldbrew.models.lm.model import LMRecommender

__all__ = ["LMConfig", "LoraSpec", "LMRecommender", "build"]

_LAZY = {
    "build": "coldbrew.models.lm.builder",
    "LMRecommender": "coldbrew.models.lm.model",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
