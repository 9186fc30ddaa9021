"""Full-ranking evaluation of a dataset's splits, group by group.

Each group of a split ranks its candidate items, as in the CLCRec protocol: ``"all"`` every
item, ``"warm"`` only warm items (those not in ``dataset.cold_items``), ``"cold"`` only cold
items. A user's training items are never ranked (``protocol="original"`` reproduces the
original code's masking instead, ``coldbrew.evaluation.protocols``). Entry points:

* ``evaluate_dataset(dataset, user_vectors=..., item_vectors=... | score_users=...,
  splits=("val", "test"))``: every split and group from one scoring pass,
  ``{split: {group: {metric: value}}}``;
* ``evaluate_embeddings(dataset, user_vectors, item_vectors, split)`` and
  ``evaluate_scores(dataset, score_users, split)``: one split, ``{group: {metric: value}}``;
* ``full_ranking(train, positives, ...)``: one (positives, candidates) pair.

Metrics: ``"precision@10"``, ``"recall@10"``, ``"ndcg@10"``, ``"hit@10"`` for every K.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import (
    mean_metrics,
    metric_names,
    metric_sums,
    per_user_metrics,
)
from coldbrew.evaluation.protocols import (
    PROTOCOLS,
    original_improved,
)
from coldbrew.evaluation.ranking import full_ranking
from coldbrew.evaluation.single_pass import evaluate_dataset
from coldbrew.evaluation.sources import ScoreUsers

__all__ = [
    "PROTOCOLS",
    "evaluate_dataset",
    "evaluate_embeddings",
    "evaluate_scores",
    "full_ranking",
    "group_candidates",
    "original_improved",
    "per_user_metrics",
    "metric_sums",
    "mean_metrics",
    "metric_names",
]


def group_candidates(dataset: Dataset, group: str) -> np.ndarray | None:
    """Item ids a group ranks: None (every item) for "all", warm ids for "warm", cold for "cold"."""
    if group == "all":
        return None
    if group == "warm":
        return dataset.warm_items
    if group == "cold":
        return dataset.cold_items
    raise ColdbrewError(f"unknown group {group!r}; expected all, warm or cold")


def evaluate_embeddings(
    dataset: Dataset,
    user_vectors: torch.Tensor,
    item_vectors: torch.Tensor,
    split: str = "val",
    ks: Sequence[int] = (10, 20, 50),
    *,
    protocol: str = "coldbrew",
    chunk_elements: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Metrics of ``user_vectors @ item_vectors.T`` on every group of ``split``.

    ``user_vectors`` is ``[num_users, d]``, ``item_vectors`` ``[num_items, d]``; ranking runs
    on ``device`` (default: where ``user_vectors`` live). A split without groups gives ``{}``.
    ``progress`` shows a bar over users when the evaluation takes more than one chunk.
    """
    return evaluate_dataset(
        dataset,
        user_vectors=user_vectors,
        item_vectors=item_vectors,
        splits=(split,),
        ks=ks,
        protocol=protocol,
        chunk_elements=chunk_elements,
        device=device,
        progress=progress,
    )[split]


def evaluate_scores(
    dataset: Dataset,
    score_users: ScoreUsers,
    split: str = "val",
    ks: Sequence[int] = (10, 20, 50),
    *,
    protocol: str = "coldbrew",
    chunk_elements: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Metrics of ``score_users(users) -> [len(users), num_items]`` on every group of ``split``.

    ``users`` is an int64 tensor on ``device``: by default the device of the module when
    ``score_users`` is a method of an ``nn.Module`` (``model.score_users``), else CPU.
    ``chunk_elements`` bounds ``B × num_items``, the scores asked for at once.
    """
    if not callable(score_users):
        raise ColdbrewError("score_users must be callable: users (B,) -> scores (B, num_items)")
    return evaluate_dataset(
        dataset,
        score_users=score_users,
        splits=(split,),
        ks=ks,
        protocol=protocol,
        chunk_elements=chunk_elements,
        device=device,
        progress=progress,
    )[split]
