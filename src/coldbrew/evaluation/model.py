"""Evaluate a recommender through the model contract: its own ``score_users`` where it overrides
the default, else its embedding matrices (ranked block by block, never ``users × items`` at once)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.evaluation import evaluate_embeddings, evaluate_scores
from coldbrew.models.base import Recommender


def evaluate_model(
    model: Recommender,
    dataset: Dataset,
    split: str,
    *,
    ks: Sequence[int] = (10, 20, 50),
    chunk_elements: int | None = None,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """Full-ranking metrics ``{group: {metric: value}}`` of ``model`` on ``split``; the model's
    train/eval mode is restored afterwards."""
    options = {"split": split, "ks": ks, "chunk_elements": chunk_elements, "progress": progress}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if type(model).score_users is not Recommender.score_users:
                return evaluate_scores(dataset, model.score_users, **options)
            users, items = model.user_embeddings().float(), model.item_embeddings().float()
            return evaluate_embeddings(dataset, users, items, **options)
    finally:
        model.train(was_training)
