"""Chunked full ranking: score every candidate item for every evaluated user, keep the top K.

One core, two score sources: embedding matrices (``user_vectors @ item_vectors.T``, computed
block by block) or a model's ``score_users(users) -> [B, num_items]``. Per chunk of users:

1. score the candidate items (only cold items for the cold group, only warm items for the warm
   group, every item for "all"); with embeddings, very wide catalogues are also cut into column
   blocks whose top K are merged into a running top K, so memory stays bounded by the chunk
   budget rather than by ``users × items``;
2. set the user's training items to ``-inf`` (the original CLCRec code writes ``1e-15``, which
   ranks a seen item above every unseen item with a negative score; ``-inf`` never does);
3. ``torch.topk`` on the device, then a ``[B, K]`` hit matrix by looking up the top items among
   the user's held-out positives (a sorted-key ``searchsorted``); a ``-inf`` entry is never a hit;
4. add the chunk's per-user metric sums to a device accumulator.

The only Python loop is over chunks; the metrics reach the host once, at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import scipy.sparse as sp
import torch
from tqdm.auto import tqdm

from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import check_ks, metric_names, metric_sums
from coldbrew.evaluation.plan import Plan, make_plan

ScoreUsers = Callable[[torch.Tensor], torch.Tensor]

DEFAULT_CHUNK_ELEMENTS = 1 << 24  # scores held at once: 64 MiB of float32
MIN_USER_CHUNK = 256  # below this many rows per chunk, cut columns instead


class _EmbeddingScores:
    """Scores as inner products; any column block can be computed on its own."""

    column_blocks = True

    def __init__(self, user_vectors: torch.Tensor, item_vectors: torch.Tensor, plan: Plan):
        self.user_vectors = user_vectors
        items = item_vectors if plan.candidate_items is None else item_vectors[plan.candidate_items]
        self.item_vectors = items  # (C, d)

    def rows(self, users: torch.Tensor) -> torch.Tensor:
        return self.user_vectors[users]  # (B, d)

    def block(self, rows: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        return rows @ self.item_vectors[start:stop].T  # (B, stop - start)


class _FunctionScores:
    """Scores from ``score_users(users) -> (B, num_items)``; one block per chunk of users."""

    column_blocks = False

    def __init__(self, score_users: ScoreUsers, num_items: int, plan: Plan):
        self.score_users = score_users
        self.num_items = num_items
        self.candidate_items = plan.candidate_items
        self.nonfinite = torch.zeros((), dtype=torch.float64, device=plan.users.device)

    def rows(self, users: torch.Tensor) -> torch.Tensor:
        scores = self.score_users(users)
        if not isinstance(scores, torch.Tensor) or scores.shape != (len(users), self.num_items):
            shape = (
                tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
            )
            raise ColdbrewError(
                f"score_users returned {shape}; expected ({len(users)}, {self.num_items}): "
                "one score per item for each requested user"
            )
        scores = scores.detach().to(device=users.device, dtype=_score_dtype(scores.dtype))
        self.nonfinite += (~torch.isfinite(scores)).any().to(torch.float64)
        if self.candidate_items is not None:
            return scores[:, self.candidate_items]  # (B, C), a fresh tensor
        return scores.clone()  # the -inf mask is written in place; never into the model's tensor

    def block(self, rows: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        return rows[:, start:stop]


def _score_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half precision scores tie too often for exact top K; rank them in float32."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def _mask_seen(
    scores: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor, start: int, whole: bool
) -> None:
    """Training items in the column block ``[start, start + width)`` -> ``-inf``, in place.

    ``rows``/``columns`` list every training interaction of the chunk (in candidate columns).
    With column blocks, no boolean indexing (a host sync on CUDA): an entry outside the block
    adds 0 to column 0 instead, an entry inside adds ``-inf``; duplicates add up harmlessly.
    """
    if columns.numel() == 0:
        return
    if whole:
        scores[rows, columns] = float("-inf")
        return
    inside = (columns >= start) & (columns < start + scores.shape[1])
    local = torch.where(inside, columns - start, torch.zeros_like(columns))
    minus_infinity = torch.full(
        columns.shape, float("-inf"), dtype=scores.dtype, device=scores.device
    )
    penalty = torch.where(inside, minus_infinity, torch.zeros_like(minus_infinity))
    scores.index_put_((rows, local), penalty, accumulate=True)


def _find_hits(plan: Plan, rows: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """``hits[b, r]``: is candidate ``columns[b, r]`` a positive of plan row ``rows[b]``?"""
    keys = plan.positive_keys
    if keys.numel() == 0:
        return torch.zeros(columns.shape, dtype=torch.bool, device=columns.device)
    query = rows[:, None] * max(plan.num_candidates, 1) + columns  # (B, K)
    position = torch.searchsorted(keys, query).clamp_(max=keys.numel() - 1)
    return keys[position] == query


def _chunk_shape(source, plan: Plan, top: int, chunk_elements, user_chunk) -> tuple[int, int]:
    """(users per chunk, candidate columns per block) keeping a score block near the budget."""
    budget = DEFAULT_CHUNK_ELEMENTS if chunk_elements is None else int(chunk_elements)
    if budget < 1 or (user_chunk is not None and int(user_chunk) < 1):
        raise ColdbrewError("chunk_elements and user_chunk must be positive")
    num_users, num_candidates = len(plan.users), max(plan.num_candidates, 1)
    if not source.column_blocks:  # the model scores every item of a user at once
        rows = int(user_chunk) if user_chunk else max(1, budget // source.num_items)
        return max(1, min(rows, num_users)), num_candidates
    rows = int(user_chunk) if user_chunk else max(MIN_USER_CHUNK, budget // num_candidates)
    rows = max(1, min(rows, num_users))
    columns = min(num_candidates, max(top, budget // rows))  # a block holds at least K columns
    return rows, columns


def _top_k(source, prepared, plan: Plan, first: int, last: int, top: int, columns_per_block: int):
    """Top ``top`` (values, candidate columns) of plan rows ``[first, last)``, merged over blocks."""
    train_start, train_stop = int(plan.train_indptr[first]), int(plan.train_indptr[last])
    seen_rows = plan.train_rows[train_start:train_stop] - first
    seen_columns = plan.train_columns[train_start:train_stop]
    whole = columns_per_block >= plan.num_candidates
    best_values = best_columns = None
    for start in range(0, plan.num_candidates, columns_per_block):
        stop = min(start + columns_per_block, plan.num_candidates)
        scores = source.block(prepared, start, stop)  # (B, stop - start)
        _mask_seen(scores, seen_rows, seen_columns, start, whole)
        values, columns = torch.topk(scores, min(top, stop - start), dim=1)
        columns = columns + start
        if best_values is not None:  # streaming merge: running top K + this block's top K
            values = torch.cat([best_values, values], dim=1)  # (B, 2K)
            columns = torch.cat([best_columns, columns], dim=1)
            values, order = torch.topk(values, top, dim=1)
            columns = torch.gather(columns, 1, order)
        best_values, best_columns = values, columns
    return best_values, best_columns


@torch.no_grad()
def _rank(
    source, plan: Plan, ks: tuple[int, ...], chunk_elements, user_chunk, progress: str | None = None
) -> dict[str, float]:
    """Metric means over the plan's users; ``progress`` labels a bar over users (None: no bar)."""
    names = metric_names(ks)
    num_users = len(plan.users)
    if num_users == 0:
        return dict.fromkeys(names, 0.0)
    top = min(max(ks), plan.num_candidates)
    device = plan.users.device
    totals = torch.zeros(len(names), dtype=torch.float64, device=device)
    rows_per_chunk, columns_per_block = _chunk_shape(source, plan, top, chunk_elements, user_chunk)
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
            prepared = source.rows(plan.users[first:last])
            values, columns = _top_k(source, prepared, plan, first, last, top, columns_per_block)
            hits = _find_hits(plan, plan_rows, columns) & (values != float("-inf"))  # (B, K)
        totals += metric_sums(hits, plan.num_positives[first:last], ks)
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
    ranked. ``chunk_elements`` bounds the scores held at once (default 2**24); ``user_chunk``
    fixes the users per chunk. ``device`` defaults to the vectors' device, or CPU for
    ``score_users``. A user's positives outside the candidates still count in recall's
    denominator, as in the original CLCRec evaluation. No evaluated user -> all zeros.
    ``progress``: a label for a progress bar over users (shown when there is more than one chunk).
    """
    ks = check_ks(ks)
    if score_users is not None:
        if user_vectors is not None or item_vectors is not None:
            raise ColdbrewError("give either score_users or user_vectors/item_vectors, not both")
        device = torch.device(device or "cpu")
        plan = make_plan(train, positives, candidates, device)
        source = _FunctionScores(score_users, train.shape[1], plan)
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
    source = _EmbeddingScores(user_vectors, item_vectors, plan)
    return _rank(source, plan, check_ks(ks), chunk_elements, user_chunk, progress)


def check_vectors(
    user_vectors, item_vectors, shape: tuple[int, int], device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both as float tensors on ``device`` (default: the user vectors'), or a clear error.

    ``shape`` is ``(num_users, num_items)``; the vectors must be ``[num_users, d]`` and
    ``[num_items, d]`` with the same ``d`` and only finite values.
    """
    user_vectors = torch.as_tensor(user_vectors).detach()
    item_vectors = torch.as_tensor(item_vectors).detach()
    num_users, num_items = shape
    for name, vectors, rows, what in (
        ("user_vectors", user_vectors, num_users, "num_users"),
        ("item_vectors", item_vectors, num_items, "num_items"),
    ):
        if vectors.dim() != 2 or vectors.shape[0] != rows:
            raise ColdbrewError(
                f"{name} has shape {tuple(vectors.shape)}; expected ({what}={rows}, d)"
            )
        if not vectors.is_floating_point():
            raise ColdbrewError(f"{name} must hold floating point values, got {vectors.dtype}")
    if user_vectors.shape[1] != item_vectors.shape[1]:
        raise ColdbrewError(
            f"user_vectors are {user_vectors.shape[1]}-d but item_vectors are "
            f"{item_vectors.shape[1]}-d; they must share one dimension"
        )
    device = torch.device(device) if device is not None else user_vectors.device
    dtype = _score_dtype(user_vectors.dtype)
    user_vectors = user_vectors.to(device=device, dtype=dtype)
    item_vectors = item_vectors.to(device=device, dtype=dtype)
    for name, vectors in (("user_vectors", user_vectors), ("item_vectors", item_vectors)):
        if not torch.isfinite(vectors).all():
            raise ColdbrewError(f"{name} contains NaN or infinite values")
    return user_vectors, item_vectors
