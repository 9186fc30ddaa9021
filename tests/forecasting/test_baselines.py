"""Baselines against forecasts worked out by hand."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
import torch

from coldbrew.errors import ColdbrewError
from coldbrew.models.forecast.baselines import (
    default_statistical_model,
    median,
    moving_average,
    naive,
    seasonal_naive,
    simple_baseline,
    statistical_forecasts,
    statistical_model_factory,
)

# two windows of 10 days; the last 7 days of row 0 are Mon..Sun = 1..7
INPUTS = torch.tensor(
    [
        [9.0, 9, 9, 1, 2, 3, 4, 5, 6, 7],
        [0.0, 0, 0, 0, 0, 0, 0, 0, 4, 2],
    ]
)


def test_naive_repeats_the_last_day():
    assert naive(INPUTS, 3).tolist() == [[7, 7, 7], [2, 2, 2]]


def test_seasonal_naive_repeats_last_week():
    # step h takes input column 10 - 7 + (h - 1) % 7: steps 1..9 -> columns 3..9, 3, 4
    # row 0: 1 2 3 4 5 6 7 1 2 (next Mon = last Mon); row 1: 0 0 0 0 0 4 2 0 0
    assert seasonal_naive(INPUTS, 9).tolist() == [
        [1, 2, 3, 4, 5, 6, 7, 1, 2],
        [0, 0, 0, 0, 0, 4, 2, 0, 0],
    ]
    # season 2: step h takes column 8 + (h - 1) % 2: row 0 -> 6 7 6, row 1 -> 4 2 4
    assert seasonal_naive(INPUTS, 3, season=2).tolist() == [[6, 7, 6], [4, 2, 4]]


def test_moving_average_of_the_last_days():
    # length 7, row 0: (1 + ... + 7) / 7 = 28 / 7 = 4; row 1: (4 + 2) / 7 = 0.857
    # length 3, row 0: (5 + 6 + 7) / 3 = 6; row 1: (0 + 4 + 2) / 3 = 2
    assert moving_average(INPUTS, 2).flatten().tolist() == pytest.approx([4, 4, 6 / 7, 6 / 7])
    assert moving_average(INPUTS, 2, length=3).tolist() == [[6, 6], [2, 2]]


def test_median_of_the_window():
    # row 0 sorted: 1 2 3 4 5 6 7 9 9 9 -> middle values 5 and 6 -> 5.5
    # row 1 sorted: 0 0 0 0 0 0 0 0 2 4 -> 0; an odd window [3, 1, 2] -> 2
    assert median(INPUTS, 2).tolist() == [[5.5, 5.5], [0, 0]]
    assert median(torch.tensor([[3, 1, 2]]), 1).tolist() == [[2.0]]


def test_named_dispatch_and_bad_requests():
    assert torch.equal(simple_baseline("naive", INPUTS, 2), naive(INPUTS, 2))
    assert torch.equal(simple_baseline("median", INPUTS, 2), median(INPUTS, 2))
    assert torch.equal(
        simple_baseline("moving_average", INPUTS, 2, length=3), moving_average(INPUTS, 2, 3)
    )
    with pytest.raises(ColdbrewError, match="unknown baseline 'drift'"):
        simple_baseline("drift", INPUTS, 2)
    with pytest.raises(ColdbrewError, match="window of at least 7"):
        seasonal_naive(INPUTS[:, :5], 2)
    with pytest.raises(ColdbrewError, match="length must be 1..10"):
        moving_average(INPUTS, 2, length=11)


def test_statistical_default_per_kind():
    assert default_statistical_model("item") == "croston"
    assert default_statistical_model("genre") == default_statistical_model("total") == "auto_ets"
    with pytest.raises(ColdbrewError, match="unknown statistical model 'arima'"):
        statistical_model_factory("arima")


def test_missing_statsforecast_says_how_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_statsforecast(name, *args, **kwargs):
        if name.startswith("statsforecast"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_statsforecast)
    with pytest.raises(ColdbrewError, match=r"pip install 'coldbrew\[stats\]'"):
        statistical_model_factory("auto_ets")


@pytest.mark.parametrize("model", ["auto_ets", "croston"])
def test_statistical_models_fit_each_window_on_its_own_history(model):
    pytest.importorskip("statsforecast")
    # series 0 is constant 5 up to day 20, then 50: a model fitted on days 0..t-1 with t <= 20
    # must forecast 5 (it never saw the jump); series 1 is all zero: forecast 0
    counts = np.zeros((2, 30), dtype=np.int64)
    counts[0, :20], counts[0, 20:] = 5, 50
    forecasts = statistical_forecasts(
        counts, np.array([0, 1, 0]), np.array([14, 14, 20]), horizon=3, model=model
    )
    assert forecasts.shape == (3, 3)
    assert forecasts[0] == pytest.approx([5, 5, 5], abs=1e-6)
    assert forecasts[1] == pytest.approx([0, 0, 0], abs=1e-9)
    assert forecasts[2] == pytest.approx([5, 5, 5], abs=1e-6)


def test_auto_ets_recovers_a_clean_weekly_pattern():
    pytest.importorskip("statsforecast")
    # four weeks of 1..7: a seasonal model must continue the pattern, as seasonal naive would
    week = np.arange(1, 8)
    counts = np.tile(week, 4)[None, :]
    forecasts = statistical_forecasts(counts, np.array([0]), np.array([28]), 7, "auto_ets")
    assert forecasts[0] == pytest.approx(week, abs=0.05)
