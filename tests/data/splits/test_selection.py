"""Honest selection: val's items cut into a select half (``val``) and a report half."""

from __future__ import annotations

import numpy as np
import pytest

from coldbrew.config import make_config
from coldbrew.data.splits.selection import carve_report, report_items, val_items
from coldbrew.errors import DataError
from coldbrew.tasks import select_and_report
from ranking_support import random_dataset


def items_of(groups: dict) -> set[int]:
    return {int(item) for matrix in groups.values() for item in matrix.indices}


def pairs_of(matrix) -> set[tuple[int, int]]:
    coo = matrix.tocoo()
    return set(zip(coo.row.tolist(), coo.col.tolist(), strict=True))


def test_no_item_in_both_halves_and_nothing_lost():
    dataset = random_dataset()
    carved = carve_report(dataset, 0.5, 0)
    select, report = carved.splits["val"], carved.splits["report"]
    assert not items_of(select) & items_of(report)
    for group, whole in dataset.splits["val"].items():  # every interaction in exactly one half
        halves = pairs_of(select[group]), pairs_of(report[group])
        assert not halves[0] & halves[1]
        assert halves[0] | halves[1] == pairs_of(whole)
    assert carved.splits["test"] is dataset.splits["test"]  # test untouched
    assert "report" not in dataset.splits  # the input is not changed


def test_stratified_half_of_cold_and_half_of_warm_items():
    dataset = random_dataset()
    items = val_items(dataset)
    cold, warm = items[dataset.cold_mask[items]], items[~dataset.cold_mask[items]]
    chosen = report_items(dataset, 0.5, 0)
    # floor(0.5 * n + 0.5) of each kind
    assert np.isin(chosen, cold).sum() == int(np.floor(len(cold) / 2 + 0.5))
    assert np.isin(chosen, warm).sum() == int(np.floor(len(warm) / 2 + 0.5))
    carved = carve_report(dataset, 0.5, 0)
    for half in ("val", "report"):
        assert set(carved.splits[half]) == {"all", "warm", "cold"}  # both kinds in both halves
        counts = carved.selection[half]
        assert counts["cold"]["items"] + counts["warm"]["items"] == counts["all"]["items"]
    assert carved.selection["report"]["cold"]["items"] == np.isin(chosen, cold).sum()


def test_deterministic_and_independent_of_the_run_seed():
    first = report_items(random_dataset(), 0.5, 0)
    assert np.array_equal(first, report_items(random_dataset(), 0.5, 0))
    assert not np.array_equal(first, report_items(random_dataset(), 0.5, 1))
    # the same data under two runs of other seeds and models: the same halves (the selection
    # seed alone draws them)
    halves = [
        items_of(select_and_report(random_dataset(), make_config(layer)).splits["report"])
        for layer in ({"seed": 1}, {"seed": 7, "model": "knn"})
    ]
    assert halves[0] == halves[1] == set(first.tolist())


def test_share_zero_leaves_the_data_unchanged_and_records_it():
    dataset = random_dataset()
    carved = carve_report(dataset, 0.0, 0)
    assert set(carved.splits) == {"val", "test"}
    for group, matrix in dataset.splits["val"].items():
        assert pairs_of(carved.splits["val"][group]) == pairs_of(matrix)
    assert carved.selection["report_share"] == 0.0 and carved.selection["report"] == {}


def test_carving_twice_the_same_way_is_a_no_op_and_another_way_refused():
    carved = carve_report(random_dataset(), 0.5, 0)
    assert carve_report(carved, 0.5, 0) is carved
    with pytest.raises(DataError, match="cannot be cut again"):
        carve_report(carved, 0.3, 0)
    with pytest.raises(DataError, match="report_share"):
        carve_report(random_dataset(), 1.0, 0)


def test_a_kind_with_two_items_gives_one_to_each_half():
    dataset = random_dataset()
    share = 0.01  # rounds to 0 items of each kind: each half still keeps one
    chosen = report_items(dataset, share, 0)
    items = val_items(dataset)
    assert np.isin(chosen, items[dataset.cold_mask[items]]).sum() == 1
    assert np.isin(chosen, items[~dataset.cold_mask[items]]).sum() == 1


def test_summary_shows_both_halves():
    summary = carve_report(random_dataset(), 0.5, 0).summary()
    assert {"val_cold", "report_cold", "test_cold"} <= set(summary)
    assert summary["report_cold"]["items"] > 0
    assert summary["selection"] == {"report_share": 0.5, "selection_seed": 0}


def test_a_kind_with_one_item_stays_in_the_select_half():
    """Selection needs val: an item alone of its kind is never moved to report."""
    import scipy.sparse as sp

    dataset = random_dataset()
    cold_item = int(dataset.cold_items[0])
    only = sp.csr_matrix(dataset.splits["val"]["cold"].shape, dtype=np.float32).tolil()
    only[7, cold_item] = 1.0
    dataset.splits["val"] = {"cold": only.tocsr()}
    carved = carve_report(dataset, 0.9, 0)
    assert "report" not in carved.splits
    assert carved.splits["val"]["cold"].nnz == 1


def test_options_default_to_a_half_and_the_original_protocol_keeps_val_whole():
    assert make_config({}).report_share == 0.5 and make_config({}).selection_seed == 0
    assert make_config({"protocol": "original"}).report_share == 0.0
    given = make_config({"protocol": "original", "report_share": 0.5})
    assert given.report_share == 0.5  # given options win over the protocol's
