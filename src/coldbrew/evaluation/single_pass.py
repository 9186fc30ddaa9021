"""Every split and group of a dataset from one scoring pass over the users.

A full evaluation (val and test; groups all, warm and cold) used to rank six times. But

* the val and test rankings of one group are the same ranking: only the positives differ;
* the warm and cold groups rank disjoint parts of the catalogue, and the "all" group ranks
  their union, so its top K is the merge of the warm and cold top Ks (exact, because equal
  scores rank by item id everywhere, ``coldbrew.evaluation.topk``);
* every K comes from one top list at the largest K (``coldbrew.evaluation.metrics``).

So each chunk of users (the union of every requested split and group) is scored once per part
(warm items, cold items); each part keeps its top ``max(ks)``; each group's list is its parts'
lists merged (in the original protocol, also the other part's lowest ids at ``1e-15``: every
other-group item has that score there, ``coldbrew.evaluation.protocols``). One lookup (a dense
byte table, or a ``searchsorted``) then finds, for every listed item, which (split, group) pairs
hold it as a positive (a bit per pair), and the metrics of every pair come from one
``[pairs, users, K]`` hit tensor.
The metrics equal ``full_ranking`` run group by group.

Memory is bounded as in ``full_ranking``: ``chunk_elements`` scores of one part at a time (and
the model's ``(B, num_items)`` output with ``score_users``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import MetricSums, check_ks, metric_names
from coldbrew.evaluation.plan import (
    PairPositives,
    Part,
    canonical,
    make_part,
    users_with_positives,
)
from coldbrew.evaluation.protocols import check_protocol, mask_value
from coldbrew.evaluation.ranking import (
    DEFAULT_CHUNK_ELEMENTS,
    MINUS_INFINITY,
    block_columns,
    chunk_rows,
    part_top_k,
)
from coldbrew.evaluation.sources import (
    EmbeddingScores,
    FunctionScores,
    ScoreUsers,
    check_vectors,
    module_device,
)
from coldbrew.evaluation.topk import merge_top_k, one_thread

Metrics = dict[str, dict[str, dict[str, float]]]  # {split: {group: {metric: value}}}
GROUP_PARTS = {"all": ("warm", "cold"), "warm": ("warm",), "cold": ("cold",)}
OTHER_PART = {"warm": "cold", "cold": "warm"}


@dataclass
class _Pass:
    """Everything of one evaluation pass that does not depend on scores."""

    users: torch.Tensor  # (N,) the union of the users of every (split, group)
    pairs: list[tuple[str, str]]  # the (split, group) pairs, in output order
    groups: list[str]  # their distinct groups
    group_of_pair: torch.Tensor  # (L,) index into groups
    parts: dict[str, Part]  # "warm" / "cold" candidates and training items
    positives: PairPositives  # which pairs hold each (row, item) as a positive
    metric_sums: MetricSums  # per pair: (L, B, K) hits of rows [first, last) -> (L, metrics)
    num_users: list[int]  # (L,) users with a positive, per pair
    fillers: dict[str, torch.Tensor]  # original protocol: a part's lowest ids (1, F)
    top: int


def evaluate_dataset(
    dataset: Dataset,
    *,
    user_vectors: torch.Tensor | None = None,
    item_vectors: torch.Tensor | None = None,
    score_users: ScoreUsers | None = None,
    splits: Sequence[str] = ("val", "test"),
    ks: Sequence[int] = (10, 20, 50),
    protocol: str = "coldbrew",
    chunk_elements: int | None = None,
    user_chunk: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = False,
    shard: tuple[int, int, Callable[[torch.Tensor], torch.Tensor]] | None = None,
) -> Metrics:
    """``{split: {group: {"recall@20": ...}}}`` for every group of every split in ``splits``.

    Scores come from ``user_vectors @ item_vectors.T`` (``[num_users, d]``, ``[num_items, d]``)
    or from ``score_users(users) -> [B, num_items]`` (``users`` int64 on ``device``; default
    the device of the module owning ``score_users``, else CPU). ``protocol`` is ``"coldbrew"``
    or ``"original"`` (``coldbrew.evaluation.protocols``). A split without groups gives ``{}``.
    ``chunk_elements`` bounds the scores held at once (default 2**24), ``user_chunk`` fixes the
    users per chunk; ``progress`` shows a bar over users when there is more than one chunk.
    ``shard=(rank, world, sum)``: rank every ``world``-th user from ``rank`` only, and let
    ``sum`` (an all-reduce) add each process's metric totals and user counts before dividing,
    so every process returns the metrics of all users.
    """
    ks, protocol = check_ks(ks), check_protocol(protocol)
    source = _make_source(dataset, user_vectors, item_vectors, score_users, device)
    splits = tuple(dict.fromkeys(splits))  # each split once, in the order given
    wanted = {
        (split, group): matrix for split in splits for group, matrix in _groups(dataset, split)
    }
    result: Metrics = {split: {} for split in splits}
    if not wanted:
        return result
    budget = DEFAULT_CHUNK_ELEMENTS if chunk_elements is None else int(chunk_elements)
    table_bytes = 4 * budget  # the bytes of a chunk's float32 scores
    plan = _make_pass(dataset, wanted, ks, protocol, source.device, table_bytes, shard)
    totals = _rank_all(source, plan, ks, mask_value(protocol), chunk_elements, user_chunk, progress)
    names = metric_names(ks)
    nonfinite = getattr(source, "nonfinite", torch.zeros((), dtype=torch.float64))
    counts = torch.tensor(plan.num_users, dtype=torch.float64, device=totals.device)
    packed = torch.cat([totals.reshape(-1), counts, nonfinite.reshape(1).to(totals)])
    if shard is not None:
        packed = shard[2](packed)  # every process's totals added up
    *flat, bad_chunks = packed.tolist()
    if bad_chunks:
        raise ColdbrewError("score_users returned NaN or infinite scores")
    user_counts = flat[len(plan.pairs) * len(names) :]
    for index, (split, group) in enumerate(plan.pairs):
        sums = flat[index * len(names) : (index + 1) * len(names)]
        count = user_counts[index]
        result[split][group] = {
            name: total / max(count, 1) for name, total in zip(names, sums, strict=True)
        }
    return result


def _groups(dataset: Dataset, split: str):
    return dataset.groups(split).items()  # an unknown split name raises here


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


def _make_pass(
    dataset: Dataset,
    wanted: dict,
    ks: tuple[int, ...],
    protocol: str,
    device,
    table_bytes: int,
    shard=None,
) -> _Pass:
    top = max(ks)
    users = users_with_positives(*wanted.values())  # the union: each user is scored once
    if shard is not None:
        rank, world, _ = shard
        users = users[rank::world]
    pairs = list(wanted)
    groups = list(dict.fromkeys(group for _, group in pairs))
    candidates = {"warm": dataset.warm_items, "cold": dataset.cold_items}
    part_names = [name for name in candidates if any(name in GROUP_PARTS[g] for g in groups)]
    # coldbrew's protocol ranks training items at -inf: leaving them out of the positives
    # spares masking the hits afterwards (they still count in recall's denominator)
    seen = canonical(dataset.train)[users] if protocol == "coldbrew" else None
    positives = PairPositives(list(wanted.values()), users, device, seen, table_bytes)

    def to_device(array) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(array, dtype=np.int64), device=device)

    return _Pass(
        users=to_device(users),
        pairs=pairs,
        groups=groups,
        group_of_pair=to_device([groups.index(group) for _, group in pairs]),
        parts={
            name: make_part(dataset.train, users, candidates[name], device) for name in part_names
        },
        positives=positives,
        metric_sums=MetricSums(to_device(positives.num_positives), ks, top),
        num_users=np.count_nonzero(positives.num_positives, axis=1).tolist(),
        fillers={  # original protocol: the warm group also lists the cold items, and vice versa
            OTHER_PART[group]: to_device(candidates[OTHER_PART[group]][:top]).reshape(1, -1)
            for group in groups
            if group in OTHER_PART and protocol == "original"
        },
        top=top,
    )


@torch.no_grad()
def _rank_all(
    source, plan: _Pass, ks, fill: float, chunk_elements, user_chunk, progress
) -> torch.Tensor:
    """``(L, metrics)`` metric sums per (split, group) over the union of users, on the device."""
    num_users = len(plan.users)
    widest = max(part.num_candidates for part in plan.parts.values())
    rows_per_chunk = chunk_rows(source, num_users, widest, chunk_elements, user_chunk)
    tops = {name: min(plan.top, part.num_candidates) for name, part in plan.parts.items()}
    blocks = {
        name: block_columns(source, part, rows_per_chunk, max(tops[name], 1), chunk_elements)
        for name, part in plan.parts.items()
    }
    scorers = {name: source.for_part(part) for name, part in plan.parts.items()}
    totals = torch.zeros(
        len(plan.pairs), len(metric_names(ks)), dtype=torch.float64, device=source.device
    )
    bar = tqdm(
        total=num_users,
        unit="user",
        unit_scale=True,
        desc="evaluate " + "+".join(dict.fromkeys(split for split, _ in plan.pairs)),
        leave=False,
        disable=not progress or num_users <= rows_per_chunk,
    )
    for first in range(0, num_users, rows_per_chunk):
        last = min(first + rows_per_chunk, num_users)
        prepared = source.prepare(plan.users[first:last])
        lists = {}  # name -> (values, item ids): a part's top list, or an original-protocol filler
        for name, part in plan.parts.items():
            if tops[name] == 0:  # an empty part (no cold items, say) lists nothing
                continue
            values, columns = part_top_k(
                scorers[name], prepared, part, first, last, tops[name], blocks[name], fill
            )
            lists[name] = (values, _item_ids(part, columns))
        for name, ids in plan.fillers.items():  # every item of that part has the mask score
            ids = ids.expand(last - first, -1)  # (B, F), in the scores' own dtype below
            values = torch.full(ids.shape, fill, dtype=prepared.dtype, device=ids.device)
            lists[f"{name} filler"] = (values, ids)
        with one_thread(source.device):
            totals += _chunk_totals(plan, lists, first, last)
        bar.update(last - first)
    bar.close()
    return totals


def _chunk_totals(plan: _Pass, lists: dict, first: int, last: int) -> torch.Tensor:
    """``(L, metrics)`` sums for rows ``[first, last)`` from the parts' top lists."""
    # which (split, group) pairs hold each listed item as a positive, one bit per pair
    bits = plan.positives.lookup(torch.cat([ids for _, ids in lists.values()], 1), first, last)
    bits = bits.split([ids.shape[1] for _, ids in lists.values()], dim=1)
    lists = {
        name: (*pair, part_bits)
        for (name, pair), part_bits in zip(lists.items(), bits, strict=True)
    }
    group_lists = [_group_list(group, lists, plan, last - first) for group in plan.groups]
    return _chunk_sums(plan, group_lists, first, last)


def _item_ids(part: Part, columns: torch.Tensor) -> torch.Tensor:
    """Part columns -> item ids."""
    if part.item_range is None:
        return part.candidate_items[columns]
    return columns + part.item_range[0] if part.item_range[0] else columns


def _group_list(group: str, lists: dict, plan: _Pass, num_rows: int):
    """A group's top ``(values, item ids, bits)``, ``(B, top)``: its parts' lists merged (plus, in
    the original protocol, the other part's filler), padded with id -1 at -inf and no bits."""
    names = list(GROUP_PARTS[group])
    if plan.fillers and group in OTHER_PART:
        names.append(f"{OTHER_PART[group]} filler")
    parts = [lists[name] for name in names if name in lists]
    if parts:
        values, ids, bits = merge_top_k(parts, plan.top)
    else:  # the group's items are an empty part: nothing is ranked
        device = plan.users.device
        values = torch.empty(num_rows, 0, device=device)
        ids = torch.empty(num_rows, 0, dtype=torch.int64, device=device)
        bits = torch.empty(num_rows, 0, dtype=torch.uint8, device=device)
    missing = plan.top - ids.shape[1]  # fewer candidates than K: the missing ranks are misses
    if missing:
        values = torch.nn.functional.pad(values, (0, missing), value=MINUS_INFINITY)
        ids = torch.nn.functional.pad(ids, (0, missing), value=-1)
        bits = torch.nn.functional.pad(bits, (0, missing), value=0)
    return values, ids, bits


def _chunk_sums(plan: _Pass, lists, first: int, last: int) -> torch.Tensor:
    """``(L, metrics)`` sums over rows ``[first, last)`` for every (split, group) pair.

    A row without positives in a pair finds no hit there, so all its metrics are 0 and summing
    over every row equals summing over the pair's users.
    """
    # seen items (at -inf) are not in the positives table, padding has no bits: no hit there
    bits = torch.stack([bits for _, _, bits in lists])  # (G, B, K)
    pair_bits = torch.arange(len(plan.pairs), device=bits.device)[:, None, None]
    hits = (bits[plan.group_of_pair] >> pair_bits) & 1  # (L, B, K)
    return plan.metric_sums(hits, first, last)
