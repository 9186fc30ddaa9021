"""Top K under one total order: higher score first, and among equal scores the lower tie key.

``torch.topk`` breaks ties arbitrarily (the choice depends on the algorithm, the device and the
width of the row), so two rankings of the same scores can disagree on which of several equal
items enter the top K. Equal scores are common: items with the same content get the same
embedding, masked items share one score, and a model without content (BPR-MF) scores every
cold item 0. With one total order the top K of a row is a function of its scores alone, so a
ranking cut into column blocks, or split into warm and cold parts and merged, equals the
ranking of the whole row, and matches a plain ``sorted(items, key=lambda i: (-score[i],
(key[i] + shift[user]) % num_items))``: the tests' reference.

The tie key (``tie_keys``) is a fixed pseudo-random permutation of the ids, rotated per user
(``tie_shifts``), the same for every run on data of that size: ranking ties by id would leak
the id order into the metrics (in MovieLens low ids are popular films, so a model that scores
every cold item alike scored far above random), and one order for every user would list the
same tied items for all (one random draw, far from chance on popular-skewed data). Fixed keys
keep runs comparable and every list deterministic.

Cost: ``topk(K + 1)`` instead of ``topk(K)``; a row whose K + 1 best hold two equal scores (few,
unless many items share a score) is re-ranked by a stable sort of its entries at or above its
K-th value in key order (of the whole row only when those are most of it).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

TIE_SEED = 0x7AB1E5  # fixed, not the run's seed: every run on the same data breaks ties alike


def tie_keys(count: int) -> np.ndarray:
    """``(count,)`` int64: ``key[id]``, each id's place among equal scores (a permutation of
    ``range(count)`` drawn from ``TIE_SEED`` and ``count``)."""
    return np.random.default_rng([TIE_SEED, count]).permutation(count).astype(np.int64)


def tie_shifts(num_users: int, num_items: int) -> np.ndarray:
    """``(num_users,)`` int64: each user's rotation of the item keys, so that user ``u`` ranks
    equal scores by ``(key[item] + shift[u]) % num_items``. Without it every user would list
    the same tied items (one random draw); rotated, each user's tied list starts elsewhere in
    the key order, so a model that scores items alike ranks them as chance does on average."""
    rng = np.random.default_rng([TIE_SEED, num_users, num_items])
    return rng.integers(0, max(num_items, 1), num_users).astype(np.int64)


def row_keys(keys: torch.Tensor, shift: torch.Tensor | None, modulus: int) -> torch.Tensor:
    """``keys`` (..., W) as seen by each row: ``(keys + shift[:, None]) % modulus``."""
    return keys if shift is None else (keys + shift[:, None]) % modulus


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


def top_k(
    scores: torch.Tensor,
    k: int,
    keys: torch.Tensor,
    shift: torch.Tensor | None = None,
    modulus: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``min(k, width)`` best ``(values, columns)`` of each row of ``scores`` (B, width),
    without NaN, in rank order: value descending, then tie key ascending: ``keys`` (width,),
    the columns' distinct keys in ``[0, modulus)`` (or (B, width): each row's own, for rows
    whose columns are different items), seen by row ``r`` as ``(keys + shift[r]) % modulus``
    when ``shift`` (B,) is given (``tie_shifts``)."""
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
        rows_shift = None if shift is None else shift[tied_rows]
        rows_keys = keys[tied_rows] if keys.dim() == 2 else keys
        exact = ordered_top_k(
            scores[tied_rows], k, values[tied_rows, -1], rows_keys, rows_shift, modulus
        )
        values, columns = values.clone(), columns.clone()
        values[tied_rows], columns[tied_rows] = exact
    return values, columns


def ordered_top_k(
    scores: torch.Tensor,
    k: int,
    cut: torch.Tensor,
    keys: torch.Tensor,
    shift: torch.Tensor | None,
    modulus: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``top_k`` of rows whose best scores hold ties, ``cut`` (B,) each row's k-th best value.

    Only a row's entries at or above its cut can enter its top k. Rows where those are few
    (a quarter of the row at most) rank only them, fetched by ``topk``; the other rows (a model
    that scores everything alike) rank the whole row. Either way the candidates are sorted by
    rotated key, then stably by value."""
    width = scores.shape[1]
    counts = (scores >= cut[:, None]).sum(1)
    narrow = (counts * 4 <= width) & (counts >= k)  # fewer than k: a NaN in the row
    values = scores.new_empty(len(scores), k)
    columns = torch.empty(len(scores), k, dtype=torch.int64, device=scores.device)
    for few, rows in ((True, narrow.nonzero().squeeze(1)), (False, (~narrow).nonzero().squeeze(1))):
        if not rows.numel():
            continue
        part = scores[rows]
        if few:
            candidates = torch.topk(part, int(counts[rows].max()), dim=1).indices
        else:
            candidates = torch.arange(width, device=scores.device).expand(len(rows), -1)
        rows_shift = None if shift is None else shift[rows]
        seen = keys[rows].gather(1, candidates) if keys.dim() == 2 else keys[candidates]
        by_key = row_keys(seen, rows_shift, modulus).argsort(dim=1)
        candidates = candidates.gather(1, by_key)
        ordered, position = part.gather(1, candidates).sort(dim=1, descending=True, stable=True)
        values[rows], columns[rows] = ordered[:, :k], candidates.gather(1, position[:, :k])
    return values, columns


def rank_order(
    values: torch.Tensor,
    ids: torch.Tensor,
    *extras: torch.Tensor,
    keys: torch.Tensor,
    shift: torch.Tensor | None = None,
) -> tuple:
    """Sort each row of ``(values, ids, *extras)`` by value descending, then by the ids' tie
    key ``keys[ids]`` ascending (``keys``: ``(num_ids,)``, distinct; rotated by ``shift[row]``
    modulo ``num_ids`` when given).

    ``extras`` are tensors aligned with ``ids`` (one entry per listed item) that follow them.
    """
    _, order = row_keys(keys[ids], shift, len(keys)).sort(dim=1)
    values, ids = values.gather(1, order), ids.gather(1, order)
    extras = [extra.gather(1, order) for extra in extras]
    values, order = values.sort(dim=1, descending=True, stable=True)
    return (values, ids.gather(1, order), *(extra.gather(1, order) for extra in extras))


def merge_top_k(
    parts: list[tuple[torch.Tensor, ...]],
    k: int,
    keys: torch.Tensor,
    shift: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """The best ``k`` of the union of several ``(values, ids, *extras)`` top lists, equal
    values in the order of their ids' tie keys ``keys[ids]`` (each row's rotated by
    ``shift[row]`` modulo ``len(keys)`` when given, as ``top_k``).

    The parts hold disjoint ids; ``extras`` (same shape as ``ids``) travel with their items.
    Exact when every part is its own items' top list under the same order (``top_k`` with each
    column's key). One sort by value; only rows holding two equal values are sorted by key too.
    """
    parts = [part for part in parts if part[1].shape[1]] or parts[:1]
    if len(parts) == 1:
        return tuple(tensor[:, :k] for tensor in parts[0])
    values, *aligned = (torch.cat(fields, dim=1) for fields in zip(*parts, strict=True))
    values, order = values.sort(dim=1, descending=True, stable=True)
    merged = [values, *(tensor.gather(1, order) for tensor in aligned)]
    tied_rows = (values[:, 1:] == values[:, :-1]).any(1).nonzero().squeeze(1)
    if tied_rows.numel():
        for tensor, rows in zip(
            merged,
            rank_order(
                *(t[tied_rows] for t in merged),
                keys=keys,
                shift=None if shift is None else shift[tied_rows],
            ),
            strict=True,
        ):
            tensor[tied_rows] = rows
    return tuple(tensor[:, :k] for tensor in merged)
