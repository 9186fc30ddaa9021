"""Evaluate a recommender through the model contract: its own ``score_users`` where it overrides
the default, else its embedding matrices (ranked block by block, never ``users × items`` at once);
every requested split from one scoring pass."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.evaluation.engine import evaluate_dataset
from coldbrew.models.base import Recommender


def evaluate_model(
    model: Recommender,
    dataset: Dataset,
    splits: Sequence[str] = ("val",),
    *,
    ks: Sequence[int] = (10, 20, 50),
    protocol: str = "coldbrew",
    cold_candidates: str = "all",
    chunk_elements: int | None = None,
    progress: bool = False,
    shard: tuple[int, int, Callable[[torch.Tensor], torch.Tensor]] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Full-ranking metrics ``{split: {group: {metric: value}}}`` of ``model``; its train/eval
    mode is restored afterwards. ``shard=(rank, world, sum)``: this process ranks every
    ``world``-th user from ``rank`` and ``sum`` adds the totals over processes. Each cold group
    says whether the model's cold scores differ anywhere (``"cold_signal"``, ``engine``)."""
    model = getattr(model, "module", model)  # DistributedDataParallel holds the model here
    options = {
        "splits": tuple(splits),
        "ks": ks,
        "protocol": protocol,
        "cold_candidates": cold_candidates,
        "chunk_elements": chunk_elements,
        "progress": progress,
        "shard": shard,
        "cold_signal": True,
    }
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if type(model).score_users is not Recommender.score_users:
                return evaluate_dataset(dataset, score_users=model.score_users, **options)
            users, items = model.user_embeddings().float(), model.item_embeddings().float()
            return evaluate_dataset(dataset, user_vectors=users, item_vectors=items, **options)
    finally:
        model.train(was_training)
