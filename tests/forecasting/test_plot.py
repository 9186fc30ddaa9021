"""The forecast plot writes a PNG (skipped only when matplotlib is not installed)."""

from __future__ import annotations

import builtins

import pytest

from coldbrew.data.forecast.config import ForecastConfig
from coldbrew.data.forecast.series import synthetic_series
from coldbrew.errors import ColdbrewError
from coldbrew.research.forecast_plot import busiest_series, plot_forecasts
from coldbrew.tasks.forecasting import ForecastingTask, baseline_forecasts

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def small_task() -> ForecastingTask:
    config = ForecastConfig(window=14, horizon=7, val_days=14, test_days=14)
    return ForecastingTask(synthetic_series(5, 84, seed=2), config)


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    task = small_task()
    forecasts = {
        name: baseline_forecasts(task, name, "test") for name in ("naive", "seasonal_naive")
    }
    path = plot_forecasts(tmp_path / "plots" / "forecast.png", task, forecasts, series=[0, 3])
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    assert path.stat().st_size > 10_000  # two panels of lines, not an empty canvas


def test_busiest_series_by_training_events():
    task = small_task()
    totals = task.series.counts[:, : task.time_split.train_end].sum(axis=1)
    assert busiest_series(task, 2) == sorted(range(5), key=lambda s: -totals[s])[:2]


def test_missing_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ColdbrewError, match=r"pip install 'coldbrew\[plot\]'"):
        plot_forecasts(tmp_path / "x.png", small_task(), {})
