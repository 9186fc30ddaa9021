"""Honest selection: validation cut by items into a half that chooses and a half that reports.

Every choice a run or a study makes (the best epoch and early stopping, a search's objective,
a blend's weights, a preset) reads the split ``"val"``; every figure a table reports reads
``"report"`` (and ``"test"`` where the data has one). ``carve_report`` makes the two from a
loader's ``"val"``: the validation interactions of a seeded share of val's *items* move to a new
split ``"report"`` with the same groups (all, warm, cold), so no item's validation interactions
are in both halves (a user may be: items decide). Cold and warm val items are drawn
separately, so both halves hold both kinds where val does.

The draw depends on ``selection_seed`` alone (not on a run's seed or model): every seed and
every model of a table is reported on the same items. ``report_share=0`` carves nothing: val
is then used both to choose and to report, and tables say so.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from coldbrew.data.dataset import Dataset
from coldbrew.errors import DataError

DEFAULT_REPORT_SHARE = 0.5
DEFAULT_SELECTION_SEED = 0


def check_share(share: float) -> float:
    share = float(share)
    if not 0.0 <= share < 1.0:
        raise DataError(f"report_share must be at least 0 and below 1, got {share}")
    return share


def val_items(dataset: Dataset) -> np.ndarray:
    """Sorted ids of every item with a validation interaction (any group)."""
    held = [matrix.indices for matrix in dataset.splits.get("val", {}).values()]
    return np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *held]).astype(np.int64))


def report_items(dataset: Dataset, share: float, seed: int) -> np.ndarray:
    """Sorted ids of the val items that ``report`` gets: ``share`` of val's cold items and
    ``share`` of its warm items (each rounded; the select half always keeps one of a kind val
    has, and the report half gets one where there are two or more), drawn by ``seed``."""
    items = val_items(dataset)
    rng = np.random.default_rng([int(seed), 0x5E1EC7])
    chosen = []
    for kind in (dataset.cold_mask[items], ~dataset.cold_mask[items]):  # cold first, then warm
        pool = items[kind]
        count = min(int(np.floor(share * len(pool) + 0.5)), len(pool) - 1)  # select keeps one
        if share > 0 and len(pool) >= 2:
            count = max(count, 1)
        chosen.append(rng.permutation(pool)[:count])
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def _columns(matrix: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
    """``matrix`` with only the entries whose column is marked in ``keep`` (CSR, same shape)."""
    coo = matrix.tocoo()
    inside = keep[coo.col]
    out = sp.csr_matrix((coo.data[inside], (coo.row[inside], coo.col[inside])), shape=matrix.shape)
    out.sort_indices()
    return out


def half_counts(groups: dict[str, sp.csr_matrix]) -> dict[str, dict[str, int]]:
    """``{group: {"items", "users", "interactions"}}`` of one half."""
    return {
        group: {
            "items": int(len(np.unique(matrix.indices))),
            "users": int(np.count_nonzero(np.diff(matrix.indptr))),
            "interactions": int(matrix.nnz),
        }
        for group, matrix in groups.items()
    }


def carve_report(
    dataset: Dataset, share: float = DEFAULT_REPORT_SHARE, seed: int = DEFAULT_SELECTION_SEED
) -> Dataset:
    """A copy of ``dataset`` whose ``"val"`` keeps the selection half of val's items and whose
    new ``"report"`` holds the rest (see the module's docstring); ``dataset.selection`` records
    the share, the seed and both halves' counts. A dataset carved already is returned as it is
    when carved the same way, refused otherwise; ``share=0`` moves nothing."""
    from coldbrew.data.dataset import check_seed

    share, seed = check_share(share), check_seed(seed)
    if dataset.cross_validation is not None:
        raise DataError(f"{dataset.name} is a fold of a cross-validation: no halves are cut")
    if dataset.selection is not None:
        done = (dataset.selection["report_share"], dataset.selection["selection_seed"])
        if done == (share, seed):
            return dataset
        raise DataError(
            f"{dataset.name} was cut into select/report with report_share {done[0]}, "
            f"selection_seed {done[1]}; it cannot be cut again with {share}, {seed}"
        )
    splits = dict(dataset.splits)
    val = splits.get("val", {})
    report: dict[str, sp.csr_matrix] = {}
    if share > 0 and val:
        keep = np.zeros(dataset.num_items, dtype=bool)
        keep[report_items(dataset, share, seed)] = True
        halves = {g: (_columns(m, ~keep), _columns(m, keep)) for g, m in val.items()}
        val = {group: pair[0] for group, pair in halves.items() if pair[0].nnz}
        report = {group: pair[1] for group, pair in halves.items() if pair[1].nnz}
        splits["val"] = val
        if report:
            splits["report"] = report
        if not val:
            splits.pop("val")
    selection = {
        "report_share": share,
        "selection_seed": seed,
        "val": half_counts(val),
        "report": half_counts(report),
    }
    return dataclasses.replace(
        dataset, splits=splits, notes=list(dataset.notes), selection=selection
    )
