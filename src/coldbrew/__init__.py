"""coldbrew: fast, measured training of content-aware cold-start recommenders.

Imports are lazy: ``import coldbrew`` (and the CLI's ``--help``) does not load torch.
"""

from __future__ import annotations

from typing import Any

from coldbrew.errors import ColdbrewError, DataError
from coldbrew.version import __version__


def evaluate_embeddings(
    dataset, user_vectors, item_vectors, split="val", ks=(10, 20, 50), **kwargs
):
    """Full-ranking metrics for any ``[num_users, d]`` × ``[num_items, d]`` vectors.

    Returns ``{group: {"recall@20": ..., ...}}`` for every group the split has.
    """
    from coldbrew.evaluation import evaluate_embeddings as _evaluate

    _check_split(dataset, split)
    return _evaluate(dataset, user_vectors, item_vectors, split=split, ks=ks, **kwargs)


def evaluate_scores(dataset, score_users, split="val", ks=(10, 20, 50), **kwargs):
    """Full-ranking metrics from a ``score_users(users) -> [B, num_items]`` callable."""
    from coldbrew.evaluation import evaluate_scores as _evaluate

    _check_split(dataset, split)
    return _evaluate(dataset, score_users, split=split, ks=ks, **kwargs)


def _check_split(dataset, split: str) -> None:
    """A split the data does not have is an error here (the engine gives ``{}`` for it)."""
    if not dataset.groups(split):
        present = ", ".join(name for name, groups in dataset.splits.items() if groups) or "none"
        raise DataError(f"{dataset.name} has no {split} split to evaluate (it has: {present})")


def load_dataset(path_or_name, **options):
    """``coldbrew.data.load_dataset`` (its options: ``features``, ``seed``, ``text_encoder``
    ...), after torch's thread count is chosen as every entry point chooses it (the free
    cores: ``coldbrew.system.threads.ensure_threads``; a choice already made stands)."""
    from coldbrew.data import load_dataset as _load_dataset
    from coldbrew.system.threads import ensure_threads

    ensure_threads()
    return _load_dataset(path_or_name, **options)


def load_run(run_dir, *, data=None, device="auto"):
    """A trained run's best checkpoint, ready for ``.recommend(user=... | item_text=...)``."""
    from coldbrew.recommend import load_run as _load_run

    return _load_run(run_dir, data=data, device=device)


def __getattr__(name: str) -> Any:
    if name == "Dataset":
        import coldbrew.data

        return getattr(coldbrew.data, name)
    raise AttributeError(f"module 'coldbrew' has no attribute {name!r}")


__all__ = [
    "Dataset",
    "load_dataset",
    "evaluate_embeddings",
    "evaluate_scores",
    "load_run",
    "ColdbrewError",
    "DataError",
    "__version__",
]
