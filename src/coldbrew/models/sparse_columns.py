"""Sparse feature blocks: a one-hot or multi-hot block read as each item's non-zero columns, so
the content encoder's first layer costs an item's non-zero features, not the block's width.

A block is read sparse when its fullest row has at most an eighth of its width non-zero (and it
is at least ``MIN_SPARSE_WIDTH`` wide): a 2,000-author one-hot, not a 384-d text vector or 19
genres. Each item keeps ``M`` slots (``M``: the most non-zeros any item has over the sparse
blocks), a column id and its value, the unused slots value 0; the first layer is then a gather
of ``M`` weight columns per item and their weighted sum. The shapes are fixed, so a step has no
host sync and compiles as one graph; the gather's backward is an ``index_add``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import is_fake

MIN_SPARSE_WIDTH = 32
SPARSE_SHARE = 8  # a sparse block's fullest row has at most width / SPARSE_SHARE non-zeros


@dataclass
class SparseColumns:
    """``ids`` ``(items, M)`` column ids into the joined width and their ``values``: rows padded
    with value 0 (the id then any valid column)."""

    ids: torch.Tensor
    values: torch.Tensor


def is_sparse(block: torch.Tensor) -> bool:
    """Whether ``block`` ``(items, width)`` is worth reading by its non-zero columns. A fake
    tensor (``coldbrew memory``'s trace) has no values to count: read dense, an upper bound."""
    width = block.shape[1]
    if width < MIN_SPARSE_WIDTH or block.shape[0] == 0 or is_fake(block):
        return False
    fullest = int((block != 0).sum(dim=1).max())
    return fullest * SPARSE_SHARE <= width


def sparse_columns(block: torch.Tensor, offset: int) -> SparseColumns:
    """Each row's non-zero columns of ``block`` (numbered from ``offset``) and their values."""
    rows, columns = (block != 0).nonzero(as_tuple=True)
    counts = torch.bincount(rows, minlength=block.shape[0])
    slots = max(int(counts.max()) if len(counts) else 0, 1)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(len(rows)) - starts[rows]
    ids = torch.full((block.shape[0], slots), offset, dtype=torch.long)
    values = torch.zeros(block.shape[0], slots, dtype=block.dtype)
    ids[rows, slot] = columns + offset
    values[rows, slot] = block[rows, columns]
    return SparseColumns(ids, values)


def joined(parts: list[SparseColumns]) -> SparseColumns:
    """Several blocks' slots side by side."""
    return SparseColumns(
        torch.cat([part.ids for part in parts], dim=1),
        torch.cat([part.values for part in parts], dim=1),
    )


def sparse_product(
    ids: torch.Tensor, values: torch.Tensor, weight: torch.Tensor, *, fused: bool
) -> torch.Tensor:
    """``x @ weight.T`` for rows ``x`` given by their non-zero columns: ``ids``, ``values``
    ``(n, M)``, ``weight`` ``(out, width)`` -> ``(n, out)``.

    ``fused``: one ``embedding_bag`` (the CPU's eager step: 2x the gather's speed on 36k
    Book-Crossing items); else a gather of each slot's weight column and a weighted sum, ops
    whose backward (``index_add``) reads nothing back to the host (the GPU's, compiled steps).
    """
    table = weight.t().contiguous()  # (width, out): a row per column; its backward is one copy
    values = values.to(table.dtype)
    if fused:
        return F.embedding_bag(ids, table, per_sample_weights=values, mode="sum")
    out = table.index_select(0, ids[:, 0]) * values[:, :1]
    for slot in range(1, ids.shape[1]):
        out = out + table.index_select(0, ids[:, slot]) * values[:, slot : slot + 1]
    return out
