"""Point-forecast metrics over windows, overall and per horizon step, in counts.

For ``N`` windows of ``H`` steps, forecast ``f``, truth ``y``, error ``e = f - y``:

* ``mae``  = mean of ``|e|``;  ``rmse`` = sqrt(mean of ``e**2``) (pooled over the points);
* ``mase`` = mean of ``|e| / scale_s``, where ``scale_s`` is the in-sample seasonal naive MAE of
  the window's series over the training period, ``mean_t |y_t - y_{t-7}|`` for training days
  ``t >= 7``. Every series has the same number of windows in a split, so this pooled mean is
  also the mean of the per-series MASE. A series with ``scale_s = 0`` (no training events, or a
  training period that repeats exactly weekly) has no MASE: its windows are left out and counted
  (``counts/mase_excluded_windows``);
* ``smape`` = mean of ``200 |e| / (|y| + |f|)`` in percent (0..200), over windows whose truth is
  not all zero: an all-zero truth window has no scale to be relative to (any non-zero forecast
  is 200 %), so such windows are left out and counted (``counts/smape_excluded_windows``).
  Inside a kept window a point with ``y = f = 0`` is a perfect forecast and counts as 0.

Returned as ``{"all": {...}, "step_1": {...}, ..., "step_H": {...}, "counts": {...}}``, each
metric section holding ``mae``, ``rmse``, ``mase`` and ``smape``; a metric with no window left
to average is NaN.
"""

from __future__ import annotations

import torch

from coldbrew.data.forecast.config import SEASON
from coldbrew.errors import DataError

METRICS = ("mae", "rmse", "mase", "smape")
Metrics = dict[str, dict[str, float]]


def seasonal_scale(counts: torch.Tensor, train_end: int, season: int = SEASON) -> torch.Tensor:
    """In-sample seasonal naive MAE ``(num_series,)`` over days ``0 .. train_end - 1``."""
    if train_end <= season:
        raise DataError(
            f"the training period ({train_end} days) must be longer than a season ({season}) "
            "to scale MASE"
        )
    history = counts[:, :train_end].double()  # (S, train_end)
    return (history[:, season:] - history[:, :-season]).abs().mean(dim=1)


def forecast_metrics(
    forecasts: torch.Tensor, targets: torch.Tensor, scale: torch.Tensor
) -> Metrics:
    """Metrics of ``forecasts`` against ``targets`` (both ``(N, H)``); ``scale`` ``(N,)`` is the
    MASE scale of each window's series."""
    if forecasts.shape != targets.shape or forecasts.ndim != 2:
        raise DataError(f"forecasts {tuple(forecasts.shape)} and targets {tuple(targets.shape)}")
    forecasts, targets, scale = forecasts.double(), targets.double(), scale.double()
    errors = forecasts - targets  # (N, H)
    absolute = errors.abs()
    scaled_rows = scale > 0
    smape_rows = targets.abs().sum(dim=1) > 0
    denominator = targets.abs() + forecasts.abs()
    smape_points = torch.where(
        denominator > 0, 200.0 * absolute / denominator.clamp(min=1e-300), 0.0
    )
    per_step = torch.stack(
        [
            absolute.mean(dim=0),
            errors.square().mean(dim=0),  # squared, rooted below
            (absolute[scaled_rows] / scale[scaled_rows, None]).mean(dim=0),
            smape_points[smape_rows].mean(dim=0),
        ]
    )  # (4, H)
    overall = torch.stack(
        [
            absolute.mean(),
            errors.square().mean(),
            (absolute[scaled_rows] / scale[scaled_rows, None]).mean(),
            smape_points[smape_rows].mean(),
        ]
    )  # (4,)
    per_step[1], overall[1] = per_step[1].sqrt(), overall[1].sqrt()
    columns = torch.cat([overall[:, None], per_step], dim=1).T.tolist()  # (1 + H) rows of 4
    result: Metrics = {"all": dict(zip(METRICS, columns[0], strict=True))}
    for step, values in enumerate(columns[1:], start=1):
        result[f"step_{step}"] = dict(zip(METRICS, values, strict=True))
    result["counts"] = {
        "windows": float(len(targets)),
        "mase_excluded_windows": float((~scaled_rows).sum()),
        "smape_excluded_windows": float((~smape_rows).sum()),
    }
    return result
