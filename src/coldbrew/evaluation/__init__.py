"""Full-ranking evaluation of a dataset split, group by group.

Each group of a split ranks its own candidate items, as in the CLCRec protocol: ``"all"`` every
item, ``"warm"`` only warm items (those not in ``dataset.cold_items``), ``"cold"`` only cold
items. A user's training items are never ranked. Two entry points share one ranking core:

* ``evaluate_embeddings(dataset, user_vectors, item_vectors)``: scores are inner products;
* ``evaluate_scores(dataset, score_users)``: the model scores users itself,
  ``score_users(users) -> [B, num_items]`` (the model contract).

Both return ``{group: {"precision@10": ..., "recall@10": ..., "ndcg@10": ..., "hit@10": ...}}``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import (
    check_ks,
    mean_metrics,
    metric_names,
    metric_sums,
    per_user_metrics,
)
from coldbrew.evaluation.ranking import ScoreUsers, check_vectors, full_ranking, rank_embeddings

__all__ = [
    "evaluate_embeddings",
    "evaluate_scores",
    "full_ranking",
    "group_candidates",
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
    chunk_elements: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Metrics of ``user_vectors @ item_vectors.T`` on every group of ``split``.

    ``user_vectors`` is ``[num_users, d]``, ``item_vectors`` ``[num_items, d]``; ranking runs
    on ``device`` (default: where ``user_vectors`` live). A split without groups gives ``{}``.
    ``progress`` shows a bar over users per group when a group takes more than one chunk.
    """
    ks = check_ks(ks)
    shape = (dataset.num_users, dataset.num_items)
    user_vectors, item_vectors = check_vectors(user_vectors, item_vectors, shape, device)
    return {
        group: rank_embeddings(
            dataset.train,
            positives,
            user_vectors,
            item_vectors,
            candidates=group_candidates(dataset, group),
            ks=ks,
            chunk_elements=chunk_elements,
            progress=f"{split} {group}" if progress else None,
        )
        for group, positives in dataset.groups(split).items()
    }


def evaluate_scores(
    dataset: Dataset,
    score_users: ScoreUsers,
    split: str = "val",
    ks: Sequence[int] = (10, 20, 50),
    *,
    chunk_elements: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Metrics of ``score_users(users) -> [len(users), num_items]`` on every group of ``split``.

    ``users`` is an int64 tensor on ``device``: by default the device of the module when
    ``score_users`` is a method of an ``nn.Module`` (``model.score_users``), else CPU.
    ``chunk_elements`` bounds ``B × num_items``, the scores asked for at once.
    """
    ks = check_ks(ks)
    if not callable(score_users):
        raise ColdbrewError("score_users must be callable: users (B,) -> scores (B, num_items)")
    device = torch.device(device) if device is not None else _module_device(score_users)
    return {
        group: full_ranking(
            dataset.train,
            positives,
            score_users=score_users,
            candidates=group_candidates(dataset, group),
            ks=ks,
            chunk_elements=chunk_elements,
            device=device,
            progress=f"{split} {group}" if progress else None,
        )
        for group, positives in dataset.groups(split).items()
    }


def _module_device(score_users: ScoreUsers) -> torch.device:
    owner = getattr(score_users, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        for tensor in (*owner.parameters(), *owner.buffers()):
            return tensor.device
    return torch.device("cpu")
