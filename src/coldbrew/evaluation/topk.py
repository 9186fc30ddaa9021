"""Top K under one total order: higher score first, and among equal scores the lower item id.

``torch.topk`` breaks ties arbitrarily (the choice depends on the algorithm, the device and the
width of the row), so two rankings of the same scores can disagree on which of several equal
items enter the top K, and in what order. Equal scores are common in practice: items with the
same content (two cold films with the same genres) get the same embedding, and a masked item
(``1e-15`` in the original protocol) ties with every other masked item. With one total order
the top K of a row is a function of its scores alone, so

* a ranking cut into column blocks, or split into warm and cold parts and merged, equals the
  ranking of the whole row (the top K of a union is inside the union of the parts' top Ks);
* the result matches a plain ``sorted(items, key=-score)`` (a stable sort keeps equal scores
  in id order), which the tests use as reference.

Cost: ``topk(K + 1)`` instead of ``topk(K)`` to see whether the K-th score is tied with an
item left out; only those rows (few, unless many items share a score) are re-selected exactly.
Finding them reads one flag per row back to the host (a sync on CUDA, once per score block).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch


@contextmanager
def one_thread(device: torch.device):
    """Run a stretch of small ops on one CPU thread.

    Ops on ``(B, K)`` tensors (tie checks, merges, lookups, metric sums) are too small to gain
    from threads, and on a busy machine threads wait for each other at every op: a full
    evaluation's bookkeeping took 5.7 s instead of 0.4 s with 2 threads at load 3. The large
    products and ``torch.topk`` keep every thread. Not on other devices.
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
    """The ``min(k, width)`` best ``(values, columns)`` of each row of ``scores``, in rank order.

    ``scores`` is ``(B, width)`` without NaN; a column's id order is its position. Ranks follow
    (value descending, column ascending).
    """
    width = scores.shape[1]
    k = min(k, width)
    if k == 0:
        empty = torch.empty(scores.shape[0], 0, dtype=torch.int64, device=scores.device)
        return scores[:, :0], empty
    probe = min(k + 1, width)
    values, columns = torch.topk(scores, probe, dim=1)  # (B, probe), ties in arbitrary order
    with one_thread(scores.device):
        return _exact_ties(scores, values, columns, k)


def _exact_ties(scores: torch.Tensor, values: torch.Tensor, columns: torch.Tensor, k: int):
    """``torch.topk``'s ``(B, probe)`` answer -> the exact top k under the tie rule."""
    probe = values.shape[1]
    # One pass over neighbours finds both kinds of ties: inside the top k (their order is
    # arbitrary) and at the cut-off, where the (k+1)-th best equals the k-th (which of the
    # equal items made the cut was arbitrary). Rows with neither are exact already.
    equal_neighbours = values[:, 1:] == values[:, :-1]  # (B, probe - 1)
    tied_rows = equal_neighbours.any(1).nonzero().squeeze(1)
    values, columns = values[:, :k], columns[:, :k]
    if tied_rows.numel() == 0:
        return values, columns
    values, columns = values.clone(), columns.clone()
    at_cut = equal_neighbours[tied_rows, k - 1] if probe > k else None
    rows = tied_rows if at_cut is None else tied_rows[~at_cut]  # ties inside the top k only
    values[rows], columns[rows] = rank_order(values[rows], columns[rows])
    if at_cut is not None:
        rows = tied_rows[at_cut]
        values[rows], columns[rows] = _reselect(scores[rows], values[rows, -1:], k)
    return values, columns


def _reselect(scores: torch.Tensor, threshold: torch.Tensor, k: int):
    """Rows whose k-th score ``threshold`` (R, 1) is tied: every item above it, then the
    lowest-id items equal to it until k are taken. Returns ``(R, k)`` values and columns, in
    rank order."""
    above = scores > threshold  # (R, width)
    equal = scores == threshold
    room = k - above.sum(1, keepdim=True)  # (R, 1) places left for the tied items
    keep = above | (equal & (equal.cumsum(1) <= room))  # exactly k per row
    columns = keep.nonzero()[:, 1].view(-1, k)  # (R, k), ascending within each row
    return rank_order(scores.gather(1, columns), columns)


def rank_order(values: torch.Tensor, ids: torch.Tensor, *extras: torch.Tensor) -> tuple:
    """Sort each row of ``(values, ids, *extras)`` by value descending, then id ascending.

    ``extras`` are tensors aligned with ``ids`` (one entry per listed item) that follow them.
    """
    ids, order = ids.sort(dim=1)
    values = values.gather(1, order)
    extras = [extra.gather(1, order) for extra in extras]
    values, order = values.sort(dim=1, descending=True, stable=True)
    return (values, ids.gather(1, order), *(extra.gather(1, order) for extra in extras))


def _order_ties(values: torch.Tensor, *aligned: torch.Tensor) -> tuple:
    """Rows already sorted by value descending -> equal values in id order too.

    ``aligned`` is ``(ids, *extras)``. Only the rows holding two equal neighbours are re-sorted
    (one flag per row read back).
    """
    tied_rows = (values[:, 1:] == values[:, :-1]).any(1).nonzero().squeeze(1)
    if tied_rows.numel() == 0:
        return (values, *aligned)
    tensors = [tensor.clone() for tensor in (values, *aligned)]
    ordered = rank_order(*(tensor[tied_rows] for tensor in tensors))
    for tensor, rows in zip(tensors, ordered, strict=True):
        tensor[tied_rows] = rows
    return tuple(tensors)


def merge_top_k(parts: list[tuple[torch.Tensor, ...]], k: int) -> tuple[torch.Tensor, ...]:
    """The best ``k`` of the union of several ``(values, ids, *extras)`` top lists.

    The parts hold disjoint ids; ``extras`` (same shape as ``ids``) travel with their items.
    Exact when every part is its own items' top list under the same order (``top_k``).
    """
    parts = [part for part in parts if part[1].shape[1]] or parts[:1]
    if len(parts) == 1:
        return tuple(tensor[:, :k] for tensor in parts[0])
    fields = [torch.cat(tensors, dim=1) for tensors in zip(*parts, strict=True)]  # each (B, W)
    values, order = fields[0].sort(dim=1, descending=True, stable=True)
    merged = _order_ties(values, *(field.gather(1, order) for field in fields[1:]))
    return tuple(tensor[:, :k] for tensor in merged)  # ties across parts resolved to the end
