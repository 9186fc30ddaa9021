"""Cold-item cross-validation's folds: the training items cut K ways, each held out in turn."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from coldbrew.config import make_config
from coldbrew.data.dataset import Dataset
from coldbrew.data.splits.folds import fold_assignment, fold_split
from coldbrew.data.splits.selection import carve_report
from coldbrew.errors import ColdbrewError, DataError
from coldbrew.evaluation.plan import cold_items_of
from coldbrew.tasks import select_and_report
from ranking_support import random_dataset


def pairs_of(matrix) -> set[tuple[int, int]]:
    coo = matrix.tocoo()
    return set(zip(coo.row.tolist(), coo.col.tolist(), strict=True))


def test_no_fold_item_trains_in_its_fold_and_every_interaction_is_somewhere():
    dataset = random_dataset()
    assignment = fold_assignment(dataset, 4, 0)
    for fold in range(4):
        cut = fold_split(dataset, 4, fold, 0)
        held = set(np.flatnonzero(assignment == fold).tolist())
        assert not held & set(cut.train.indices.tolist())  # no fold item trains in its fold
        val = cut.splits["val"]["cold"]
        assert set(val.indices.tolist()) <= held
        # every training interaction is in train or the fold's val, but for users left out
        kept = pairs_of(cut.train) | pairs_of(val)
        lost = pairs_of(dataset.train) - kept
        assert all(user not in set(cut.train.tocoo().row.tolist()) for user, _ in lost)
        assert held <= set(cut.cold_items.tolist())  # fold items count as cold
        assert set(dataset.cold_items.tolist()) <= set(cut.cold_items.tolist())
        assert list(cut.splits) == ["val"]  # a fold run evaluates its fold alone


def distinct_popularity(items: int = 20, cold: int = 3) -> Dataset:
    """Item i has i + 1 training interactions (users 0..i): every popularity differs."""
    users, columns = np.tril_indices(items)  # (u, i) with i <= u: item i taken by users i..
    train = sp.csr_matrix(
        (np.ones(len(users), dtype=np.float32), (users, items - 1 - columns)),
        shape=(items, items + cold),
    )
    return Dataset(
        "distinct", items, items + cold, train, cold_items=np.arange(items, items + cold)
    )


def test_folds_partition_the_training_items_stratified_by_popularity():
    dataset = distinct_popularity(20)
    assignment = fold_assignment(dataset, 3, 7)
    assert (assignment[:20] >= 0).all() and (assignment[20:] == -1).all()  # cold: no fold
    sizes = np.bincount(assignment[:20])
    assert sizes.max() - sizes.min() <= 1
    counts = np.bincount(dataset.train.indices, minlength=dataset.num_items)
    ranked = np.argsort(-counts[:20])  # most popular first, no ties
    for start in range(0, 18, 3):  # each block of 3 deals one item to each fold
        assert sorted(assignment[ranked[start : start + 3]].tolist()) == [0, 1, 2]


def test_the_draw_depends_on_the_fold_seed_alone():
    dataset = random_dataset()
    first = fold_assignment(dataset, 3, 0)
    assert np.array_equal(first, fold_assignment(dataset, 3, 0))
    assert not np.array_equal(first, fold_assignment(dataset, 3, 1))
    for seed in (1, 2):
        config = make_config({"data": "synthetic", "seed": seed, "folds": 3, "fold": 0})
        cut = select_and_report(dataset, config)
        assert cut.cross_validation["fold_seed"] == 0


def test_users_with_nothing_left_to_train_on_are_left_out_and_counted():
    rows = [[1, 1, 0, 0, 0], [0, 0, 1, 1, 0], [1, 0, 1, 0, 0]]
    train = sp.csr_matrix(np.array(rows, dtype=np.float32))
    dataset = Dataset("tiny", 3, 5, train, cold_items=[4])
    assignment = fold_assignment(dataset, 2, 0)
    # find a fold that takes both items of user 0 or of user 1
    for fold in range(2):
        held = set(np.flatnonzero(assignment == fold).tolist())
        alone = [user for user, items in ((0, {0, 1}), (1, {2, 3})) if items <= held]
        cut = fold_split(dataset, 2, fold, 0)
        assert cut.cross_validation["users_left_out"] == len(alone)
        rows = set(cut.splits["val"]["cold"].tocoo().row.tolist())
        assert not rows & set(alone)


def test_validation_reports_whole_and_the_final_run_has_nothing_to_choose_on():
    dataset = random_dataset()
    final = fold_split(dataset, 3, None, 0)
    assert "val" not in final.splits
    assert final.splits["report"] is dataset.splits["val"]
    assert final.splits["test"] is dataset.splits["test"]
    assert final.train is dataset.train
    assert np.array_equal(final.cold_items, dataset.cold_items)
    assert final.summary()["cross_validation"] == {"folds": 3, "fold": None, "fold_seed": 0}


def test_a_fold_is_cut_once_and_never_into_halves():
    dataset = random_dataset()
    cut = fold_split(dataset, 3, 1, 0)
    assert fold_split(cut, 3, 1, 0) is cut
    with pytest.raises(DataError, match="cannot be cut again"):
        fold_split(cut, 3, 2, 0)
    with pytest.raises(DataError, match=r"fold_candidates \d+\).*fold_candidates 20"):
        fold_split(cut, 3, 1, 0, 20)
    with pytest.raises(DataError, match="no halves"):
        carve_report(cut, 0.5, 0)
    with pytest.raises(DataError, match="folds replace them"):
        fold_split(carve_report(dataset, 0.5, 0), 3, 1, 0)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"folds": 1}, "at least 2"),
        ({"fold": 0}, "needs --folds"),
        ({"fold_candidates": 905}, "'fold_candidates' needs --folds"),
        ({"folds": 3, "fold": 3}, r"0\.\.2"),
    ],
)
def test_fold_options_are_checked_where_the_config_is_made(options, message):
    with pytest.raises(ColdbrewError, match=message):
        make_config({"data": "synthetic", **options})


def test_more_folds_than_training_items_is_refused():
    dataset = distinct_popularity(4)
    with pytest.raises(DataError, match="fewer than the 5 folds"):
        fold_assignment(dataset, 5, 0)


def test_what_a_fold_chooses_on_does_not_depend_on_the_report():
    """A fold's run sees the same training and validation whatever the data's own validation
    split holds (it becomes the report, which no fold run holds)."""
    dataset = random_dataset()
    without = dataclasses.replace(
        dataset, splits={"test": dataset.splits["test"]}, notes=list(dataset.notes)
    )
    for fold in range(3):
        a, b = fold_split(dataset, 3, fold, 0), fold_split(without, 3, fold, 0)
        assert pairs_of(a.train) == pairs_of(b.train)
        assert pairs_of(a.splits["val"]["cold"]) == pairs_of(b.splits["val"]["cold"])
        assert np.array_equal(a.cold_items, b.cold_items)


def test_a_folds_own_split_candidates_are_drawn_up_to_the_count_given():
    dataset = random_dataset()
    for fold in range(4):
        own = fold_split(dataset, 4, fold, 0, 0)
        padded = fold_split(dataset, 4, fold, 0, 16)
        mine = own.own_cold_items("val")
        assert own.split_padding == {} and cold_items_of(own, "val", "split").tolist() == (
            mine.tolist()
        )
        drawn = padded.split_padding["val"]
        assert len(mine) < 16  # the fold is smaller: something to draw
        assert len(mine) + len(drawn) == 16 == padded.cross_validation["val_candidates"]
        assert not set(drawn.tolist()) & set(mine.tolist())
        assert set(drawn.tolist()) <= set(padded.cold_items.tolist())
        candidates = cold_items_of(padded, "val", "split")
        assert candidates.tolist() == sorted(set(mine.tolist()) | set(drawn.tolist()))
        again = fold_split(dataset, 4, fold, 0, 16).split_padding["val"]
        assert again.tolist() == drawn.tolist()  # every model and run seed ranks the same items
        np.testing.assert_array_equal(padded.train.toarray(), own.train.toarray())


def test_a_fold_draws_no_more_than_there_are_and_nothing_past_its_own():
    dataset = random_dataset()
    cut = fold_split(dataset, 4, 0, 0, 10_000)  # more than every cold item
    assert cold_items_of(cut, "val", "split").tolist() == cut.cold_items.tolist()
    mine = cut.own_cold_items("val")
    assert fold_split(dataset, 4, 0, 0, len(mine)).split_padding["val"].size == 0
    with pytest.raises(DataError, match="whole number >= 0"):
        fold_split(dataset, 4, 0, 0, -1)


def test_a_runs_config_chooses_the_folds_candidates():
    dataset = random_dataset()
    options = {"data": "synthetic", "folds": 4, "fold": 1}
    padded = select_and_report(dataset, make_config(options | {"fold_candidates": 16}))
    assert padded.split_padding["val"].size > 0
    assert (
        select_and_report(dataset, make_config(options | {"fold_candidates": 0})).split_padding
        == {}
    )
    with pytest.raises(ColdbrewError, match="fold_candidates"):
        make_config(options | {"fold_candidates": -3})


def test_by_default_a_fold_reads_on_tests_scale_where_there_is_a_test_split():
    dataset = random_dataset()
    tests_count = len(dataset.own_cold_items("test"))
    cut = fold_split(dataset, 4, 2, 0)
    assert len(cold_items_of(cut, "val", "split")) == tests_count
    assert cut.cross_validation["fold_candidates"] == tests_count
    assert fold_split(cut, 4, 2, 0) is cut  # the default matches what it resolved to
    without = dataclasses.replace(dataset, splits={"val": dataset.splits["val"]})
    assert fold_split(without, 4, 2, 0).split_padding == {}
