"""Models: one file per model (``nn.Module`` + its loss terms), grouped by family (CLCRec in
``clcrec/``, the cold-start ``zoo/``, the ``lm/`` recommender, ``forecast/``, ``blend.py``),
and what the families share: the contract in ``base.py``, ``content.py``, ``gather_dot.py``.

Imported lazily so that torch-free modules here (``clcrec/config.py``) load without torch; the
registry of names, and ``build_model``, are in ``coldbrew.registry``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Batch", "ForecastBatch", "LossOutput", "Recommender", "Teacher"]


def __getattr__(name: str) -> Any:
    if name in ("Batch", "ForecastBatch", "LossOutput", "Recommender", "Teacher"):
        from coldbrew.models import base

        return getattr(base, name)
    raise AttributeError(f"module 'coldbrew.models' has no attribute {name!r}")
