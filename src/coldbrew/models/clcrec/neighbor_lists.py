"""Neighbor and common-item lists from a users × items training matrix, exact and vectorized.

The rules (see ``coldbrew.models.clcrec.neighbors``): neighbors ranked by items in common, then by the
smaller user id; common items ranked by how many used neighbors have them, then by the smaller
item id; every list padded with 0 and given its length.

How: the co-occurrence ``X Xᵀ`` (users × users) is built chunk by chunk of users. The
``dense_items`` most popular items, which carry most of the ``Σ degree²`` work, go through an
exact int8 matrix product (int32 sums); the other items through a scipy sparse product added on
top. Each row's top ``keep`` is one ``torch.topk`` on the exact integer key
``count · num_users + (num_users − 1 − user)``, which orders by count, then by smaller id. Common
items: a sparse neighbor-selection matrix times ``X``, own items zeroed, the same top-k. Memory
is two ``(chunk, width)`` int32 buffers; no per-user Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from tqdm.auto import tqdm

from coldbrew.system.terminal import bars_shown

KEEP_NEIGHBORS = 50
USE_NEIGHBORS = 10
KEEP_COMMON = 20
DENSE_ITEMS = 256  # most popular items counted by a dense int8 product
CHUNK_ELEMENTS = 2**25  # elements of one (chunk, width) int32 buffer: 128 MiB


@dataclass(frozen=True)
class PaddedLists:
    """Row ``r`` holds ``lengths[r]`` valid ids in ``ids[r, :lengths[r]]``, then zeros."""

    ids: np.ndarray  # (rows, width) int64
    lengths: np.ndarray  # (rows,) int64

    def to_lists(self) -> list[list[int]]:
        return [row[:length].tolist() for row, length in zip(self.ids, self.lengths, strict=True)]


def binarize(matrix: sp.spmatrix) -> sp.csr_matrix:
    """A float32 CSR copy with every stored non-zero set to 1."""
    binary = sp.csr_matrix(matrix, dtype=np.float32, copy=True)
    binary.sum_duplicates()
    binary.eliminate_zeros()
    binary.data[:] = 1.0
    return binary


def key_dtype(max_count: int, width: int) -> torch.dtype:
    """int32 when every ``count · width + (width − 1)`` fits, else int64."""
    return torch.int32 if (max_count + 1) * width < 2**31 else torch.int64


def chunk_size(width: int, requested: int | None) -> int:
    """Rows per chunk: ``requested``, else as many as keep one buffer near 2²⁵ elements."""
    return requested if requested else max(1, CHUNK_ELEMENTS // width)


def scatter_counts(counts: torch.Tensor, product: sp.csr_matrix) -> None:
    """``counts (c, width) += product`` for a scipy CSR product of the same shape."""
    rows = np.repeat(np.arange(product.shape[0]), np.diff(product.indptr))
    flat = torch.from_numpy(rows * counts.shape[1] + product.indices)
    counts.view(-1).index_add_(0, flat, torch.from_numpy(product.data).to(counts.dtype))


def ranked_top(counts: torch.Tensor, keep: int, key: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``keep`` columns with the largest positive count (ties: smaller column).

    ``counts`` is ``(rows, width)`` of non-negative integers; ``key`` a buffer of its shape
    (int32 or int64, see ``key_dtype``). Returns ``(ids, lengths)``, ids padded with 0. The key
    ``count · width + (width − 1 − column)`` is unique per row, so the selection and its order
    are exact; zero counts give keys below ``width`` and are dropped.
    """
    width = counts.shape[1]
    descending = torch.arange(width - 1, -1, -1, dtype=key.dtype)  # (width,)
    torch.add(descending, counts, alpha=width, out=key)  # (rows, width)
    values, columns = torch.topk(key, min(keep, width), dim=1)  # sorted, largest first
    valid = values >= width
    ids = np.zeros((counts.shape[0], keep), dtype=np.int64)
    ids[:, : columns.shape[1]] = torch.where(valid, columns, 0).numpy()
    return ids, valid.sum(1).numpy().astype(np.int64)


def int8_products(left: torch.Tensor, right: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Exact ``left @ right`` of int8 0/1 matrices into int32 ``out`` (float32 fallback, exact < 2²⁴)."""
    if hasattr(torch, "_int_mm"):
        return torch._int_mm(left, right, out=out)
    return out.copy_(left.float() @ right.float())  # pragma: no cover - torch without _int_mm


def top_neighbors(
    train: sp.spmatrix,
    keep: int = KEEP_NEIGHBORS,
    *,
    chunk_users: int | None = None,
    dense_items: int = DENSE_ITEMS,
    progress: bool = True,
) -> PaddedLists:
    """Each user's ``keep`` neighbors by items in common (most first, ties by smaller id).

    Memory: two ``(chunk_users, num_users)`` int32 buffers (about 2 × 128 MiB by default).
    """
    binary = binarize(train)
    num_users = binary.shape[0]
    item_degree = np.diff(binary.tocsc().indptr)
    by_popularity = np.argsort(-item_degree, kind="stable")
    popular = by_popularity[: min(dense_items, int((item_degree > 0).sum()))]
    rest = np.sort(by_popularity[len(popular) :])
    dense = torch.from_numpy(binary[:, popular].astype(np.int8).toarray())  # (U, P) 0/1
    dense_transposed = dense.T.contiguous()  # (P, U)
    sparse = binary[:, rest].tocsr()  # (U, I − P)
    sparse_transposed = sparse.T.tocsr()
    chunk = chunk_size(num_users, chunk_users)
    counts_buffer = torch.empty(chunk, num_users, dtype=torch.int32)
    key_buffer = torch.empty(
        chunk, num_users, dtype=key_dtype(int(np.diff(binary.indptr).max()), num_users)
    )
    ids = np.zeros((num_users, keep), dtype=np.int64)
    lengths = np.zeros(num_users, dtype=np.int64)
    bar = users_bar(num_users, "neighbors", progress)
    for start in range(0, num_users, chunk):
        stop = min(num_users, start + chunk)
        counts = int8_products(
            dense[start:stop], dense_transposed, counts_buffer[: stop - start]
        )  # (c, U)
        scatter_counts(counts, sparse[start:stop] @ sparse_transposed)  # the less popular items
        local = torch.arange(stop - start)
        counts[local, local + start] = 0  # a user is not its own neighbor
        ids[start:stop], lengths[start:stop] = ranked_top(counts, keep, key_buffer[: stop - start])
        bar.update(stop - start)
    bar.close()
    return PaddedLists(ids, lengths)


def users_bar(num_users: int, desc: str, progress: bool) -> tqdm:
    """The progress bar of a pass over every user, in chunks (closed by the caller)."""
    disable = not bars_shown(progress)
    return tqdm(
        total=num_users, unit="user", unit_scale=True, desc=desc, disable=disable, leave=False
    )


def selection_matrix(lists: PaddedLists, use: int, num_columns: int) -> sp.csr_matrix:
    """CSR ``(rows, num_columns)`` with a 1 at each of a row's first ``use`` listed ids."""
    used = np.minimum(lists.lengths, use)
    rows = np.repeat(np.arange(len(used)), used)
    columns = lists.ids[:, :use][
        np.arange(min(use, lists.ids.shape[1])) < used[:, None]
    ]  # row-major
    data = np.ones(len(rows), dtype=np.float32)
    return sp.csr_matrix((data, (rows, columns)), shape=(len(used), num_columns))


def common_items(
    train: sp.spmatrix,
    neighbors: PaddedLists,
    use: int = USE_NEIGHBORS,
    keep: int = KEEP_COMMON,
    *,
    chunk_users: int | None = None,
    progress: bool = True,
) -> PaddedLists:
    """Each user's ``keep`` items most shared by its first ``use`` neighbors, minus its own."""
    binary = binarize(train)
    num_users, num_items = binary.shape
    selection = selection_matrix(neighbors, use, num_users)  # (U, U)
    chunk = chunk_size(num_items, chunk_users)
    counts_buffer = torch.empty(chunk, num_items, dtype=torch.int32)
    key_buffer = torch.empty(chunk, num_items, dtype=key_dtype(use, num_items))
    ids = np.zeros((num_users, keep), dtype=np.int64)
    lengths = np.zeros(num_users, dtype=np.int64)
    bar = users_bar(num_users, "common items", progress)
    for start in range(0, num_users, chunk):
        stop = min(num_users, start + chunk)
        counts = counts_buffer[: stop - start].zero_()  # (c, I) used neighbors having each item
        scatter_counts(counts, selection[start:stop] @ binary)
        own = binary[start:stop]
        own_rows = torch.from_numpy(np.repeat(np.arange(stop - start), np.diff(own.indptr)))
        counts[own_rows, torch.from_numpy(own.indices.astype(np.int64))] = 0
        ids[start:stop], lengths[start:stop] = ranked_top(counts, keep, key_buffer[: stop - start])
        bar.update(stop - start)
    bar.close()
    return PaddedLists(ids, lengths)
