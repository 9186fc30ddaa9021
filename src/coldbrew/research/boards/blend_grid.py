"""Every grid point's val cold Recall@20 from each run's standardised scores, computed once.

A blend scores ``Σ_k w_k z_k(u, i)``, ``z_k`` run ``k``'s per-user z-score (``coldbrew.models
.blend``). Per split and cold-candidate convention, each run's ``z`` of the val cold users over
the cold candidates is computed once, a chunk of users at a time (float64); a grid point then
costs a weighted sum and a top 20 over few candidates: those some run puts in about a user's
best ``width`` (``keep_best``), and of them only those scoring at least the previous point's top
20 (``top_hits_above``). A candidate left out scores below each run's threshold, so its blended
score is below their weighted sum; a user whose 20th score is not above that bound is ranked
over every candidate. Every step is exact: only the work depends on how well the cuts guess.

Ranking follows the evaluator's rules (``coldbrew.evaluation``): training items are never
ranked, equal scores rank by the items' rotated tie keys, recall divides by every val cold
positive. One difference: the evaluator ranks a float32 product of the blend's matrices, this a
float64 sum, so two candidates within float32 rounding of each other at the 20th place can
swap (BENCHMARKS.md says how often on Book-Crossing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.evaluation.plan import canonical, cold_items_of
from coldbrew.evaluation.topk import tie_keys, tie_shifts, top_k
from coldbrew.models.blend import standardised

TOP = 20  # recall@20
WIDTH = 256  # each run's best candidates kept per user for every grid point
CHUNK_ELEMENTS = 1 << 22  # users × candidates per chunk: 32 MiB of float64 per run
SLACK = 1e-12  # rounding allowance of a weighted sum, relative to its terms
MINUS_INFINITY = float("-inf")


@dataclass
class Members:
    """The runs of a blend, standardised once: ``z_k(u, i) = scaled_k[u] · items_k[i] +
    shift_k[u]`` (float64)."""

    scaled: list[torch.Tensor]  # (num_users, d_k) each
    shifts: torch.Tensor  # (runs, num_users)
    items: list[torch.Tensor]  # (num_items, d_k) each

    @classmethod
    def of(cls, components: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Members:
        pairs = [(users.detach().double(), items.detach().double()) for users, items in components]
        scaled, shifts = zip(*(standardised(users, items) for users, items in pairs), strict=True)
        return cls(list(scaled), torch.stack(shifts), [items for _, items in pairs])

    def z_scores(self, users: torch.Tensor, items: list[torch.Tensor]) -> torch.Tensor:
        """``(runs, len(users), C)`` z-scores of ``users`` over candidate ``items`` (each run's
        ``(C, d_k)`` vectors, gathered once by the caller)."""
        out = torch.empty(len(items), len(users), items[0].shape[0], dtype=torch.float64)
        for run, (scaled, vectors) in enumerate(zip(self.scaled, items, strict=True)):
            torch.mm(scaled[users], vectors.T, out=out[run])
            out[run] += self.shifts[run, users, None]
        return out


def weighted_sum(z: torch.Tensor, weights: Sequence[float]) -> torch.Tensor:
    """``Σ_k weights[k] z[k]``, one rounding per product and per addition in run order, so an
    entry's value does not depend on the shape it is computed in."""
    total = z[0] * weights[0]
    for run in range(1, len(weights)):
        total += z[run] * weights[run]
    return total


def top_hits(values, ids, positive, keys, shift):
    """``(hits, last, columns)``: hits in each row's top ``TOP`` of ``values`` (B, W), its
    ``TOP``-th value (``-inf`` when fewer) and the top's columns: value descending, then the
    rotated tie key of ``ids`` (B, W) (``topk.top_k``, as the evaluator ranks); ``positive``
    (B, W) says which are held-out positives. Masked (``-inf``) items are never hits."""
    best, columns = top_k(values, TOP, keys[ids], shift, len(keys))
    hits = (positive.gather(1, columns) & (best != MINUS_INFINITY)).sum(1)
    last = best[:, -1] if best.shape[1] == TOP else torch.full((len(best),), MINUS_INFINITY)
    return hits, last, columns


def pack(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's True columns of ``mask`` (B, W), first: ``(columns, padding)`` (B, most)."""
    counts = mask.sum(1)
    row, column = mask.nonzero(as_tuple=True)  # row by row
    place = torch.arange(len(row)) - (counts.cumsum(0) - counts)[row]  # the column's slot
    most = int(counts.max()) if len(mask) else 0
    columns = torch.zeros(len(mask), most, dtype=torch.int64)
    padding = torch.ones(len(mask), most, dtype=torch.bool)
    columns[row, place], padding[row, place] = column, False
    return columns, padding


def top_hits_above(values, previous, ids, positive, keys, shift):
    """``top_hits`` of ``values`` (B, W), ranking only the columns scoring at least the lowest
    of ``previous`` (B, TOP): any TOP distinct columns, so the TOP best score at least that."""
    floor = values.gather(1, previous).amin(1)
    columns, padding = pack(values >= floor[:, None])
    hits, last, top = top_hits(
        values.gather(1, columns).masked_fill_(padding, MINUS_INFINITY),
        ids.gather(1, columns),
        positive.gather(1, columns),
        keys,
        shift,
    )
    return hits, last, columns.gather(1, top)


def dense(matrix: sp.csr_matrix, users: np.ndarray, column_of: np.ndarray, width: int):
    """``(len(users), width)`` bool: the users' entries of ``matrix`` on the candidates'
    columns (``column_of[item]``, -1 off the candidates)."""
    rows = canonical(matrix)[users]
    columns = column_of[rows.indices]
    row_of = np.repeat(np.arange(len(users)), np.diff(rows.indptr))
    out = torch.zeros(len(users), width, dtype=torch.bool)
    keep = columns >= 0
    out[torch.from_numpy(row_of[keep]), torch.from_numpy(columns[keep])] = True
    return out


def keep_best(z: torch.Tensor, seen: torch.Tensor, width: int):
    """The candidates some run puts about in a user's best ``width`` unseen ones: ``(columns,
    dropped)`` (B, most kept), padding and seen columns dropped; ``floors`` (runs, B), each
    run's threshold: every unseen candidate left out has ``z_k`` below ``floors[k]`` (-inf
    where a run keeps every unseen one). A run's threshold is the ``width / stride``-th best of
    every ``stride``-th column: a selection over few columns, not all."""
    runs, rows, size = z.shape
    stride = max(1, size // (2 * width))  # about 2 × width columns sampled
    sample = z[:, :, ::stride].contiguous()
    if seen.any():
        sample.masked_fill_(seen[:, ::stride], MINUS_INFINITY)
    rank = min(sample.shape[2], max(1, width // stride))
    floors = torch.topk(sample, rank, dim=2, sorted=False).values.amin(2)  # (runs, B)
    keep = z[0] >= floors[0, :, None]  # (B, C)
    for run in range(1, runs):
        keep |= z[run] >= floors[run, :, None]
    keep &= ~seen
    columns, dropped = pack(keep)
    return columns, dropped, floors


def chunk_hits(z, positive, seen, cold, grid, keys, shift, width: int) -> torch.Tensor:
    """``(points, B)`` hits of each grid point for a chunk's users: z-scores ``z`` (runs, B, C),
    ``positive`` and ``seen`` (B, C) bool, ``cold`` (C,) the candidates' ids.

    Each user ranks the candidates some run puts in its best ``width`` or so (``keep_best``);
    a candidate left out scores below ``Σ_k w_k floor_k`` (every ``w_k >= 0``; floating point
    adds at most ``slack``), so where the 20th score is above that bound the top 20 is exact,
    else the user's row is ranked whole."""
    runs, rows, size = z.shape
    out = torch.empty(len(grid), rows, dtype=torch.int64)
    everything = cold.expand(rows, -1)
    if width >= size:  # nothing to leave out
        for point, weights in enumerate(grid):
            values = weighted_sum(z, weights).masked_fill_(seen, MINUS_INFINITY)
            out[point] = top_hits(values, everything, positive, keys, shift)[0]
        return out
    columns, dropped, floors = keep_best(z, seen, width)
    kept = z.gather(2, columns.expand(runs, -1, -1))
    ids, kept_positive = cold[columns], positive.gather(1, columns)
    complete = (floors == MINUS_INFINITY).any(0)  # no unseen candidate left out
    floors = floors.masked_fill(floors == MINUS_INFINITY, 0.0)
    slack = SLACK * (1 + floors.abs().sum(0))  # above the rounding of a sum of w_k z_k
    previous = None  # the last point's top columns: the grid's neighbours share most
    for point, weights in enumerate(grid):
        values = weighted_sum(kept, weights).masked_fill_(dropped, MINUS_INFINITY)
        if previous is None or values.shape[1] < TOP:
            hits, last, previous = top_hits(values, ids, kept_positive, keys, shift)
        else:
            hits, last, previous = top_hits_above(values, previous, ids, kept_positive, keys, shift)
        bound = weighted_sum(floors, weights) + slack
        bound[complete] = MINUS_INFINITY
        loose = (~(last > bound)).nonzero().squeeze(1)  # a left-out candidate might enter
        if loose.numel():
            values = weighted_sum(z[:, loose], weights).masked_fill_(seen[loose], MINUS_INFINITY)
            exact, _, _ = top_hits(values, everything[loose], positive[loose], keys, shift[loose])
            hits[loose] = exact
        out[point] = hits
    return out


@torch.no_grad()
def grid_recalls(
    dataset,
    members: Members,
    grid: Sequence[Sequence[float]],
    cold_candidates: str,
    *,
    width: int = WIDTH,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> list[float]:
    """Each grid point's val cold recall@20 under ``cold_candidates`` (the split must have a
    cold group), as ``evaluate_embeddings`` reads the blend at that point."""
    cold = cold_items_of(dataset, "val", cold_candidates)
    matrix = canonical(dataset.groups("val")["cold"])
    counts = np.diff(matrix.indptr)
    users = np.flatnonzero(counts > 0)
    out = torch.zeros(len(grid), len(users), dtype=torch.int64)
    if len(cold) and len(users):
        column_of = np.full(dataset.num_items, -1, dtype=np.int64)
        column_of[cold] = np.arange(len(cold))
        keys = torch.from_numpy(tie_keys(dataset.num_items))
        shifts = torch.from_numpy(tie_shifts(dataset.num_users, dataset.num_items)[users])
        items = [vectors[cold] for vectors in members.items]
        cold_ids = torch.from_numpy(cold)
        rows = max(1, chunk_elements // len(cold))
        for first in range(0, len(users), rows):
            chunk = users[first : first + rows]
            z = members.z_scores(torch.from_numpy(chunk), items)
            positive = dense(matrix, chunk, column_of, len(cold))
            seen = dense(dataset.train, chunk, column_of, len(cold))
            shift = shifts[first : first + rows]
            out[:, first : first + rows] = chunk_hits(
                z, positive, seen, cold_ids, grid, keys, shift, max(width, TOP)
            )
    inverse = torch.from_numpy(1.0 / np.maximum(counts[users], 1))
    total = (out.double() * inverse).sum(1)
    return (total / max(len(users), 1)).tolist()


@torch.no_grad()
def has_cold_signal(
    dataset,
    members: Members,
    weights: Sequence[float],
    cold_candidates: str,
    chunk_elements: int = CHUNK_ELEMENTS,
) -> bool:
    """Whether some val user's cold candidates score unequally under ``weights`` (the users of
    every val group, as the evaluator's ``cold_signal``)."""
    cold = cold_items_of(dataset, "val", cold_candidates)
    has_positive = np.zeros(dataset.num_users, dtype=bool)
    for matrix in dataset.groups("val").values():
        has_positive |= np.diff(canonical(matrix).indptr) > 0
    users = np.flatnonzero(has_positive)
    if not len(cold):
        return False
    items = [vectors[cold] for vectors in members.items]
    rows = max(1, chunk_elements // len(cold))
    for first in range(0, len(users), rows):
        z = members.z_scores(torch.from_numpy(users[first : first + rows]), items)
        low, high = torch.aminmax(weighted_sum(z, weights), dim=1)
        if bool((high > low).any()):
            return True
    return False
