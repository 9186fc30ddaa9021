"""Models: one file per model (``nn.Module`` + its loss terms), grouped by family (CLCRec in
``clcrec.py``, the cold-start ``zoo/``, the ``lm/`` recommender, ``forecast/``, ``blend.py``),
and what the families share: the contract in ``base.py``, ``content.py``, ``gather_dot.py``.

Imported lazily so that torch-free modules here (``clcrec_config``) load without torch; the
registry of names is ``coldbrew.registry``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Batch", "ForecastBatch", "LossOutput", "Recommender", "Teacher", "build_model"]


def build_model(
    name: str, dataset: Any, config: Any, teacher: Any = None, *, fixed_shapes: bool = False
) -> Any:
    """The registered model ``name`` built for ``dataset`` with ``config``; its initial weights
    come from the global torch RNG, like any ``nn.Module``'s. ``teacher``: a collaborative
    backbone's embeddings for the models that learn from one (None: rebuilt from a checkpoint).
    ``fixed_shapes``: the model takes the step a GPU takes on any device (``Recommender``)."""
    from coldbrew.registry import model_spec

    model = model_spec(name).build(dataset, config, teacher)
    if fixed_shapes:
        model.fixed_shapes = True
    return model


def __getattr__(name: str) -> Any:
    if name in ("Batch", "ForecastBatch", "LossOutput", "Recommender", "Teacher"):
        from coldbrew.models import base

        return getattr(base, name)
    raise AttributeError(f"module 'coldbrew.models' has no attribute {name!r}")
