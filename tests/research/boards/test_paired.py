"""Which lead is real: the corrected resampled t-test over folds x seeds, by hand."""

from __future__ import annotations

import math

import pytest

from coldbrew.research.boards.paired import corrected_interval, paired_leads, verdict


def test_the_corrected_interval_by_hand():
    # d = 0.01, 0.02, 0.03, 0.00, 0.04: mean 0.02; deviations -0.01, 0, 0.01, -0.02, 0.02
    # s^2 = (1 + 0 + 1 + 4 + 4) e-4 / 4 = 2.5e-4; 5 folds: 1/J + 1/(K-1) = 1/5 + 1/4 = 0.45
    # var(mean) = 0.45 * 2.5e-4 = 1.125e-4, se = 0.0106066; t(0.975, 4) = 2.7764451
    # half = 0.0294488: [-0.0094488, 0.0494488], which holds 0: level
    interval = corrected_interval([0.01, 0.02, 0.03, 0.00, 0.04], folds=5)
    assert interval["mean"] == pytest.approx(0.02)
    assert interval["low"] == pytest.approx(-0.0094488, abs=1e-6)
    assert interval["high"] == pytest.approx(0.0494488, abs=1e-6)
    assert interval["n"] == 5
    assert verdict(interval) == "level"
    # the plain paired t-test (se = sqrt(2.5e-4 / 5) = 0.0070711, half 0.0196324) would have
    # called it a lead: [0.0003676, 0.0396324]; the folds' overlap is what the correction adds


def test_a_steady_lead_holds():
    # d = 0.049, 0.051, 0.049, 0.051: mean 0.05, s^2 = 4e-6 / 3 = 1.3333e-6; 4 folds:
    # 1/4 + 1/3 = 0.58333, var(mean) = 7.7778e-7, se = 8.8192e-4; t(0.975, 3) = 3.1824463;
    # half = 0.0028067: [0.0471933, 0.0528067]
    interval = corrected_interval([0.049, 0.051, 0.049, 0.051], folds=4)
    assert interval["low"] == pytest.approx(0.0471933, abs=1e-6)
    assert interval["high"] == pytest.approx(0.0528067, abs=1e-6)
    assert verdict(interval) == "leads"


def test_one_pair_has_no_spread_and_never_leads():
    interval = corrected_interval([0.3], folds=5)
    assert interval["low"] == -math.inf and verdict(interval) == "level"


def test_the_best_row_against_each_other_on_the_pairs_both_have():
    scores = {
        "a": {(0, 1): 0.30, (1, 1): 0.32, (2, 1): 0.31},
        "b": {(0, 1): 0.20, (1, 1): 0.21, (2, 1): 0.19},
        "c": {(0, 1): 0.29, (1, 1): 0.33, (2, 1): 0.30},
    }
    leads = paired_leads(scores, folds=3)
    assert leads["best"] == "a"
    assert set(leads["versus"]) == {"b", "c"}
    assert leads["versus"]["b"]["verdict"] == "leads"
    assert leads["versus"]["c"]["verdict"] == "level"
    assert leads["versus"]["b"]["mean"] == pytest.approx((0.10 + 0.11 + 0.12) / 3)
