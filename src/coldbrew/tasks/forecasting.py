"""Forecasting as a ``Task``: windows gathered on the device, metrics in counts, baselines beside.

The task holds the daily counts ``(S, D)`` on its device, their scaled form for the model
(``coldbrew.data.forecast.scaling``), the time split (``coldbrew.data.forecast.windows``) and each
series' MASE scale. A training sample is one training window; ``make_batch`` gathers a batch of
them with one ``unfold`` view and one index, so no loader sits between the data and the step.

``evaluate(model, split)`` forecasts every window of ``split`` with ``model.predict``, maps the
forecasts back to counts and returns ``coldbrew.evaluation.forecast_metrics.forecast_metrics``'s form:
``{"all": {mae, rmse, mase, smape}, "step_1": {...}, ..., "counts": {...}}``, plus
``counts/series`` and ``counts/mase_excluded_series``. The monitored metric is ``all/mae``
(lower is better). ``evaluate_baselines`` fills the same form for each baseline on the same
windows, so one table compares them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence

import torch

from coldbrew.data.forecast.config import ForecastConfig
from coldbrew.data.forecast.scaling import SeriesScaler
from coldbrew.data.forecast.series import DailySeries
from coldbrew.data.forecast.windows import TimeSplit, all_windows, gather_windows, sample_windows
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.forecast_metrics import Metrics, forecast_metrics, seasonal_scale
from coldbrew.models.base import ForecastBatch
from coldbrew.models.forecast.baselines import (
    SIMPLE_BASELINES,
    STATISTICAL_MODELS,
    default_statistical_model,
    simple_baseline,
    statistical_forecasts,
)
from coldbrew.tasks.base import Monitor, Task

EVALUATION_SPLITS = ("val", "test")


class ForecastingTask(Task):
    """Windows of one ``DailySeries`` under one ``ForecastConfig``, on one device."""

    def __init__(
        self,
        series: DailySeries,
        config: ForecastConfig | None = None,
        *,
        device: torch.device | str = "cpu",
        eval_batch_size: int = 8192,
    ) -> None:
        """``config`` defaults to ``ForecastConfig()``; its ``series`` field is read only by
        ``from_data`` (the series are given here)."""
        self.series = series
        self.config = config or ForecastConfig()
        self.device = torch.device(device)
        self.eval_batch_size = eval_batch_size
        self.monitor = Monitor("all", "mae", "min")
        self.time_split = TimeSplit(
            series.num_days,
            self.config.window,
            self.config.horizon,
            self.config.val_days,
            self.config.test_days,
        )
        train_end = self.time_split.train_end
        self.counts = torch.as_tensor(series.counts, dtype=torch.float32, device=self.device)
        self.scaler = SeriesScaler.fit(self.counts, train_end, log=self.config.log_scale)
        self.scaled = self.scaler.transform(self.counts)  # (S, D)
        self.mase_scale = seasonal_scale(self.counts, train_end, self.config.season)  # (S,)

    @classmethod
    def from_data(
        cls, data: str | os.PathLike, config: ForecastConfig, *, device: torch.device | str = "cpu"
    ) -> ForecastingTask:
        """Events of dataset ``data`` -> ``config.series`` daily series -> the task."""
        from coldbrew.data.forecast.events import load_events
        from coldbrew.data.forecast.series import build_series

        return cls(build_series(load_events(data), config.series), config, device=device)

    # ---------------------------------------------------------------- the task contract
    def num_samples(self) -> int:
        return self.series.num_series * len(self.time_split.origins("train"))

    @classmethod
    def from_config(cls, series: DailySeries, config, device: torch.device) -> ForecastingTask:
        """The task for a run's ``TrainConfig`` (its ``lstm`` options)."""
        if config.early_stop_metric not in (None, "all/mae"):
            raise ColdbrewError(
                f"forecasting monitors validation all/mae; early_stop_metric "
                f"{config.early_stop_metric!r} is not measured here"
            )
        return cls(series, config.model_options.forecast_config(), device=device)

    def describe(self) -> str:
        return (
            f"{self.series.num_series} {self.series.kind} series over {self.series.num_days} days"
        )

    def make_batch(self, index: torch.Tensor) -> ForecastBatch:
        """Training windows ``index`` (nothing random)."""
        series, origins = sample_windows(
            self.series.num_series, self.time_split.origins("train"), index
        )
        inputs, targets = gather_windows(
            self.scaled, series, origins, self.config.window, self.config.horizon
        )
        return ForecastBatch(inputs=inputs, targets=targets)

    def splits(self) -> tuple[str, ...]:
        return EVALUATION_SPLITS

    def evaluate(self, model: torch.nn.Module, split: str, *, progress: bool = False) -> Metrics:
        return self.metrics(self.forecasts(model, split), split)

    # ---------------------------------------------------------------- windows and forecasts
    def windows(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(series, origins)`` of every window of ``split``, series-major."""
        if split not in (*EVALUATION_SPLITS, "train"):
            raise ColdbrewError(f"unknown split {split!r}; expected train, val or test")
        return all_windows(self.series.num_series, self.time_split.origins(split), self.device)

    def raw_windows(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs ``(N, window)`` and targets ``(N, horizon)`` of ``split`` in counts."""
        series, origins = self.windows(split)
        return gather_windows(self.counts, series, origins, self.config.window, self.config.horizon)

    @torch.no_grad()
    def forecasts(self, model: torch.nn.Module, split: str) -> torch.Tensor:
        """``model``'s forecasts ``(N, horizon)`` in counts for every window of ``split``."""
        model = getattr(model, "module", model)  # DistributedDataParallel holds the model here
        was_training = model.training
        model.eval()
        series, origins = self.windows(split)
        chunks = []
        for start in range(0, len(series), self.eval_batch_size):
            part = slice(start, start + self.eval_batch_size)
            inputs, _ = gather_windows(
                self.scaled, series[part], origins[part], self.config.window, self.config.horizon
            )
            chunks.append(self.scaler.inverse(model.predict(inputs).float(), series[part]))
        model.train(was_training)
        return torch.cat(chunks)

    def metrics(self, forecasts: torch.Tensor, split: str) -> Metrics:
        """Metrics of ``forecasts`` ``(N, horizon)`` (counts, in ``windows(split)`` order)."""
        series, _ = self.windows(split)
        _, targets = self.raw_windows(split)
        result = forecast_metrics(forecasts, targets, self.mase_scale[series])
        result["counts"]["series"] = float(self.series.num_series)
        result["counts"]["mase_excluded_series"] = float((self.mase_scale <= 0).sum())
        return result


def statistical_available() -> bool:
    """Whether statsforecast (the ``[stats]`` extra) is importable."""
    return importlib.util.find_spec("statsforecast") is not None


def default_baselines(kind: str) -> tuple[str, ...]:
    """The simple baselines, plus the kind's statistical model when statsforecast is installed."""
    extra = (default_statistical_model(kind),) if statistical_available() else ()
    return (*SIMPLE_BASELINES, *extra)


def baseline_forecasts(task: ForecastingTask, name: str, split: str) -> torch.Tensor:
    """Baseline ``name``'s forecasts ``(N, horizon)`` in counts for every window of ``split``."""
    config = task.config
    if name in STATISTICAL_MODELS:
        series, origins = task.windows(split)
        values = statistical_forecasts(
            task.series.counts,
            series.cpu().numpy(),
            origins.cpu().numpy(),
            config.horizon,
            name,
            config.season,
        )
        return torch.as_tensor(values, dtype=torch.float32, device=task.device)
    inputs, _ = task.raw_windows(split)
    return simple_baseline(
        name, inputs, config.horizon, season=config.season, length=config.moving_average
    )


def evaluate_baselines(
    task: ForecastingTask, split: str, names: Sequence[str] | None = None
) -> dict[str, Metrics]:
    """``{baseline: metrics}`` on ``split``'s windows, in ``task.evaluate``'s form.

    ``names`` defaults to ``default_baselines(task.series.kind)``.
    """
    names = default_baselines(task.series.kind) if names is None else names
    return {name: task.metrics(baseline_forecasts(task, name, split), split) for name in names}
