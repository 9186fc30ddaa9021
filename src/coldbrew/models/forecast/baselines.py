"""Baselines every forecaster must beat, on the same windows and in counts.

From a window's inputs ``x`` (``(N, window)``, ``x[:, -1]`` the day before the origin):

* ``naive``: every step is the last observed day, ``x[-1]``;
* ``seasonal_naive``: step ``h`` (1-based) repeats the same weekday of the last observed week,
  ``x[window - season + (h - 1) % season]``;
* ``moving_average``: every step is the mean of the last ``length`` days;
* ``median``: every step is the median of the whole window (the mean of the two middle values
  for an even window). MAE is minimised by the median, and unlike the mean it is not dragged
  up by one burst day: on ML-100K this is the level forecast to beat.

Statistical models come from statsforecast (the optional ``[stats]`` extra, imported lazily):
``auto_ets`` (``AutoETS``, weekly season, model chosen by AICc) and ``croston``
(``CrostonOptimized``, for intermittent series). They are refitted at every origin on the
series' whole history before it (days ``0 .. t - 1``), which is how one would use them.
Why optional and not a dependency: statsforecast 2.1.1 brings pandas, pyarrow, statsmodels and
fugue (+344 MB on top of numpy and scipy, 1.6-2.5 s to import), for one row of a table.
Default per series kind: ``croston`` for items (most item-days are zero, and AutoETS costs
about 36 ms a fit: 1,682 items x 22 origins is ~22 min a split), ``auto_ets`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from coldbrew.data.forecast.config import SEASON
from coldbrew.errors import ColdbrewError

SIMPLE_BASELINES = ("naive", "seasonal_naive", "moving_average", "median")
STATISTICAL_MODELS = ("auto_ets", "croston")


def naive(inputs: torch.Tensor, horizon: int) -> torch.Tensor:
    """``(N, horizon)``: the last input day repeated."""
    return inputs[:, -1:].expand(-1, horizon).float()


def seasonal_naive(inputs: torch.Tensor, horizon: int, season: int = SEASON) -> torch.Tensor:
    """``(N, horizon)``: step ``h`` takes the input ``season`` days (or a multiple) before it."""
    window = inputs.shape[1]
    if window < season:
        raise ColdbrewError(f"seasonal naive needs a window of at least {season} days")
    columns = window - season + torch.arange(horizon, device=inputs.device) % season  # (H,)
    return inputs[:, columns].float()


def moving_average(inputs: torch.Tensor, horizon: int, length: int = 7) -> torch.Tensor:
    """``(N, horizon)``: the mean of the last ``length`` input days repeated."""
    if not 1 <= length <= inputs.shape[1]:
        raise ColdbrewError(f"moving average length must be 1..{inputs.shape[1]}, got {length}")
    return inputs[:, -length:].float().mean(dim=1, keepdim=True).expand(-1, horizon)


def median(inputs: torch.Tensor, horizon: int) -> torch.Tensor:
    """``(N, horizon)``: the median of the window repeated."""
    return inputs.float().quantile(0.5, dim=1, keepdim=True).expand(-1, horizon)


def simple_baseline(
    name: str, inputs: torch.Tensor, horizon: int, *, season: int = SEASON, length: int = 7
) -> torch.Tensor:
    """The simple baseline ``name`` (one of ``SIMPLE_BASELINES``) on ``inputs``."""
    if name == "naive":
        return naive(inputs, horizon)
    if name == "seasonal_naive":
        return seasonal_naive(inputs, horizon, season)
    if name == "moving_average":
        return moving_average(inputs, horizon, length)
    if name == "median":
        return median(inputs, horizon)
    raise ColdbrewError(f"unknown baseline {name!r}; available: {', '.join(SIMPLE_BASELINES)}")


def default_statistical_model(kind: str) -> str:
    """``croston`` for item series (intermittent), ``auto_ets`` for genre and total."""
    return "croston" if kind == "item" else "auto_ets"


def statistical_model_factory(name: str, season: int = SEASON) -> Callable[[], object]:
    """A function making a fresh statsforecast model ``name``; a clear error if not installed."""
    if name not in STATISTICAL_MODELS:
        raise ColdbrewError(
            f"unknown statistical model {name!r}; available: {', '.join(STATISTICAL_MODELS)}"
        )
    try:
        from statsforecast.models import AutoETS, CrostonOptimized
    except ImportError:
        raise ColdbrewError(
            f"the {name} baseline needs statsforecast: pip install 'coldbrew[stats]'"
        ) from None
    if name == "auto_ets":
        return lambda: AutoETS(season_length=season)
    return CrostonOptimized


def statistical_forecasts(
    counts: np.ndarray,
    series: np.ndarray,
    origins: np.ndarray,
    horizon: int,
    model: str,
    season: int = SEASON,
) -> np.ndarray:
    """``(N, horizon)`` forecasts of model ``model`` fitted on ``counts[series[n], :origins[n]]``."""
    make = statistical_model_factory(model, season)
    history = counts.astype(np.float64)
    forecasts = np.empty((len(series), horizon), dtype=np.float64)
    for row, (index, origin) in enumerate(zip(series.tolist(), origins.tolist(), strict=True)):
        forecasts[row] = make().forecast(y=history[index, :origin], h=horizon)["mean"]
    return np.clip(forecasts, 0.0, None)  # counts are never negative
