"""The score-independent half of a ranking: who is evaluated, against which candidate items.

A plan is built once per (train, held-out positives, candidates) triple: the users with at
least one held-out positive, each user's training items on the candidate columns (to mask with
``-inf``) and the sorted keys of the held-out positives (to find hits with ``searchsorted``).
``coldbrew.evaluation.ranking`` scores and ranks against it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.errors import ColdbrewError


@dataclass
class Plan:
    """Everything about one (train, positives, candidates) triple that does not depend on scores."""

    users: torch.Tensor  # (N,) dataset user ids with at least one positive
    num_positives: torch.Tensor  # (N,) all of the user's held-out positives
    candidate_items: torch.Tensor | None  # (C,) item id of each candidate column; None = all
    num_candidates: int
    train_indptr: np.ndarray  # (N + 1,) host offsets into train_rows / train_columns
    train_rows: torch.Tensor  # (T,) plan row of each training interaction on a candidate
    train_columns: torch.Tensor  # (T,) its candidate column
    positive_keys: torch.Tensor  # (P,) sorted row * C + column of each positive candidate


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


def _canonical(matrix) -> sp.csr_matrix:
    """CSR without duplicate entries (a copy only when the input has duplicates or is not CSR)."""
    matrix = sp.csr_matrix(matrix)
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    return matrix


def make_plan(train, positives, candidates, device: torch.device) -> Plan:
    """The plan for ranking ``candidates`` for the users with a positive, on ``device``."""
    if not sp.issparse(train) or not sp.issparse(positives):
        raise ColdbrewError("train and positives must be scipy sparse (users × items) matrices")
    train, positives = _canonical(train), _canonical(positives)
    if train.shape != positives.shape:
        raise ColdbrewError(f"train {train.shape} and positives {positives.shape} differ in shape")
    num_items = train.shape[1]
    candidate_items = check_candidates(candidates, num_items)
    column_of_item = None
    num_candidates = num_items
    if candidate_items is not None:
        column_of_item = np.full(num_items, -1, dtype=np.int64)
        column_of_item[candidate_items] = np.arange(len(candidate_items))
        num_candidates = len(candidate_items)

    positive_counts = np.diff(positives.indptr)  # every stored entry is a positive
    users = np.flatnonzero(positive_counts)
    train_indptr, train_rows, train_columns = _rows_on_candidates(train, users, column_of_item)
    _, positive_rows, positive_columns = _rows_on_candidates(positives, users, column_of_item)
    positive_keys = np.sort(positive_rows * max(num_candidates, 1) + positive_columns)

    def to_device(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64)).to(device)

    return Plan(
        users=to_device(users),
        num_positives=to_device(positive_counts[users]),
        candidate_items=None if candidate_items is None else to_device(candidate_items),
        num_candidates=num_candidates,
        train_indptr=train_indptr,
        train_rows=to_device(train_rows),
        train_columns=to_device(train_columns),
        positive_keys=to_device(positive_keys),
    )
