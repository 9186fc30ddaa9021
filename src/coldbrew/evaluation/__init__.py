"""Full-ranking evaluation of a dataset's splits, group by group, by one engine (``engine``).

Each group of a split ranks its candidate items, as in the CLCRec protocol: ``"all"`` every
item, ``"warm"`` only warm items (those not in ``dataset.cold_items``), ``"cold"`` only cold
items. ``cold_candidates="split"`` narrows a split's cold items to its own (``plan``). A user's
training items are never ranked (``protocol="original"`` reproduces the original code's masking
instead, ``protocols``). Entry points:

* ``evaluate_dataset(dataset, user_vectors=..., item_vectors=... | score_users=...,
  splits=("val", "test"))``: every split and group from one scoring pass,
  ``{split: {group: {metric: value}}}``;
* ``evaluate_embeddings(dataset, user_vectors, item_vectors, split)`` and
  ``evaluate_scores(dataset, score_users, split)``: one split, ``{group: {metric: value}}``.

Metrics: ``"precision@10"``, ``"recall@10"``, ``"ndcg@10"``, ``"hit@10"`` for every K.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.engine import evaluate_dataset
from coldbrew.evaluation.metrics import mean_metrics, metric_names, metric_sums, per_user_metrics
from coldbrew.evaluation.plan import COLD_CANDIDATES
from coldbrew.evaluation.protocols import PROTOCOLS, original_improved
from coldbrew.evaluation.sources import ScoreUsers

__all__ = [
    "COLD_CANDIDATES",
    "PROTOCOLS",
    "evaluate_dataset",
    "evaluate_embeddings",
    "evaluate_scores",
    "original_improved",
    "per_user_metrics",
    "metric_sums",
    "mean_metrics",
    "metric_names",
]


def evaluate_embeddings(
    dataset: Dataset,
    user_vectors: torch.Tensor,
    item_vectors: torch.Tensor,
    split: str = "val",
    ks: Sequence[int] = (10, 20, 50),
    **options,
) -> dict[str, dict[str, float]]:
    """Metrics of ``user_vectors @ item_vectors.T`` on every group of ``split``.

    ``user_vectors`` is ``[num_users, d]``, ``item_vectors`` ``[num_items, d]``; ranking runs
    on ``device`` (default: where ``user_vectors`` live). ``options``: ``protocol``,
    ``cold_candidates``, ``chunk_elements``, ``device``, ``progress`` (``evaluate_dataset``).
    A split without groups gives ``{}``.
    """
    return evaluate_dataset(
        dataset,
        user_vectors=user_vectors,
        item_vectors=item_vectors,
        splits=(split,),
        ks=ks,
        **options,
    )[split]


def evaluate_scores(
    dataset: Dataset,
    score_users: ScoreUsers,
    split: str = "val",
    ks: Sequence[int] = (10, 20, 50),
    **options,
) -> dict[str, dict[str, float]]:
    """Metrics of ``score_users(users) -> [len(users), num_items]`` on every group of ``split``.

    ``users`` is an int64 tensor on ``device``: by default the device of the module when
    ``score_users`` is a method of an ``nn.Module`` (``model.score_users``), else CPU.
    ``options`` as ``evaluate_embeddings``; ``chunk_elements`` bounds ``B × num_items``.
    """
    if not callable(score_users):
        raise ColdbrewError("score_users must be callable: users (B,) -> scores (B, num_items)")
    return evaluate_dataset(dataset, score_users=score_users, splits=(split,), ks=ks, **options)[
        split
    ]
