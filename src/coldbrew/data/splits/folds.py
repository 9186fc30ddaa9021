"""Cold-item cross-validation: the training items cut into K folds, each held out in turn.

For fold ``k`` the training interactions of the fold's items leave the training set and become
the run's ``"val"`` split (group ``cold``): the items the run chooses on (its best epoch, a
search's objective, a blend's weights). The fold's items then count as cold, so both ranking
conventions hold: ``split`` ranks the fold's own items; ``all`` ranks them with every other item
that has no training interaction in that fold (the data's own cold items too). A user whose
every training interaction is on the fold's items has nothing left to be known by: such users
are left out of the fold's evaluation, and counted in a note.

A fold holds fewer items than the test split it stands in for (on ml-1m-coldstart with 5 folds,
about 360 against 905), and an own-split score depends on how many items are ranked. With
``fold_candidates=N`` a fold's own-split ranks its items among other cold items drawn at random
(the same draw for every model and run seed of a fold) up to N in all; give test's count, and a
fold reads on test's scale. That is the default where the data has a test split (``None``);
``0`` ranks a fold's own items alone.

The folds are stratified by popularity: the training items sorted by their training
interactions (ties in a seeded random order) fall in blocks of K, and each block deals one item
to each fold in a seeded random order, so every fold holds the same mix of popular and rare
items. The draw depends on ``fold_seed`` alone: every run seed and every model of a table is
cross-validated on the same folds.

The data's own validation split (every item of it) becomes ``"report"``, read by no choice, and
``"test"`` stays. A fold's run evaluates only its fold (its report would cost time and tell
nothing about the fold); the final run (``fold=None``) trains on every training item, has no
``"val"`` (it chooses nothing: ``coldbrew.training.trainer`` then keeps its last epoch) and
reports on ``"report"`` and ``"test"``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from coldbrew.data.dataset import Dataset, check_seed
from coldbrew.data.splits.selection import half_counts
from coldbrew.errors import DataError

DEFAULT_FOLD_SEED = 0


def check_folds(folds: int, fold: int | None) -> None:
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise DataError(f"folds must be a whole number of at least 2, got {folds!r}")
    if fold is not None and not 0 <= fold < folds:
        raise DataError(f"fold must be 0..{folds - 1} with {folds} folds, got {fold!r}")


def fold_assignment(dataset: Dataset, folds: int, fold_seed: int) -> np.ndarray:
    """Each item's fold (``-1`` for an item with no training interaction), stratified by
    popularity as the module's docstring says, drawn by ``fold_seed``."""
    check_folds(folds, None)
    counts = np.bincount(dataset.train.indices, minlength=dataset.num_items)
    items = np.flatnonzero(counts > 0)
    if len(items) < folds:
        raise DataError(
            f"{dataset.name}: {len(items)} items have training interactions, fewer than the "
            f"{folds} folds; give --folds {max(2, len(items))} or fewer"
        )
    rng = np.random.default_rng([check_seed(fold_seed), 0xF01D])
    ranked = items[np.lexsort((rng.random(len(items)), -counts[items]))]  # most popular first
    blocks = -(-len(ranked) // folds)
    deal = np.argsort(rng.random((blocks, folds)), axis=1).ravel()[: len(ranked)]  # (blocks*K,)
    assignment = np.full(dataset.num_items, -1, dtype=np.int64)
    assignment[ranked] = deal
    return assignment


def _split_columns(matrix: sp.csr_matrix, held: np.ndarray) -> tuple[sp.csr_matrix, ...]:
    """``matrix``'s entries outside and inside the columns marked in ``held`` (CSR each)."""
    coo = matrix.tocoo()
    inside = held[coo.col]
    parts = []
    for keep in (~inside, inside):
        part = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=matrix.shape)
        part.sort_indices()
        parts.append(part)
    return tuple(parts)


def check_fold_candidates(candidates: int | None) -> int | None:
    if candidates is not None and (
        isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 0
    ):
        raise DataError(f"fold_candidates must be a whole number >= 0, got {candidates!r}")
    return candidates


def already_cut(dataset: Dataset, record: dict) -> bool:
    """Whether ``dataset`` is already the fold ``record`` asks for (``fold_split``'s record
    before the cut); a dataset cut otherwise is refused."""
    done = dataset.cross_validation
    if done is None:
        return False
    if {key: done.get(key) for key in record} == record:
        return True
    asked = f"fold_candidates {record['fold_candidates']}" if "fold_candidates" in record else ""
    raise DataError(
        f"{dataset.name} is fold {done['fold']} of {done['folds']} (fold seed "
        f"{done['fold_seed']}, fold_candidates {done.get('fold_candidates', 0)}); it cannot be "
        f"cut again as fold {record['fold']} of {record['folds']} (fold seed "
        f"{record['fold_seed']}{', ' + asked if asked else ''})"
    )


def fold_split(
    dataset: Dataset,
    folds: int,
    fold: int | None,
    fold_seed: int = DEFAULT_FOLD_SEED,
    candidates: int | None = None,
) -> Dataset:
    """A copy of ``dataset`` for fold ``fold`` of ``folds`` (``None``: the final run), as the
    module's docstring says; ``dataset.cross_validation`` records the folds and the counts.
    ``candidates``: how many cold items a fold's val ranks under own-split candidates, its own
    and others drawn (``padding``; 0: its own alone; None: as many as test's own cold items,
    0 when the data has no test split). A dataset split the same way already is returned as it
    is; split otherwise, refused."""
    check_folds(folds, fold)
    fold_seed = check_seed(fold_seed)
    record = {"folds": folds, "fold": fold, "fold_seed": fold_seed}
    if fold is not None and check_fold_candidates(candidates) is not None:
        record["fold_candidates"] = candidates
    if already_cut(dataset, record):
        return dataset
    if dataset.selection is not None:
        raise DataError(f"{dataset.name} was cut into select/report halves; folds replace them")
    splits = {name: groups for name, groups in dataset.splits.items() if name == "test"}
    if dataset.splits.get("val"):
        splits["report"] = dataset.splits["val"]
    train, cold_items, notes = dataset.train, dataset.cold_items, list(dataset.notes)
    split_padding = {}
    assignment = fold_assignment(dataset, folds, fold_seed)
    record["items_per_fold"] = np.bincount(assignment[assignment >= 0], minlength=folds).tolist()
    if fold is not None:
        held = assignment == fold
        train, held_out = _split_columns(dataset.train, held)
        known = np.diff(train.indptr) > 0  # users with a training interaction left
        left_out = int(np.count_nonzero((np.diff(held_out.indptr) > 0) & ~known))
        held_out = sp.diags(known.astype(np.float32)) @ held_out  # their rows emptied
        held_out = sp.csr_matrix(held_out)
        held_out.eliminate_zeros()
        held_out.sort_indices()
        cold_items = np.union1d(cold_items, np.flatnonzero(held))
        splits = {"val": {"cold": held_out}}  # a fold's run evaluates its fold alone
        own = np.unique(held_out.indices)
        if candidates is None:  # test's scale, where the data has a test split
            candidates = len(dataset.own_cold_items("test"))
        if candidates:
            split_padding["val"] = padding(own, cold_items, candidates, [fold_seed, fold, 0xCA4D])
        val_candidates = len(own) + len(split_padding.get("val", ()))
        record |= {"val": half_counts(splits["val"]), "users_left_out": left_out}
        record |= {"fold_candidates": candidates, "val_candidates": val_candidates}
        notes.append(
            f"fold {fold} of {folds} (fold seed {fold_seed}): {int(held.sum())} training items "
            f"held out as cold, {held_out.nnz} of their interactions in val"
            + (
                f"; {left_out} users with no other training interaction left out"
                if left_out
                else ""
            )
            + (
                f"; own-split ranks them among {val_candidates} cold items (fold_candidates)"
                if val_candidates > len(own)
                else ""
            )
        )
    record["report"] = half_counts(splits.get("report", {}))
    return dataclasses.replace(
        dataset,
        train=train,
        cold_items=cold_items,
        splits=splits,
        notes=notes,
        cross_validation=record,
        split_padding=split_padding,
    )


def padding(own: np.ndarray, cold_items: np.ndarray, total: int, seed) -> np.ndarray:
    """Cold items other than ``own`` (a fold's items with a positive), drawn by ``seed`` so that
    the two together are ``total`` (as many as there are, short of it); none when ``own`` is as
    many already (sorted ids)."""
    others = np.setdiff1d(cold_items, own)
    count = min(max(total - len(own), 0), len(others))
    return np.sort(np.random.default_rng(seed).choice(others, size=count, replace=False))
