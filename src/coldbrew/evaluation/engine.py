"""The ranking engine: every split and group of a dataset from one scoring pass over its users.

* the val and test rankings of a group are one ranking when they rank the same items (only the
  positives differ), so each user is scored once, for the union of every split and group;
* a group ranks a union of parts (warm items, cold items): per chunk of users each part is
  scored, its training items overwritten with ``-inf`` (``1e-15`` in the original protocol,
  ``coldbrew.evaluation.protocols``) and its top ``max(ks)`` kept under one total order, score
  then the item's tie key, a fixed permutation of the ids rotated per user
  (``coldbrew.evaluation.topk``), so lists never depend on chunking, device or id order;
  a group's list is its parts' lists merged (``coldbrew.evaluation.plan``);
* one lookup per part's list says which (split, group) pairs hold each listed item as a
  positive (a bit per pair); the bits travel with their items through the merges, giving a
  ``[pairs, users, K]`` hit tensor; every metric at every K
  comes from it at once (``coldbrew.evaluation.metrics``);
* while a cold part is scored, each user's spread of cold scores (max - min) is kept on the
  device: a split whose cold scores are the same for every user's every cold candidate has "no
  cold signal" (``cold_signal`` 0.0 in its cold group's metrics, else 1.0), so a model that
  cannot tell cold items apart is flagged rather than ranked by how ties fall.

The only Python loops are over chunks of users, column blocks and parts. Memory is bounded by
``chunk_elements`` scores of one part at a time (plus the model's ``(B, num_items)`` output with
``score_users``): with embeddings, a very wide part is cut into column blocks whose top Ks are
merged into a running top K.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from tqdm.auto import tqdm

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import check_ks, metric_names
from coldbrew.evaluation.plan import Part, Plan, check_cold_candidates, lowest_keys, make_plan
from coldbrew.evaluation.protocols import check_protocol, mask_value
from coldbrew.evaluation.sources import (
    EmbeddingScores,
    FunctionScores,
    ScoreUsers,
    check_vectors,
    module_device,
)
from coldbrew.evaluation.topk import merge_top_k, one_thread, top_k

Metrics = dict[str, dict[str, dict[str, float]]]  # {split: {group: {metric: value}}}
DEFAULT_CHUNK_ELEMENTS = 1 << 24  # scores held at once: 64 MiB of float32
MIN_USER_CHUNK = 256  # below this many rows per chunk, cut columns instead
MINUS_INFINITY = float("-inf")
COLD_SIGNAL = "cold_signal"  # in a cold group's metrics: 1.0 if its cold scores ever differ


def evaluate_dataset(
    dataset: Dataset,
    *,
    user_vectors: torch.Tensor | None = None,
    item_vectors: torch.Tensor | None = None,
    score_users: ScoreUsers | None = None,
    splits: Sequence[str] = ("val", "test"),
    ks: Sequence[int] = (10, 20, 50),
    protocol: str = "coldbrew",
    cold_candidates: str = "all",
    chunk_elements: int | None = None,
    user_chunk: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    shard: tuple[int, int, Callable[[torch.Tensor], torch.Tensor]] | None = None,
    cold_signal: bool = False,
) -> Metrics:
    """``{split: {group: {"recall@20": ...}}}`` for every group of every split in ``splits``.

    Scores come from ``user_vectors @ item_vectors.T`` (``[num_users, d]``, ``[num_items, d]``)
    or from ``score_users(users) -> [B, num_items]`` (``users`` int64 on ``device``; default
    the device of the module owning ``score_users``, else CPU). ``protocol`` is ``"coldbrew"``
    or ``"original"``; ``cold_candidates`` ``"all"`` or ``"split"`` (``plan``). A split without
    groups gives ``{}``. ``chunk_elements`` bounds the scores held at once (default 2**24),
    ``user_chunk`` fixes the users per chunk; ``progress`` shows a bar over users when there is
    more than one chunk. ``shard=(rank, world, sum)``: rank every ``world``-th user from
    ``rank`` only, and let ``sum`` (an all-reduce) add each process's metric totals and user
    counts before dividing, so every process returns the metrics of all users.
    ``cold_signal``: add ``"cold_signal"`` to each cold group's metrics, 0.0 when every
    evaluated user's cold candidates all score the same (no cold signal), else 1.0.
    """
    ks, protocol = check_ks(ks), check_protocol(protocol)
    check_cold_candidates(cold_candidates)
    source = _make_source(dataset, user_vectors, item_vectors, score_users, device)
    splits = tuple(dict.fromkeys(splits))  # each split once, in the order given
    result: Metrics = {split: {} for split in splits}
    budget = DEFAULT_CHUNK_ELEMENTS if chunk_elements is None else int(chunk_elements)
    table_bytes = 4 * budget  # the bytes of a chunk's float32 scores
    plan = make_plan(
        dataset, splits, ks, protocol, cold_candidates, source.device, table_bytes, shard
    )
    if plan is None:
        return result
    cold_parts = list(dict.fromkeys(plan.cold_part.values())) if cold_signal else []
    totals, varies = _rank_all(
        source, plan, mask_value(protocol), chunk_elements, user_chunk, progress, cold_parts
    )
    names = metric_names(ks)
    nonfinite = getattr(source, "nonfinite", torch.zeros((), dtype=torch.float64))
    counts = torch.tensor(plan.num_users, dtype=torch.float64, device=totals.device)
    packed = torch.cat(
        [totals.reshape(-1), counts, varies.to(totals), nonfinite.reshape(1).to(totals)]
    )
    if shard is not None:
        packed = shard[2](packed)  # every process's totals added up
    *flat, bad_chunks = packed.tolist()  # one host transfer
    if bad_chunks:
        raise ColdbrewError("score_users returned NaN or infinite scores")
    flat, signal = flat[: len(flat) - len(cold_parts)], flat[len(flat) - len(cold_parts) :]
    user_counts = flat[len(plan.pairs) * len(names) :]
    for index, (split, group) in enumerate(plan.pairs):
        sums = flat[index * len(names) : (index + 1) * len(names)]
        count = max(user_counts[index], 1)
        result[split][group] = {
            name: total / count for name, total in zip(names, sums, strict=True)
        }
    for split in splits if cold_signal else ():
        if "cold" in result[split]:
            varied = signal[cold_parts.index(plan.cold_part[split])] > 0
            result[split]["cold"][COLD_SIGNAL] = float(varied)
    return result


def _make_source(dataset, user_vectors, item_vectors, score_users, device):
    """The score source, with the device everything is ranked on as ``.device``."""
    if score_users is not None:
        if user_vectors is not None or item_vectors is not None:
            raise ColdbrewError("give either score_users or user_vectors/item_vectors, not both")
        device = torch.device(device) if device is not None else module_device(score_users)
        source = FunctionScores(score_users, dataset.num_items, device)
    elif user_vectors is None or item_vectors is None:
        raise ColdbrewError("evaluation needs score_users or both user_vectors and item_vectors")
    else:
        shape = (dataset.num_users, dataset.num_items)
        user_vectors, item_vectors = check_vectors(user_vectors, item_vectors, shape, device)
        source = EmbeddingScores(user_vectors, item_vectors)
        device = user_vectors.device
    source.device = device
    return source


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
    width = max(part.size, 1)
    if not source.column_blocks:
        return width
    return min(width, max(top, budget // rows))  # a block holds at least K columns


class ScoreBuffer:
    """One flat score buffer reused by every block of an evaluation (grown when too small)."""

    def __init__(self):
        self.flat: torch.Tensor | None = None

    def take(self, rows: int, columns: int, like: torch.Tensor) -> torch.Tensor:
        """A ``(rows, columns)`` view of the buffer, of ``like``'s dtype and device."""
        size = rows * columns
        flat = self.flat
        if flat is None or flat.numel() < size or flat.dtype != like.dtype:
            flat = self.flat = torch.empty(size, dtype=like.dtype, device=like.device)
        return flat[:size].view(rows, columns)


def part_top_k(
    scorer,
    prepared,
    part: Part,
    rows: tuple[int, int],
    top: int,
    width: int,
    fill,
    buffer,
    keys,
    shift,
    spread: bool = False,
):
    """Top ``top`` (values, item ids) of a part for rows ``[first, last)``, over column blocks
    of ``width`` scored into ``buffer`` (a ``ScoreBuffer``); the rows' training items are
    ``fill`` (never ranked when ``-inf``); ``keys``: every item's tie key, rotated per row by
    ``shift`` (``topk.top_k``). With ``spread``, also
    whether some row's scores (before masking) differ: a bool on the device, else None."""
    first, last = rows
    start, stop = int(part.seen_indptr[first]), int(part.seen_indptr[last])
    seen_rows, seen_columns = part.seen_rows[start:stop] - first, part.seen_columns[start:stop]
    best = low = high = None
    for start in range(0, part.size, width):
        stop = min(start + width, part.size)
        out = buffer.take(last - first, stop - start, prepared)
        scores = scorer.block(prepared, start, stop, out)  # (B, width)
        if spread:  # each row's lowest and highest score, over the blocks so far
            block_low, block_high = torch.aminmax(scores, dim=1)
            low = block_low if low is None else torch.minimum(low, block_low)
            high = block_high if high is None else torch.maximum(high, block_high)
        with one_thread(prepared.device):
            inside = (seen_columns >= start) & (seen_columns < start + scores.shape[1])
            scores[seen_rows[inside], seen_columns[inside] - start] = fill
        values, columns = top_k(scores, top, part.keys[start:stop], shift, len(keys))
        with one_thread(prepared.device):
            block = (values, part.items[columns + start])
            best = block if best is None else merge_top_k([best, block], top, keys, shift)
    return best, (high > low).any() if spread else None


@torch.no_grad()
def _rank_all(
    source, plan: Plan, fill: float, chunk_elements, user_chunk, progress, cold_parts: list[str]
):
    """``(L, metrics)`` metric sums per (split, group) over the plan's users, and for each of
    ``cold_parts`` whether its scores differ within some user's row (bool), on the device."""
    num_users = len(plan.users)
    widest = max([part.size for part in plan.parts.values()] + [1])
    rows_per_chunk = chunk_rows(source, num_users, widest, chunk_elements, user_chunk)
    parts = {  # name -> (part, its scorer, columns per block), empty parts left out
        name: (
            part,
            source.for_part(part),
            block_columns(source, part, rows_per_chunk, plan.top, chunk_elements),
        )
        for name, part in plan.parts.items()
        if part.size
    }
    totals = torch.zeros(len(plan.pairs), 4 * len(plan.metric_sums.ks), dtype=torch.float64)
    totals = totals.to(source.device)
    bar = tqdm(
        total=num_users,
        unit="user",
        unit_scale=True,
        desc="evaluate " + "+".join(dict.fromkeys(split for split, _ in plan.pairs)),
        leave=False,
        disable=not progress or num_users <= rows_per_chunk,
    )
    buffer = ScoreBuffer()
    varies = torch.zeros(len(cold_parts), dtype=torch.bool, device=source.device)
    for first in range(0, num_users, rows_per_chunk):
        last = min(first + rows_per_chunk, num_users)
        prepared = source.prepare(plan.users[first:last])
        lists = {}
        for name, (part, scorer, width) in parts.items():
            spread = name in cold_parts
            lists[name], differs = part_top_k(
                scorer,
                prepared,
                part,
                (first, last),
                plan.top,
                width,
                fill,
                buffer,
                plan.keys,
                plan.shifts[first:last],
                spread,
            )
            if spread:  # no host sync: an or on the device
                index = cold_parts.index(name)
                varies[index] = varies[index] | differs
        for name, filler in plan.fillers.items():  # every item of that part has the mask score
            ids = lowest_keys(filler, plan.shifts[first:last], plan.top, len(plan.keys))
            lists[name] = (
                torch.full(ids.shape, fill, dtype=prepared.dtype, device=ids.device),
                ids,
            )
        with one_thread(source.device):
            # each listed item's positive bits, looked up once per list and carried by merges
            lists = {
                name: (values, ids, plan.positives.lookup(ids, first, last))
                for name, (values, ids) in lists.items()
            }
            totals += plan.metric_sums(_hits(plan, lists, first, last), first, last)
        bar.update(last - first)
    bar.close()
    return totals, varies


def _hits(plan: Plan, lists: dict, first: int, last: int) -> torch.Tensor:
    """``(L, B, top)`` hits of every (split, group) pair from the lists ``(values, ids, bits)``
    of the chunk of users ``[first, last)``."""
    device, rows, shift = plan.users.device, last - first, plan.shifts[first:last]
    empty = (
        torch.empty(rows, 0, device=device),
        torch.empty(rows, 0, dtype=torch.int64, device=device),
        torch.empty(rows, 0, dtype=plan.positives.bits.dtype, device=device),
    )
    bits = []
    for entries in plan.recipes:  # merge the lists a group ranks: (B, <= top)
        values, _, found = merge_top_k(
            [lists[name] for name in entries if name in lists] or [empty],
            plan.top,
            plan.keys,
            shift,
        )
        found = found * (values != MINUS_INFINITY)  # a masked (seen) item is never a hit
        bits.append(torch.nn.functional.pad(found, (0, plan.top - found.shape[1])))  # misses
    pair_bits = torch.arange(len(plan.pairs), device=device)[:, None, None]
    return (torch.stack(bits)[plan.recipe_of_pair] >> pair_bits) & 1  # (L, B, top)
