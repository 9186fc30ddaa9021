"""ForecastingTask keeps the task contract; an LSTM trained on its batches learns a season."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from coldbrew.data.forecast.config import ForecastConfig
from coldbrew.data.forecast.series import DailySeries, synthetic_series
from coldbrew.errors import ColdbrewError
from coldbrew.models.forecast.lstm import LSTMForecaster
from coldbrew.tasks.base import Monitor
from coldbrew.tasks.forecasting import (
    ForecastingTask,
    baseline_forecasts,
    default_baselines,
    evaluate_baselines,
)
from conftest import shared_path

SMALL = ForecastConfig(window=14, horizon=7, val_days=14, test_days=14)


def small_task(num_series: int = 8, num_days: int = 126, seed: int = 0) -> ForecastingTask:
    return ForecastingTask(synthetic_series(num_series, num_days, seed=seed), SMALL)


def test_samples_are_the_training_windows():
    # 126 days - 28 held out = 98 training days; origins 14..91 = 78 per series; 8 series
    task = small_task()
    assert task.num_samples() == 8 * 78
    assert task.splits() == ("val", "test")
    assert task.monitor == Monitor("all", "mae", "min")
    order = task.epoch_order(torch.Generator().manual_seed(0))
    assert sorted(order.tolist()) == list(range(task.num_samples()))


def test_make_batch_matches_a_plain_loop():
    task = small_task()
    index = torch.tensor([0, 77, 78, 623, 300])
    batch = task.make_batch(index)
    scaled = task.scaler.transform(task.counts)
    for row, sample in enumerate(index.tolist()):
        series, origin = divmod(sample, 78)
        origin += 14  # the first training origin
        assert torch.equal(batch.inputs[row], scaled[series, origin - 14 : origin])
        assert torch.equal(batch.targets[row], scaled[series, origin : origin + 7])
    assert (batch.targets[3] != 0).any()  # sample 623: series 7, origin 91, targets days 91..97


class ExactForecaster(torch.nn.Module):
    """Predicts the truth it was given (in scaled space): every error metric must be 0."""

    def __init__(self, task: ForecastingTask, split: str) -> None:
        super().__init__()
        series, origins = task.windows(split)
        _, targets = task.raw_windows(split)
        self.answers = task.scaler.transform(targets, series)
        self.calls = 0

    def predict(self, inputs: torch.Tensor) -> torch.Tensor:
        answers = self.answers[self.calls : self.calls + len(inputs)]
        self.calls += len(inputs)
        return answers


def test_evaluate_form_and_a_perfect_forecast():
    task = small_task()
    task.eval_batch_size = 50  # 8 series x 8 val origins = 64 windows: two chunks
    metrics = task.evaluate(ExactForecaster(task, "val"), "val")
    assert list(metrics) == ["all", *(f"step_{h}" for h in range(1, 8)), "counts"]
    assert metrics["all"]["mae"] == pytest.approx(0.0, abs=1e-4)
    assert metrics["all"]["mase"] == pytest.approx(0.0, abs=1e-4)
    assert metrics["counts"] == {
        "windows": 64.0,  # val origins 98..105: 8 per series
        "mase_excluded_windows": 0.0,
        "smape_excluded_windows": 0.0,
        "series": 8.0,
        "mase_excluded_series": 0.0,
    }
    assert task.monitor.value(metrics) == metrics["all"]["mae"]


def test_evaluate_restores_training_mode_and_needs_no_gradients():
    task = small_task()
    model = LSTMForecaster(7, hidden=4, layers=1)
    model.train()
    task.evaluate(model, "test")
    assert model.training
    model.eval()
    task.evaluate(model, "test")
    assert not model.training
    with pytest.raises(ColdbrewError, match="unknown split 'dev'"):
        task.evaluate(model, "dev")


def test_baselines_share_the_windows_and_the_form():
    task = small_task()
    results = evaluate_baselines(task, "test", ["naive", "seasonal_naive", "moving_average"])
    assert set(results) == {"naive", "seasonal_naive", "moving_average"}
    assert all(
        list(r) == list(task.evaluate(ExactForecaster(task, "test"), "test"))
        for r in results.values()
    )
    # seasonal naive by hand on the window of series 2 at test origin 112: days 105..111
    forecasts = baseline_forecasts(task, "seasonal_naive", "test")
    row = 2 * 8 + 0  # series-major: 8 test origins (112..119) per series
    assert forecasts[row].tolist() == task.series.counts[2, 105:112].tolist()
    counts = task.series.counts
    expected_mae = np.mean(
        [
            abs(counts[s, t + h] - counts[s, t + h - 7])
            for s in range(8)
            for t in range(112, 120)
            for h in range(7)
        ]
    )
    assert results["seasonal_naive"]["all"]["mae"] == pytest.approx(expected_mae)


def test_default_baselines_follow_the_series_kind():
    simple = ("naive", "seasonal_naive", "moving_average", "median")
    kinds = {kind: default_baselines(kind) for kind in ("item", "genre")}
    assert kinds["item"][:4] == simple and kinds["genre"][:4] == simple
    if len(kinds["item"]) == 5:  # statsforecast installed
        assert kinds["item"][4] == "croston" and kinds["genre"][4] == "auto_ets"


def test_statistical_baseline_through_the_task():
    pytest.importorskip("statsforecast")
    task = small_task(num_series=2, num_days=70)  # 2 series x 8 test origins = 16 fits
    results = evaluate_baselines(task, "test", ["auto_ets"])
    assert results["auto_ets"]["counts"]["windows"] == 16.0
    assert math.isfinite(results["auto_ets"]["all"]["mase"])


def test_a_series_without_training_events_is_excluded_from_mase_and_counted():
    counts = synthetic_series(3, 70, seed=1).counts.copy()
    counts[1, :42] = 0  # 70 - 28 = 42 training days, all zero: scale 0
    task = ForecastingTask(DailySeries("synthetic", counts, ("a", "b", "c"), 0), SMALL)
    metrics = evaluate_baselines(task, "val", ["naive"])["naive"]
    assert metrics["counts"]["mase_excluded_series"] == 1.0
    assert metrics["counts"]["mase_excluded_windows"] == 8.0  # its 8 val windows
    assert task.scaler.scale[1].item() == 1.0


def test_training_lowers_validation_mae_on_a_seasonal_series():
    # harness only (the engine drives training for real): a manual Adam loop of 300 steps
    torch.manual_seed(0)
    task = small_task(seed=0)
    model = LSTMForecaster(7, hidden=32, layers=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    generator = torch.Generator().manual_seed(0)
    before = task.evaluate(model, "val")["all"]["mae"]
    for _ in range(300):
        index = torch.randint(task.num_samples(), (64,), generator=generator)
        loss = model(task.make_batch(index)).total
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    after = task.evaluate(model, "val")["all"]["mae"]
    flat = evaluate_baselines(task, "val", ["naive", "moving_average"])
    assert after < 0.5 * before
    assert after < min(result["all"]["mae"] for result in flat.values())  # it learned the week


@pytest.mark.shared_data
def test_ml100k_task_from_data():
    shared_path("ml-100k")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task = ForecastingTask.from_data("ml-100k", ForecastConfig(series="genre"))
    assert task.series.counts.shape == (19, 215)
    assert task.num_samples() == 19 * 123
    metrics = evaluate_baselines(task, "val", ["naive"])["naive"]
    assert metrics["counts"]["windows"] == 19 * 22


def test_default_config():
    task = ForecastingTask(synthetic_series(2, 100, seed=0))
    assert (task.config.window, task.config.horizon, task.config.val_days) == (30, 7, 28)
    assert task.num_samples() == 2 * len(range(30, 100 - 56 - 7 + 1))
