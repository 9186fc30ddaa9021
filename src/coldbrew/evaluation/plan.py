"""The score-independent half of a ranking: who is evaluated, against which candidate items.

* A ``Part`` is one set of candidate items (every item, the warm items, the cold items) with
  the evaluated users' training items on its columns (to mask before ranking).
* A ``Positives`` lookup holds the evaluated users' held-out positives as sorted keys
  ``row * width + column``, so the hits of a top-K list are one ``searchsorted``.
* A ``Plan`` is the pair for a single (train, positives, candidates) triple, over the users
  with at least one positive (``coldbrew.evaluation.ranking.full_ranking``).

``coldbrew.evaluation.single_pass`` builds one part per item group over the union of the
users of every split and group, and one ``PairPositives`` for every (split, group) at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.errors import ColdbrewError


@dataclass
class Part:
    """Candidate items and the training items on them, for a fixed array of users (rows)."""

    candidate_items: torch.Tensor | None  # (C,) sorted item ids; None = every item
    item_range: tuple[int, int] | None  # (first, stop) when the candidates are one id range
    num_candidates: int
    train_indptr: np.ndarray  # (N + 1,) host offsets into train_rows / train_columns
    train_rows: torch.Tensor  # (T,) row of each training interaction on a candidate
    train_columns: torch.Tensor  # (T,) its candidate column


@dataclass
class Positives:
    """Held-out positives of each row as sorted keys ``row * width + column``."""

    num_positives: torch.Tensor  # (N,) all of the row's positives (0: not evaluated here)
    keys: torch.Tensor  # (P,) sorted
    width: int  # the column count the keys were made with
    num_users: int  # rows with at least one positive


@dataclass
class Plan:
    """Everything about one (train, positives, candidates) triple that does not depend on scores."""

    users: torch.Tensor  # (N,) dataset user ids with at least one positive
    part: Part
    positives: Positives  # keys over the part's candidate columns


def check_candidates(candidates, num_items: int) -> np.ndarray | None:
    """A boolean mask or an index array over items -> sorted unique item ids; None = every item."""
    if candidates is None:
        return None
    if isinstance(candidates, torch.Tensor):
        candidates = candidates.detach().cpu().numpy()
    candidates = np.asarray(candidates)
    if candidates.dtype == bool:
        if candidates.shape != (num_items,):
            raise ColdbrewError(
                f"a candidate mask needs one entry per item ({num_items}), got shape {candidates.shape}"
            )
        return np.flatnonzero(candidates)
    if candidates.ndim != 1 or (
        candidates.size and not np.issubdtype(candidates.dtype, np.integer)
    ):
        raise ColdbrewError("candidates must be a boolean item mask or a 1-D array of item ids")
    candidates = np.unique(candidates.astype(np.int64))
    if candidates.size and (candidates[0] < 0 or candidates[-1] >= num_items):
        raise ColdbrewError(f"candidate item id out of range 0..{num_items - 1}")
    return candidates


def _rows_on_candidates(
    matrix: sp.csr_matrix, users: np.ndarray, column_of_item: np.ndarray | None
):
    """Rows ``users`` of ``matrix`` as (indptr, row, candidate column), non-candidates dropped."""
    sub = matrix[users]
    rows = np.repeat(np.arange(len(users), dtype=np.int64), np.diff(sub.indptr))
    columns = sub.indices.astype(np.int64)
    if column_of_item is not None:
        columns = column_of_item[columns]
        keep = columns >= 0
        rows, columns = rows[keep], columns[keep]
    counts = np.bincount(rows, minlength=len(users))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return indptr, rows, columns


def canonical(matrix) -> sp.csr_matrix:
    """CSR without duplicate entries (a copy only when the input has duplicates or is not CSR)."""
    if not sp.issparse(matrix):
        raise ColdbrewError("train and positives must be scipy sparse (users × items) matrices")
    matrix = sp.csr_matrix(matrix)
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    return matrix


def _to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64)).to(device)


def _column_of_item(candidate_items: np.ndarray | None, num_items: int) -> np.ndarray | None:
    if candidate_items is None:
        return None
    column_of_item = np.full(num_items, -1, dtype=np.int64)
    column_of_item[candidate_items] = np.arange(len(candidate_items))
    return column_of_item


def make_part(train: sp.csr_matrix, users: np.ndarray, candidates, device: torch.device) -> Part:
    """The part ranking ``candidates`` (see ``check_candidates``) for rows ``users``."""
    train = canonical(train)
    num_items = train.shape[1]
    candidate_items = check_candidates(candidates, num_items)
    indptr, rows, columns = _rows_on_candidates(
        train, users, _column_of_item(candidate_items, num_items)
    )
    item_range = None
    if candidate_items is None:
        item_range = (0, num_items)
    elif len(candidate_items) and candidate_items[-1] - candidate_items[0] + 1 == len(
        candidate_items
    ):
        item_range = (int(candidate_items[0]), int(candidate_items[-1]) + 1)
    return Part(
        candidate_items=None if candidate_items is None else _to_device(candidate_items, device),
        item_range=item_range,
        num_candidates=num_items if candidate_items is None else len(candidate_items),
        train_indptr=indptr,
        train_rows=_to_device(rows, device),
        train_columns=_to_device(columns, device),
    )


def make_positives(
    positives: sp.csr_matrix,
    users: np.ndarray,
    device: torch.device,
    candidate_items: np.ndarray | None = None,
) -> Positives:
    """Rows ``users`` of ``positives`` as sorted keys over the candidate columns (None: items)."""
    positives = canonical(positives)
    num_items = positives.shape[1]
    counts = np.diff(positives.indptr)[users]  # every stored entry is a positive
    column_of_item = _column_of_item(candidate_items, num_items)
    width = num_items if candidate_items is None else max(len(candidate_items), 1)
    _, rows, columns = _rows_on_candidates(positives, users, column_of_item)
    return Positives(
        num_positives=_to_device(counts, device),
        keys=_to_device(np.sort(rows * width + columns), device),
        width=width,
        num_users=int(np.count_nonzero(counts)),
    )


def users_with_positives(*matrices: sp.csr_matrix) -> np.ndarray:
    """Sorted ids of the users with at least one positive in any of ``matrices``."""
    has_positive = np.zeros(matrices[0].shape[0], dtype=bool)
    for matrix in matrices:
        has_positive |= np.diff(canonical(matrix).indptr) > 0
    return np.flatnonzero(has_positive)


def make_plan(train, positives, candidates, device: torch.device) -> Plan:
    """The plan for ranking ``candidates`` for the users with a positive, on ``device``."""
    train, positives = canonical(train), canonical(positives)
    if train.shape != positives.shape:
        raise ColdbrewError(f"train {train.shape} and positives {positives.shape} differ in shape")
    users = users_with_positives(positives)
    part = make_part(train, users, candidates, device)
    candidate_items = check_candidates(candidates, train.shape[1])
    return Plan(
        users=_to_device(users, device),
        part=part,
        positives=make_positives(positives, users, device, candidate_items),
    )


class PairPositives:
    """The held-out positives of up to 8 (split, group) pairs over the same rows: sorted keys
    ``row * num_items + item``, each with a byte whose bit j says pair j holds it.

    ``seen`` (training interactions of the rows) leaves those out of the keys but not out of
    ``num_positives`` (``(L, N)`` host counts), for a protocol that never ranks them.
    ``lookup`` finds the bits of a chunk's listed items: in a dense ``rows × num_items`` byte
    table, reused from chunk to chunk, while it fits in ``table_bytes``; else a ``searchsorted``
    in the chunk's keys.
    """

    def __init__(self, matrices, users, device, seen=None, table_bytes: int = 0):
        if len(matrices) > 8:  # SPLITS × GROUPS is 6 pairs
            raise ColdbrewError(f"at most 8 (split, group) pairs at once, got {len(matrices)}")
        combined, counts = None, []
        for index, matrix in enumerate(matrices):
            matrix = canonical(matrix)[users]  # every stored entry is a positive
            counts.append(np.diff(matrix.indptr))
            bits = np.full(matrix.nnz, 1 << index, dtype=np.int64)
            matrix = sp.csr_matrix((bits, matrix.indices, matrix.indptr), shape=matrix.shape)
            combined = matrix if combined is None else combined + matrix  # disjoint bits: an or
        if seen is not None and seen.nnz:
            combined = combined - combined.multiply(seen.astype(bool))
        combined = sp.csr_matrix(combined)
        combined.eliminate_zeros()
        combined.sort_indices()
        self.num_items = combined.shape[1]
        rows = np.repeat(np.arange(len(users), dtype=np.int64), np.diff(combined.indptr))
        self.keys = _to_device(rows * self.num_items + combined.indices, device)  # sorted
        self.bits = torch.as_tensor(combined.data.astype(np.uint8), device=device)
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
        rows = torch.arange(last - first, device=items.device)[:, None]  # (B, 1)
        query = rows * self.num_items + items  # (B, W), row-major: each row reads its region
        if size <= self.table_bytes:
            if self.table is None or self.table.numel() < size:
                self.table = torch.zeros(size, dtype=bits.dtype, device=items.device)
            self.table[keys] = bits
            found = torch.take(self.table, query)
            self.table[keys] = 0  # all zeros again for the next chunk, without a memset
            return found
        if keys.numel() == 0:
            return torch.zeros(query.shape, dtype=bits.dtype, device=items.device)
        position = torch.searchsorted(keys, query).clamp_(max=keys.numel() - 1)
        return torch.where(keys[position] == query, bits[position], 0)
