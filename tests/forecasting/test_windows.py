"""The time split's rule, and windows gathered with tensor ops against a plain loop."""

from __future__ import annotations

import pytest
import torch

from coldbrew.data.forecast.windows import TimeSplit, all_windows, gather_windows, sample_windows
from coldbrew.errors import ColdbrewError, DataError


def test_ml100k_default_split():
    # 215 days, window 30, horizon 7, 28 validation and 28 test days:
    # training days 0..158 (159 = 215 - 56), train origins 30..152 (targets up to day 158),
    # val origins 159..180 (targets 159..186), test origins 187..208 (targets 187..214)
    split = TimeSplit(215, window=30, horizon=7, val_days=28, test_days=28)
    assert (split.train_end, split.val_end) == (159, 187)
    assert split.origins("train") == range(30, 153)
    assert split.origins("val") == range(159, 181)
    assert split.origins("test") == range(187, 209)
    assert (len(split.origins("train")), len(split.origins("val"))) == (123, 22)


@pytest.mark.parametrize(
    ("num_days", "window", "horizon", "val_days", "test_days"),
    [(215, 30, 7, 28, 28), (60, 7, 3, 10, 5), (40, 14, 1, 1, 1), (100, 20, 10, 10, 30)],
)
def test_targets_never_overlap_and_stay_in_range(num_days, window, horizon, val_days, test_days):
    split = TimeSplit(num_days, window, horizon, val_days, test_days)
    targets = {
        name: {t + h for t in split.origins(name) for h in range(horizon)}
        for name in ("train", "val", "test")
    }
    assert max(targets["train"]) < min(targets["val"]) <= max(targets["val"]) < min(targets["test"])
    assert max(targets["test"]) == num_days - 1  # the last day is forecast
    assert targets["val"] == set(range(split.train_end, split.val_end))  # every day covered
    assert min(split.origins("train")) - window == 0  # inputs start at day 0, never before


def test_too_few_days_explains_the_need():
    with pytest.raises(DataError, match="40 days are too few.*need 42"):
        TimeSplit(40, window=14, horizon=7, val_days=14, test_days=7)
    with pytest.raises(ColdbrewError, match="must hold one horizon"):
        TimeSplit(100, window=14, horizon=7, val_days=3, test_days=7)
    with pytest.raises(ColdbrewError, match="unknown split"):
        TimeSplit(100, 14, 7, 7, 7).origins("dev")


def test_gather_matches_a_plain_loop():
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(5, 50, generator=generator)
    window, horizon = 8, 3
    series = torch.randint(0, 5, (40,), generator=generator)
    origins = torch.randint(window, 50 - horizon + 1, (40,), generator=generator)
    inputs, targets = gather_windows(values, series, origins, window, horizon)
    for row, (s, t) in enumerate(zip(series.tolist(), origins.tolist(), strict=True)):
        assert torch.equal(
            inputs[row], torch.tensor([values[s, t - window + k] for k in range(window)])
        )
        assert torch.equal(targets[row], torch.tensor([values[s, t + h] for h in range(horizon)]))
    # the extreme origins: the first day and the last day are reachable
    first, last = gather_windows(
        values, torch.tensor([1, 1]), torch.tensor([window, 47]), window, horizon
    )
    assert torch.equal(first[0], values[1, :window]) and torch.equal(last[1], values[1, 47:])


def test_sample_index_runs_series_major():
    origins = range(10, 14)  # 4 origins per series
    series, days = sample_windows(3, origins, torch.arange(12))
    expected = [(s, t) for s in range(3) for t in origins]  # the loop order
    assert list(zip(series.tolist(), days.tolist(), strict=True)) == expected
    every_series, every_day = all_windows(3, origins)
    assert torch.equal(every_series, series) and torch.equal(every_day, days)
    picked = sample_windows(3, origins, torch.tensor([5, 0, 11]))
    assert [part.tolist() for part in picked] == [[1, 0, 2], [11, 10, 13]]
