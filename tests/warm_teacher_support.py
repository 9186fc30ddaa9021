"""A stand-in collaborative backbone for model tests: vectors in which a user's positives score
above random items, built without training, so a teacher model's own tests need no backbone."""

from __future__ import annotations

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Teacher


def planted_teacher(dataset: Dataset, dim: int, seed: int = 0) -> Teacher:
    """Random item vectors; each user the mean of its training items' vectors (so its
    positives tend to score high); cold items' rows zero, as a backbone's are."""
    generator = torch.Generator().manual_seed(seed)
    items = torch.randn(dataset.num_items, dim, generator=generator)
    items[torch.from_numpy(dataset.cold_items)] = 0
    train = dataset.train.tocoo()
    rows, cols = torch.from_numpy(train.row).long(), torch.from_numpy(train.col).long()
    users = torch.zeros(dataset.num_users, dim).index_add_(0, rows, items[cols])
    counts = torch.bincount(rows, minlength=dataset.num_users).clamp_min(1)
    return Teacher(users / counts[:, None], items)
