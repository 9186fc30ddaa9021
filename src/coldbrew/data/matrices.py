"""Interaction pairs as the binary CSR matrices every ``Dataset`` holds."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from coldbrew.errors import DataError


def interactions_to_csr(
    users: np.ndarray, items: np.ndarray, shape: tuple[int, int]
) -> sp.csr_matrix:
    """Pairs -> binary CSR (duplicates collapse to one), indices sorted per row."""
    users = np.asarray(users, dtype=np.int64)
    items = np.asarray(items, dtype=np.int64)
    if len(users):
        if users.min() < 0 or users.max() >= shape[0]:
            raise DataError(f"user id out of range 0..{shape[0] - 1}")
        if items.min() < 0 or items.max() >= shape[1]:
            raise DataError(f"item id out of range 0..{shape[1] - 1}")
    data = np.ones(len(users), dtype=np.float32)
    matrix = sp.csr_matrix((data, (users, items)), shape=shape)
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    matrix.sort_indices()
    return matrix
