"""Chunked full ranking: score every candidate item for every evaluated user, keep the top K.

Per chunk of users, for one part of the catalogue (every item, or only warm, or only cold):

1. score the part's items (``coldbrew.evaluation.sources``); with embeddings, very wide parts
   are also cut into column blocks whose top K are merged into a running top K, so memory stays
   bounded by the chunk budget rather than by ``users × items``;
2. overwrite the user's training items with ``fill``: ``-inf`` in coldbrew's protocol (never
   ranked), ``1e-15`` in the original's (``coldbrew.evaluation.protocols``);
3. keep the top K under one total order, score then item id (``coldbrew.evaluation.topk``), so
   the list does not depend on chunking, blocking or the device;
4. look the top items up among the user's held-out positives (a sorted-key ``searchsorted``),
   and add the chunk's per-user metric sums to a device accumulator.

``full_ranking`` does this for one (positives, candidates) pair; ``single_pass`` for every
split and group of a dataset at once. The only Python loops are over chunks and blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

import scipy.sparse as sp
import torch
from tqdm.auto import tqdm

from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import check_ks, metric_names, metric_sums
from coldbrew.evaluation.plan import Part, Plan, Positives, make_plan
from coldbrew.evaluation.sources import (
    EmbeddingScores,
    FunctionScores,
    ScoreUsers,
    check_vectors,
)
from coldbrew.evaluation.topk import merge_top_k, one_thread, top_k

DEFAULT_CHUNK_ELEMENTS = 1 << 24  # scores held at once: 64 MiB of float32
MIN_USER_CHUNK = 256  # below this many rows per chunk, cut columns instead
MINUS_INFINITY = float("-inf")


def mask_seen(
    scores: torch.Tensor,
    rows: torch.Tensor,
    columns: torch.Tensor,
    start: int,
    whole: bool,
    fill: float = MINUS_INFINITY,
) -> None:
    """Training items in the column block ``[start, start + width)`` -> ``fill``, in place.

    ``rows``/``columns`` list every training interaction of the chunk (in part columns).
    With column blocks, no boolean indexing (a host sync on CUDA): entries outside the block are
    sent to column 0 with a zero weight, and an accumulated weight marks the entries to fill.
    """
    if columns.numel() == 0:
        return
    if whole:
        scores[rows, columns] = fill
        return
    inside = (columns >= start) & (columns < start + scores.shape[1])
    local = torch.where(inside, columns - start, torch.zeros_like(columns))
    if fill == MINUS_INFINITY:  # -inf + anything = -inf, and adding 0 changes nothing
        zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
        penalty = torch.where(inside, torch.full_like(zero, MINUS_INFINITY), zero)  # (T,)
        scores.index_put_((rows, local), penalty, accumulate=True)
        return
    marked = torch.zeros(scores.shape, dtype=torch.int32, device=scores.device)
    marked.index_put_((rows, local), inside.to(torch.int32), accumulate=True)
    scores.masked_fill_(marked > 0, fill)


def find_hits(positives: Positives, rows: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """``hits[b, r]``: is column (or item) ``columns[b, r]`` a positive of row ``rows[b]``?"""
    keys = positives.keys
    if keys.numel() == 0:
        return torch.zeros(columns.shape, dtype=torch.bool, device=columns.device)
    query = rows[:, None] * positives.width + columns  # (B, K)
    position = torch.searchsorted(keys, query).clamp_(max=keys.numel() - 1)
    return keys[position] == query


def chunk_rows(source, num_rows: int, widest: int, chunk_elements, user_chunk) -> int:
    """Users per chunk, keeping a score block of the widest part near the budget."""
    budget = DEFAULT_CHUNK_ELEMENTS if chunk_elements is None else int(chunk_elements)
    if budget < 1 or (user_chunk is not None and int(user_chunk) < 1):
        raise ColdbrewError("chunk_elements and user_chunk must be positive")
    if user_chunk:
        rows = int(user_chunk)
    elif not source.column_blocks:  # the model scores every item of a user at once
        rows = max(1, budget // source.num_items)
    else:
        rows = max(MIN_USER_CHUNK, budget // max(widest, 1))
    return max(1, min(rows, num_rows))


def block_columns(source, part: Part, rows: int, top: int, chunk_elements) -> int:
    """Candidate columns per score block: the whole part unless embeddings need cutting."""
    budget = DEFAULT_CHUNK_ELEMENTS if chunk_elements is None else int(chunk_elements)
    width = max(part.num_candidates, 1)
    if not source.column_blocks:
        return width
    return min(width, max(top, budget // rows))  # a block holds at least K columns


def part_top_k(
    scorer, prepared, part: Part, first: int, last: int, top: int, columns_per_block: int, fill
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top ``top`` (values, part columns) of rows ``[first, last)``, merged over column blocks."""
    train_start, train_stop = int(part.train_indptr[first]), int(part.train_indptr[last])
    device = prepared.device
    with one_thread(device):
        seen_rows = part.train_rows[train_start:train_stop] - first
        seen_columns = part.train_columns[train_start:train_stop]
    whole = columns_per_block >= part.num_candidates
    best = None
    for start in range(0, part.num_candidates, columns_per_block):
        stop = min(start + columns_per_block, part.num_candidates)
        scores = scorer.block(prepared, start, stop)  # (B, stop - start)
        with one_thread(device):
            mask_seen(scores, seen_rows, seen_columns, start, whole, fill)
        values, columns = top_k(scores, top)
        with one_thread(device):
            block = (values, columns + start if start else columns)
            best = block if best is None else merge_top_k([best, block], top)
    return best


@torch.no_grad()
def _rank(
    source, plan: Plan, ks: tuple[int, ...], chunk_elements, user_chunk, progress: str | None = None
) -> dict[str, float]:
    """Metric means over the plan's users; ``progress`` labels a bar over users (None: no bar)."""
    names = metric_names(ks)
    num_users, part = len(plan.users), plan.part
    if num_users == 0:
        return dict.fromkeys(names, 0.0)
    top = min(max(ks), part.num_candidates)
    device = plan.users.device
    totals = torch.zeros(len(names), dtype=torch.float64, device=device)
    rows_per_chunk = chunk_rows(source, num_users, part.num_candidates, chunk_elements, user_chunk)
    columns_per_block = block_columns(source, part, rows_per_chunk, top, chunk_elements)
    scorer = source.for_part(part)
    bar = tqdm(
        total=num_users,
        unit="user",
        unit_scale=True,
        desc=progress,
        leave=False,
        disable=progress is None or num_users <= rows_per_chunk,  # one chunk: nothing to show
    )
    for first in range(0, num_users, rows_per_chunk):
        last = min(first + rows_per_chunk, num_users)
        plan_rows = torch.arange(first, last, device=device)
        if top == 0:  # no candidate items at all: nothing can be hit
            hits = torch.zeros(last - first, 0, dtype=torch.bool, device=device)
        else:
            prepared = source.prepare(plan.users[first:last])
            values, columns = part_top_k(
                scorer, prepared, part, first, last, top, columns_per_block, MINUS_INFINITY
            )
            hits = find_hits(plan.positives, plan_rows, columns) & (values != MINUS_INFINITY)
        totals += metric_sums(hits, plan.positives.num_positives[first:last], ks)
        bar.update(last - first)
    bar.close()
    nonfinite = getattr(source, "nonfinite", torch.zeros((), dtype=torch.float64, device=device))
    *sums, bad_chunks = torch.cat([totals, nonfinite.reshape(1)]).tolist()  # one host transfer
    if bad_chunks:
        raise ColdbrewError("score_users returned NaN or infinite scores")
    return {name: total / num_users for name, total in zip(names, sums, strict=True)}


def full_ranking(
    train: sp.csr_matrix,
    positives: sp.csr_matrix,
    *,
    user_vectors: torch.Tensor | None = None,
    item_vectors: torch.Tensor | None = None,
    score_users: ScoreUsers | None = None,
    candidates=None,
    ks: Sequence[int] = (10, 20, 50),
    chunk_elements: int | None = None,
    user_chunk: int | None = None,
    device: torch.device | str | None = None,
    progress: str | None = None,
) -> dict[str, float]:
    """Mean precision/recall/NDCG/hit at every K over the users with a positive in ``positives``.

    Scores come from ``user_vectors @ item_vectors.T`` or from ``score_users(users)``
    (``(B, num_items)``; ``users`` is an int64 tensor on ``device``). ``candidates`` (boolean item
    mask or item ids; None = every item) restricts the ranked items; ``train`` items are never
    ranked (coldbrew's protocol). ``chunk_elements`` bounds the scores held at once (default
    2**24); ``user_chunk`` fixes the users per chunk. ``device`` defaults to the vectors' device,
    or CPU for ``score_users``. A user's positives outside the candidates still count in recall's
    denominator, as in the original CLCRec evaluation. Equal scores rank by item id (lower
    first). No evaluated user -> all zeros. ``progress``: a label for a progress bar over users.
    """
    ks = check_ks(ks)
    if score_users is not None:
        if user_vectors is not None or item_vectors is not None:
            raise ColdbrewError("give either score_users or user_vectors/item_vectors, not both")
        device = torch.device(device or "cpu")
        source = FunctionScores(score_users, train.shape[1], device)
        plan = make_plan(train, positives, candidates, device)
        return _rank(source, plan, ks, chunk_elements, user_chunk, progress)
    if user_vectors is None or item_vectors is None:
        raise ColdbrewError("full_ranking needs score_users or both user_vectors and item_vectors")
    user_vectors, item_vectors = check_vectors(user_vectors, item_vectors, train.shape, device)
    return rank_embeddings(
        train,
        positives,
        user_vectors,
        item_vectors,
        candidates,
        ks,
        chunk_elements,
        user_chunk,
        progress,
    )


def rank_embeddings(
    train: sp.csr_matrix,
    positives: sp.csr_matrix,
    user_vectors: torch.Tensor,
    item_vectors: torch.Tensor,
    candidates=None,
    ks: Sequence[int] = (10, 20, 50),
    chunk_elements: int | None = None,
    user_chunk: int | None = None,
    progress: str | None = None,
) -> dict[str, float]:
    """``full_ranking`` for vectors already through ``check_vectors`` (checked once per split)."""
    plan = make_plan(train, positives, candidates, user_vectors.device)
    source = EmbeddingScores(user_vectors, item_vectors)
    return _rank(source, plan, check_ks(ks), chunk_elements, user_chunk, progress)
