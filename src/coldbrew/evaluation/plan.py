"""The score-independent half of an evaluation: who is ranked, over which items, what is a hit.

* A ``Part`` is one set of candidate items (the warm items; the cold items, or under
  ``cold_candidates="split"`` one split's cold items) with the evaluated users' training items
  on its columns, to mask before ranking.
* A (split, group) pair ranks a union of parts (``recipe``): its top K is the merge of its
  parts' top Ks, exact because equal scores rank by the items' tie keys everywhere (a fixed
  permutation of the ids, ``topk.tie_keys``, rotated per user, ``topk.tie_shifts``). In the
  original protocol the warm and cold groups also list the other group's items, every one at
  ``1e-15``: the user's lowest keys among them (a "filler"), as a sort on (score, key) would.
* ``PairPositives`` says, for a chunk's listed items, which pairs hold each as a positive.

Cold candidates: ``"all"`` ranks every cold item for every split (CLCRec's convention);
``"split"`` ranks a split's users over that split's own cold items only (those among its
held-out positives, as ColdRec, DropoutNet and Heater do): the other split's cold items are no
candidate for any group of the split (all, warm or cold). Warm items are candidates either way.
A split the data pads (``Dataset.split_padding``: a cold-item fold, drawn up to test's size) also
ranks the cold items drawn beside its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import MetricSums
from coldbrew.evaluation.topk import tie_keys, tie_shifts

COLD_CANDIDATES = ("all", "split")
FILLER = "filler "  # a recipe entry "filler NAME": part NAME's lowest keys at the mask score


def check_cold_candidates(cold_candidates: str) -> str:
    if cold_candidates not in COLD_CANDIDATES:
        raise ColdbrewError(
            f"option 'cold_candidates' is {cold_candidates!r}; expected all or split"
        )
    return cold_candidates


def cold_items_of(dataset: Dataset, split: str, cold_candidates: str) -> np.ndarray:
    """The cold items ``split``'s users are ranked over (sorted ids): under ``"split"`` its own,
    and the other cold items the data draws beside them (``Dataset.split_padding``)."""
    if check_cold_candidates(cold_candidates) == "all":
        return dataset.cold_items
    own = dataset.own_cold_items(split)
    padding = dataset.split_padding.get(split)
    return own if padding is None else np.union1d(own, padding)


def recipe(group: str, cold: str, protocol: str) -> tuple[str, ...]:
    """The lists a group's ranking merges: part names, and fillers in the original protocol."""
    parts = {"all": ("warm", cold), "warm": ("warm",), "cold": (cold,)}[group]
    if protocol == "original" and group != "all":
        parts += (FILLER + (cold if group == "warm" else "warm"),)
    return parts


@dataclass
class Part:
    """Candidate items and the training items on them, for a fixed array of users (rows)."""

    items: torch.Tensor  # (C,) sorted item ids
    keys: torch.Tensor  # (C,) their tie keys
    first: int | None  # items[0] when the items are one id range (sliced, not gathered)
    seen_indptr: np.ndarray  # (N + 1,) host offsets into seen_rows / seen_columns
    seen_rows: torch.Tensor  # (T,) row of each training interaction on the part
    seen_columns: torch.Tensor  # (T,) its column in the part

    @property
    def size(self) -> int:
        return len(self.items)


def canonical(matrix: sp.spmatrix) -> sp.csr_matrix:
    """CSR without duplicate entries (a copy only when the input has duplicates or is not CSR)."""
    matrix = sp.csr_matrix(matrix)
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    return matrix


def to_device(array, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(array, dtype=np.int64), device=device)


def make_part(
    train: sp.csr_matrix, users: np.ndarray, items: np.ndarray, keys: np.ndarray, device
) -> Part:
    """The part ranking ``items`` for rows ``users``; ``keys``: every item's tie key."""
    column_of_item = np.full(train.shape[1], -1, dtype=np.int64)
    column_of_item[items] = np.arange(len(items))
    seen = canonical(train)[users]
    rows = np.repeat(np.arange(len(users), dtype=np.int64), np.diff(seen.indptr))
    columns = column_of_item[seen.indices]
    rows, columns = rows[columns >= 0], columns[columns >= 0]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(users)))])
    one_range = len(items) > 0 and items[-1] - items[0] + 1 == len(items)
    return Part(
        items=to_device(items, device),
        keys=to_device(keys[items], device),
        first=int(items[0]) if one_range else None,
        seen_indptr=indptr.astype(np.int64),
        seen_rows=to_device(rows, device),
        seen_columns=to_device(columns, device),
    )


MAX_PAIRS = 31  # bits of an int32, the widest bit word


def bits_dtype(pairs: int) -> torch.dtype:
    """The narrowest integer that holds a bit per pair: a byte for up to 8 pairs (val and test
    × 3 groups), int16 for up to 15 (val, report and test × 3 groups: 9), else int32."""
    if pairs > MAX_PAIRS:
        raise ColdbrewError(f"at most {MAX_PAIRS} (split, group) pairs at once, got {pairs}")
    return torch.uint8 if pairs <= 8 else torch.int16 if pairs <= 15 else torch.int32


class PairPositives:
    """The held-out positives of up to 31 (split, group) pairs over the same rows: sorted keys
    ``row * num_items + item``, each with a bit word (``bits_dtype``) whose bit j says pair j
    holds it.

    ``num_positives`` (``(L, N)`` host counts) counts every positive, candidate or not (recall's
    denominator, as in the original). ``lookup`` finds the bits of a chunk's listed items: in a
    dense ``rows × num_items`` table of bit words, reused from chunk to chunk, while it fits in
    ``table_bytes``; else a ``searchsorted`` in the chunk's keys.
    """

    def __init__(self, matrices, users: np.ndarray, device, table_bytes: int = 0):
        dtype = bits_dtype(len(matrices))
        combined, counts = None, []
        for index, matrix in enumerate(matrices):
            matrix = canonical(matrix)[users]  # every stored entry is a positive
            counts.append(np.diff(matrix.indptr))
            bits = np.full(matrix.nnz, 1 << index, dtype=np.int64)
            matrix = sp.csr_matrix((bits, matrix.indices, matrix.indptr), shape=matrix.shape)
            combined = matrix if combined is None else combined + matrix  # disjoint bits: an or
        combined.sort_indices()
        self.num_items = combined.shape[1]
        rows = np.repeat(np.arange(len(users), dtype=np.int64), np.diff(combined.indptr))
        self.keys = to_device(rows * self.num_items + combined.indices, device)  # sorted
        self.bits = torch.as_tensor(combined.data.astype(np.int64), device=device).to(dtype)
        self.row_starts = combined.indptr.astype(np.int64)  # (N + 1,) on the host
        self.num_positives = np.stack(counts)  # (L, N)
        self.table_bytes = table_bytes
        self.table: torch.Tensor | None = None  # all zeros between lookups

    def lookup(self, items: torch.Tensor, first: int, last: int) -> torch.Tensor:
        """``(B, W)`` bits of items ``(B, W)`` listed for rows ``[first, last)``."""
        start, stop = int(self.row_starts[first]), int(self.row_starts[last])
        keys = self.keys[start:stop] - first * self.num_items  # the chunk's keys, local rows
        bits = self.bits[start:stop]
        size = (last - first) * self.num_items
        word_bytes = bits.element_size()
        rows = torch.arange(last - first, device=items.device)[:, None]  # (B, 1)
        query = rows * self.num_items + items  # (B, W), row-major: each row reads its region
        if size * word_bytes <= self.table_bytes:
            if self.table is None or self.table.numel() < size:
                self.table = torch.zeros(size, dtype=bits.dtype, device=items.device)
            self.table[keys] = bits
            found = torch.take(self.table, query)
            self.table.index_fill_(0, keys, 0)  # zeros for the next chunk, without a memset
            return found
        if keys.numel() == 0:
            return torch.zeros(query.shape, dtype=bits.dtype, device=items.device)
        position = torch.searchsorted(keys, query).clamp_(max=keys.numel() - 1)
        return torch.where(keys[position] == query, bits[position], 0)


@dataclass
class Plan:
    """Everything of one evaluation that does not depend on scores."""

    users: torch.Tensor  # (N,) the union of the users of every (split, group)
    pairs: list[tuple[str, str]]  # the (split, group) pairs, in output order
    recipes: list[tuple[str, ...]]  # the distinct lists to rank
    recipe_of_pair: torch.Tensor  # (L,) index into recipes
    parts: dict[str, Part]  # the parts ranked
    fillers: dict[str, tuple]  # "filler NAME" -> part NAME's (sorted keys, ids in key order)
    keys: torch.Tensor  # (num_items,) every item's tie key
    shifts: torch.Tensor  # (N,) each user's rotation of the keys (``topk.tie_shifts``)
    cold_part: dict[str, str]  # split -> the name of the part holding its cold candidates
    positives: PairPositives
    metric_sums: MetricSums  # per pair: (L, B, K) hits of rows [first, last) -> (L, metrics)
    num_users: list[int]  # (L,) users with a positive, per pair
    top: int


def make_plan(
    dataset: Dataset,
    splits: tuple[str, ...],
    ks: tuple[int, ...],
    protocol: str,
    cold_candidates: str,
    device: torch.device,
    table_bytes: int,
    shard: tuple | None = None,
) -> Plan | None:
    """The plan of every group of ``splits``, over the users with a positive in any of them
    (every ``shard[1]``-th from ``shard[0]``); None when the splits have no group."""
    wanted = {(s, g): matrix for s in splits for g, matrix in dataset.groups(s).items()}
    if not wanted:
        return None
    top = max(ks)
    cold = {s: "cold" if cold_candidates == "all" else f"cold {s}" for s in splits}
    items = {"warm": dataset.warm_items}
    items |= {cold[s]: cold_items_of(dataset, s, cold_candidates) for s, _ in wanted}
    recipe_of = {pair: recipe(pair[1], cold[pair[0]], protocol) for pair in wanted}
    recipes = list(dict.fromkeys(recipe_of.values()))
    has_positive = np.zeros(dataset.num_users, dtype=bool)
    for matrix in wanted.values():
        has_positive |= np.diff(canonical(matrix).indptr) > 0
    users = np.flatnonzero(has_positive)  # the union: each user is scored once
    if shard is not None:
        users = users[shard[0] :: shard[1]]
    names = dict.fromkeys(name for entries in recipes for name in entries)
    positives = PairPositives(list(wanted.values()), users, device, table_bytes)
    keys = tie_keys(dataset.num_items)
    return Plan(
        users=to_device(users, device),
        pairs=list(wanted),
        recipes=recipes,
        recipe_of_pair=to_device([recipes.index(recipe_of[pair]) for pair in wanted], device),
        parts={
            name: make_part(dataset.train, users, items[name], keys, device)
            for name in names
            if not name.startswith(FILLER)
        },
        fillers={
            name: in_key_order(items[name[len(FILLER) :]], keys, device)
            for name in names
            if name.startswith(FILLER)
        },
        keys=to_device(keys, device),
        shifts=to_device(tie_shifts(dataset.num_users, dataset.num_items)[users], device),
        cold_part={split: cold[split] for split, _ in wanted},
        positives=positives,
        metric_sums=MetricSums(to_device(positives.num_positives, device), ks, top),
        num_users=np.count_nonzero(positives.num_positives, axis=1).tolist(),
        top=top,
    )


def in_key_order(items: np.ndarray, keys: np.ndarray, device) -> tuple:
    """``(sorted keys, items in key order)`` of ``items``, on the device."""
    order = np.argsort(keys[items], kind="stable")
    return to_device(keys[items][order], device), to_device(items[order], device)


def lowest_keys(filler: tuple, shift: torch.Tensor, count: int, modulus: int) -> torch.Tensor:
    """``(B, min(count, C))``: per row, the filler part's items of lowest rotated tie key
    ``(key + shift[row]) % modulus``, in that order (``topk.top_k``'s rule)."""
    sorted_keys, items = filler
    count = min(count, len(items))
    start = torch.searchsorted(sorted_keys, modulus - shift)  # (B,) first key >= modulus - s
    steps = torch.arange(count, device=items.device)
    return items[(steps + start[:, None]) % max(len(items), 1)]
