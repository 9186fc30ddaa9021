"""A collaborative teacher for tests of the models that learn from one (the cold-start zoo):
the warm interaction matrix's truncated SVD, deterministic and seconds-free, in place of
``coldbrew.training.backbone``.

Use ``with_svd_teacher`` (a pytest fixture factory) or patch ``coldbrew.registry.COLLABORATIVE``
to ``"teacher_support:svd_teacher"`` yourself: ``ModelSpec.build_teacher`` reads it per call.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from coldbrew.models.base import Teacher

PROVIDER = "teacher_support:svd_teacher"


def svd_teacher(dataset, options, seed: int, *, progress: bool = False) -> Teacher:
    """``U·√S`` and ``V·√S`` of the training matrix's top ``options.backbone_dim`` singular
    triples (zero columns past its rank); cold item rows are zero, as the backbone's are."""
    with unset_fake_temporarily():  # coldbrew memory traces the step on fake tensors
        dense = np.asarray(dataset.train.todense(), dtype=np.float64)
        left, singular, right = np.linalg.svd(dense, full_matrices=False)
        rank = min(options.backbone_dim, len(singular))
        scale = np.sqrt(singular[:rank])
        users = np.zeros((dataset.num_users, options.backbone_dim))
        items = np.zeros((dataset.num_items, options.backbone_dim))
        users[:, :rank] = left[:, :rank] * scale
        items[:, :rank] = right[:rank].T * scale
        items[dataset.cold_items] = 0.0
        return Teacher(torch.from_numpy(users).float(), torch.from_numpy(items).float())


@pytest.fixture
def with_svd_teacher(monkeypatch):
    """Models with ``teacher=True`` learn from ``svd_teacher`` during the test."""
    monkeypatch.setattr("coldbrew.registry.COLLABORATIVE", PROVIDER)
