"""Forecast metrics against hand-computed values (arithmetic in the comments) and a naive loop."""

from __future__ import annotations

import math

import pytest
import torch

from coldbrew.errors import DataError
from coldbrew.evaluation.forecast_metrics import METRICS, forecast_metrics, seasonal_scale


def metrics_of(forecasts, targets, scale):
    return forecast_metrics(torch.tensor(forecasts), torch.tensor(targets), torch.tensor(scale))


def test_two_windows_by_hand():
    # f = [[3, 1], [2, 4]], y = [[1, 2], [2, 8]], scale = [2, 4]
    # e = [[2, -1], [0, -4]], |e| = [[2, 1], [0, 4]]
    # MAE  all (2 + 1 + 0 + 4) / 4 = 1.75; step 1 (2 + 0) / 2 = 1; step 2 (1 + 4) / 2 = 2.5
    # RMSE all sqrt((4 + 1 + 0 + 16) / 4) = sqrt(5.25); step 1 sqrt(4 / 2); step 2 sqrt(17 / 2)
    # MASE |e| / scale = [[1, 0.5], [0, 1]]: all 2.5 / 4 = 0.625; steps 0.5 and 0.75
    # sMAPE 200 |e| / (|y| + |f|) = [[400/4, 200/3], [0/4, 800/12]] = [[100, 66.67], [0, 66.67]]
    #       all (100 + 66.67 + 0 + 66.67) / 4 = 58.33; step 1 (100 + 0) / 2 = 50; step 2 66.67
    result = metrics_of([[3.0, 1], [2, 4]], [[1.0, 2], [2, 8]], [2.0, 4])
    assert result["all"] == pytest.approx(
        {"mae": 1.75, "rmse": math.sqrt(5.25), "mase": 0.625, "smape": 175 / 3}
    )
    assert result["step_1"] == pytest.approx(
        {"mae": 1.0, "rmse": math.sqrt(2), "mase": 0.5, "smape": 50.0}
    )
    assert result["step_2"] == pytest.approx(
        {"mae": 2.5, "rmse": math.sqrt(8.5), "mase": 0.75, "smape": 200 / 3}
    )
    assert result["counts"] == {
        "windows": 2.0,
        "mase_excluded_windows": 0.0,
        "smape_excluded_windows": 0.0,
    }
    assert list(result) == ["all", "step_1", "step_2", "counts"]


def test_zero_scale_and_all_zero_truth_windows_are_left_out_and_counted():
    # f = [[0, 1], [0, 0], [2, 2]], y = [[0, 0], [0, 0], [0, 3]], scale = [1, 0, 2]
    # |e| = [[0, 1], [0, 0], [2, 1]]: MAE all 4 / 6 (every window counts for MAE)
    # MASE without window 1 (scale 0): [[0, 1] / 1, [2, 1] / 2] = [[0, 1], [1, 0.5]] -> 2.5 / 4
    # sMAPE without windows 0 and 1 (truth all zero): window 2 points 200 * 2 / (0 + 2) = 200
    #       and 200 * 1 / (3 + 2) = 40 -> all 120, step 1 200, step 2 40
    result = metrics_of([[0.0, 1], [0, 0], [2, 2]], [[0.0, 0], [0, 0], [0, 3]], [1.0, 0, 2])
    assert result["all"]["mae"] == pytest.approx(4 / 6)
    assert result["all"]["mase"] == pytest.approx(0.625)
    assert result["step_1"]["mase"] == pytest.approx(0.5)  # (0 + 1) / 2
    assert result["all"]["smape"] == pytest.approx(120.0)
    assert (result["step_1"]["smape"], result["step_2"]["smape"]) == pytest.approx((200.0, 40.0))
    assert result["counts"]["mase_excluded_windows"] == 1.0
    assert result["counts"]["smape_excluded_windows"] == 2.0


def test_a_zero_point_inside_a_kept_window_is_a_perfect_forecast():
    # y = [0, 2], f = [0, 4]: the first point is 0 / 0, a perfect forecast counted as 0;
    # the second 200 * 2 / (2 + 4) = 66.67 -> sMAPE (0 + 66.67) / 2 = 33.33
    result = metrics_of([[0.0, 4]], [[0.0, 2]], [1.0])
    assert result["all"]["smape"] == pytest.approx(100 / 3)
    assert result["counts"]["smape_excluded_windows"] == 0.0


def test_nothing_left_to_average_is_nan():
    result = metrics_of([[1.0]], [[0.0]], [0.0])
    assert math.isnan(result["all"]["mase"]) and math.isnan(result["all"]["smape"])
    assert result["all"]["mae"] == 1.0


def naive_metrics(forecasts: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor) -> dict:
    """The plain reference: loop over windows and steps, sum, divide."""
    rows, horizon = targets.shape
    f, y, s = forecasts.tolist(), targets.tolist(), scale.tolist()

    def section(steps):
        absolute = [abs(f[n][h] - y[n][h]) for n in range(rows) for h in steps]
        squared = [(f[n][h] - y[n][h]) ** 2 for n in range(rows) for h in steps]
        mase = [abs(f[n][h] - y[n][h]) / s[n] for n in range(rows) for h in steps if s[n] > 0]
        smape = []
        for n in range(rows):
            if sum(abs(value) for value in y[n]) == 0:
                continue
            for h in steps:
                denominator = abs(y[n][h]) + abs(f[n][h])
                smape.append(200 * abs(f[n][h] - y[n][h]) / denominator if denominator else 0.0)
        return {
            "mae": sum(absolute) / len(absolute),
            "rmse": math.sqrt(sum(squared) / len(squared)),
            "mase": sum(mase) / len(mase),
            "smape": sum(smape) / len(smape),
        }

    out = {"all": section(range(horizon))}
    for h in range(horizon):
        out[f"step_{h + 1}"] = section([h])
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_equals_the_naive_loop(seed):
    generator = torch.Generator().manual_seed(seed)
    targets = torch.poisson(torch.rand(60, 5, generator=generator) * 3, generator=generator)
    targets[::7] = 0  # some all-zero truth windows
    forecasts = torch.poisson(torch.rand(60, 5, generator=generator) * 3, generator=generator)
    forecasts += torch.rand(60, 5, generator=generator) * (seed > 0)  # integers, then reals
    scale = torch.rand(60, generator=generator).where(torch.rand(60, generator=generator) > 0.2, 0)
    result = forecast_metrics(forecasts, targets, scale)
    expected = naive_metrics(forecasts, targets, scale)
    for section, values in expected.items():
        for metric in METRICS:
            assert result[section][metric] == pytest.approx(values[metric], rel=1e-9), (
                section,
                metric,
            )


def test_seasonal_scale_uses_training_days_only():
    # training days 0..9 (train_end 10), season 7: |y7 - y0|, |y8 - y1|, |y9 - y2|
    # = |3 - 1|, |2 - 2|, |3 - 3| = 2, 0, 0 -> mean 2/3; day 10 (value 90) is not training
    # series 1 repeats its week exactly: scale 0
    counts = torch.tensor(
        [[1.0, 2, 3, 4, 5, 6, 7, 3, 2, 3, 90], [1.0, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4]]
    )
    assert seasonal_scale(counts, 10).tolist() == pytest.approx([2 / 3, 0.0])
    # season 1: mean |y_t - y_{t-1}| over t = 1..4 of [1, 2, 3, 4, 5] = 1
    assert seasonal_scale(counts, 5, season=1).tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(DataError, match="longer than a season"):
        seasonal_scale(counts, 7)


def test_shape_mismatch_is_an_error():
    with pytest.raises(DataError, match="forecasts"):
        forecast_metrics(torch.zeros(2, 3), torch.zeros(2, 2), torch.ones(2))
