"""Mean ± std over seeds against hand-computed values; seconds to the best epoch."""

from __future__ import annotations

import math

import pytest

from coldbrew.research.summary import aggregate, format_mean_std, mean_std, run_summary


def test_mean_and_sample_std_by_hand():
    # values 0.10, 0.12, 0.14: mean 0.36 / 3 = 0.12; deviations -0.02, 0, 0.02;
    # squares 0.0004 + 0 + 0.0004 = 0.0008; / (3 - 1) = 0.0004; sqrt = 0.02
    result = mean_std([0.10, 0.12, 0.14])
    assert result["mean"] == pytest.approx(0.12)
    assert result["std"] == pytest.approx(0.02)
    assert result["n"] == 3 and result["values"] == [0.10, 0.12, 0.14]


def test_std_of_one_value_is_none_and_non_numbers_are_left_out():
    assert mean_std([5.0]) == {"mean": 5.0, "std": None, "n": 1, "values": [5.0]}
    # None (a NaN that JSON wrote as null) is skipped: mean of 1 and 3 = 2, std sqrt(2)
    result = mean_std([1.0, None, 3.0])
    assert result["mean"] == 2.0 and result["n"] == 2
    assert result["std"] == pytest.approx(math.sqrt(2))
    assert mean_std([None, None])["mean"] is None


def test_aggregate_keeps_the_nesting_of_each_summary():
    first = {"metrics": {"val": {"cold": {"recall@20": 0.1}}}, "best_epoch": 2}
    second = {"metrics": {"val": {"cold": {"recall@20": 0.3}}}, "best_epoch": 6}
    third = {"metrics": {"val": {"cold": {"recall@20": 0.2}}}, "best_epoch": 4}
    merged = aggregate([first, second, third])
    recall = merged["metrics"]["val"]["cold"]["recall@20"]
    # mean (0.1 + 0.3 + 0.2) / 3 = 0.2; squares 0.01 + 0.01 + 0 = 0.02; / 2 = 0.01; std 0.1
    assert recall["mean"] == pytest.approx(0.2) and recall["std"] == pytest.approx(0.1)
    assert recall["values"] == [0.1, 0.3, 0.2]
    # best epochs 2, 6, 4: mean 4; squares 4 + 4 + 0 = 8; / 2 = 4; std 2
    assert merged["best_epoch"]["mean"] == 4 and merged["best_epoch"]["std"] == pytest.approx(2)


def test_a_metric_missing_from_one_seed_counts_as_missing_there():
    merged = aggregate([{"metrics": {"test": {"all": {"ndcg@20": 0.5}}}}, {"metrics": {}}])
    assert merged["metrics"]["test"]["all"]["ndcg@20"]["values"] == [0.5, None]
    assert merged["metrics"]["test"]["all"]["ndcg@20"]["n"] == 1


def test_seconds_to_best_is_training_plus_validation_up_to_the_best_epoch():
    results = {
        "best_epoch": 2,
        "epochs_run": 3,
        "metrics": {},
        "timing": {"train_seconds": 30.0},
        "history": [
            {"epoch": 1, "train_seconds": 10.0, "eval_seconds": 1.0},
            {"epoch": 2, "train_seconds": 20.0, "eval_seconds": 2.5},
            {"epoch": 3, "train_seconds": 30.0, "eval_seconds": 4.0},
        ],
    }
    summary = run_summary(results)
    assert summary["timing"]["seconds_to_best"] == 22.5  # 20.0 + 2.5
    assert summary["timing"]["train_seconds"] == 30.0


def test_format_mean_std():
    assert format_mean_std(mean_std([0.10, 0.12, 0.14])) == "0.1200 ± 0.0200"
    assert format_mean_std(mean_std([3.0]), 1) == "3.0"
    assert format_mean_std(0.5) == "0.5000"
    assert format_mean_std(None) == "-"
