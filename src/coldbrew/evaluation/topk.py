"""Top K under one total order: higher score first, and among equal scores the lower item id.

``torch.topk`` breaks ties arbitrarily (the choice depends on the algorithm, the device and the
width of the row), so two rankings of the same scores can disagree on which of several equal
items enter the top K. Equal scores are common: items with the same content get the same
embedding, and masked items share one score. With one total order the top K of a row is a
function of its scores alone, so a ranking cut into column blocks, or split into warm and cold
parts and merged, equals the ranking of the whole row, and matches a plain
``sorted(items, key=-score)`` (a stable sort keeps equal scores in id order): the tests'
reference.

Cost: ``topk(K + 1)`` instead of ``topk(K)``; a row whose K + 1 best hold two equal scores (few,
unless many items share a score) is re-ranked by a stable sort of the whole row.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


@contextmanager
def one_thread(device: torch.device):
    """Run a stretch of small ops on one CPU thread.

    Ops on ``(B, K)`` tensors (merges, lookups, metric sums) are too small to gain from threads,
    and on a busy machine threads wait for each other at every op: a full evaluation's
    bookkeeping took 5.7 s instead of 0.4 s with 2 threads at load 3. The large products and
    ``torch.topk`` keep every thread. Not on other devices.
    """
    threads = torch.get_num_threads()
    if device.type != "cpu" or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def top_k(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``min(k, width)`` best ``(values, columns)`` of each row of ``scores`` (B, width),
    without NaN, in rank order: value descending, then column ascending."""
    width = scores.shape[1]
    k = min(k, width)
    if k == 0:
        return scores[:, :0], torch.empty(
            scores.shape[0], 0, dtype=torch.int64, device=scores.device
        )
    values, columns = torch.topk(scores, min(k + 1, width), dim=1)  # ties in arbitrary order
    # two equal neighbours among the k + 1 best: their order, or which of them made the cut,
    # was arbitrary; every other row is exact already
    tied_rows = (values[:, 1:] == values[:, :-1]).any(1).nonzero().squeeze(1)
    values, columns = values[:, :k], columns[:, :k]
    if tied_rows.numel():
        exact_values, exact_columns = scores[tied_rows].sort(dim=1, descending=True, stable=True)
        values, columns = values.clone(), columns.clone()
        values[tied_rows], columns[tied_rows] = exact_values[:, :k], exact_columns[:, :k]
    return values, columns


def rank_order(values: torch.Tensor, ids: torch.Tensor, *extras: torch.Tensor) -> tuple:
    """Sort each row of ``(values, ids, *extras)`` by value descending, then id ascending.

    ``extras`` are tensors aligned with ``ids`` (one entry per listed item) that follow them.
    """
    ids, order = ids.sort(dim=1)
    values = values.gather(1, order)
    extras = [extra.gather(1, order) for extra in extras]
    values, order = values.sort(dim=1, descending=True, stable=True)
    return (values, ids.gather(1, order), *(extra.gather(1, order) for extra in extras))


def merge_top_k(parts: list[tuple[torch.Tensor, ...]], k: int) -> tuple[torch.Tensor, ...]:
    """The best ``k`` of the union of several ``(values, ids, *extras)`` top lists.

    The parts hold disjoint ids; ``extras`` (same shape as ``ids``) travel with their items.
    Exact when every part is its own items' top list under the same order (``top_k``). One
    sort by value; only rows holding two equal values are sorted by id too.
    """
    parts = [part for part in parts if part[1].shape[1]] or parts[:1]
    if len(parts) == 1:
        return tuple(tensor[:, :k] for tensor in parts[0])
    values, *aligned = (torch.cat(fields, dim=1) for fields in zip(*parts, strict=True))
    values, order = values.sort(dim=1, descending=True, stable=True)
    merged = [values, *(tensor.gather(1, order) for tensor in aligned)]
    tied_rows = (values[:, 1:] == values[:, :-1]).any(1).nonzero().squeeze(1)
    if tied_rows.numel():
        for tensor, rows in zip(merged, rank_order(*(t[tied_rows] for t in merged)), strict=True):
            tensor[tied_rows] = rows
    return tuple(tensor[:, :k] for tensor in merged)
