"""Forecasting settings as plain dataclasses: no torch here, so a CLI can build its flags fast.

``ForecastConfig`` holds what the data side needs (series kind, window, horizon, the time split,
the baselines' knobs, scaling); ``LSTMConfig`` the model's shape, with two presets:

* ``seed``: hidden 64, 2 layers, as the seed system ran;
* ``large``: hidden 256, 3 layers, as the seed's guide proposed.

Both validate in ``__post_init__`` and raise ``ColdbrewError`` with a one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from coldbrew.errors import ColdbrewError
from coldbrew.options import option

SERIES_KINDS = ("item", "genre", "total")
LOSSES = ("mae", "mse")
SEASON = 7  # days: the weekly cycle of the seasonal naive baseline and of MASE's scale


@dataclass(frozen=True)
class ForecastConfig:
    """Which daily series, the window/horizon of a sample, and how the days are split.

    The last ``test_days`` days are the test period, the ``val_days`` before them the
    validation period, everything earlier the training period (see ``coldbrew.forecasting.windows``).
    """

    series: str = "item"  # item | genre | total
    window: int = 30  # input days of a sample
    horizon: int = 7  # days forecast from one origin
    val_days: int = 28  # four weeks: 22 origins of a 7-day horizon
    test_days: int = 28
    season: int = SEASON
    moving_average: int = 7  # days averaged by the moving-average baseline
    log_scale: bool = True  # LSTM inputs/targets: log1p(count) / series scale (else count / scale)

    def __post_init__(self) -> None:
        if self.series not in SERIES_KINDS:
            raise ColdbrewError(
                f"series must be one of {', '.join(SERIES_KINDS)}, not {self.series!r}"
            )
        for name in ("window", "horizon", "val_days", "test_days", "season", "moving_average"):
            if getattr(self, name) < 1:
                raise ColdbrewError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.window < self.season:
            raise ColdbrewError(
                f"window ({self.window}) must cover a season ({self.season} days) for the "
                "seasonal naive baseline"
            )
        if self.moving_average > self.window:
            raise ColdbrewError(
                f"moving_average ({self.moving_average}) cannot exceed the window ({self.window})"
            )
        for name in ("val_days", "test_days"):
            if getattr(self, name) < self.horizon:
                raise ColdbrewError(
                    f"{name} ({getattr(self, name)}) must hold at least one horizon ({self.horizon})"
                )


@dataclass(frozen=True)
class LSTMConfig:
    """Shape and loss of ``coldbrew.models.lstm.LSTMForecaster``."""

    hidden: int = 64
    layers: int = 2
    dropout: float = 0.0  # between stacked LSTM layers (PyTorch applies none after the last)
    loss: str = "mae"  # mae | mse

    def __post_init__(self) -> None:
        if self.hidden < 1 or self.layers < 1:
            raise ColdbrewError(
                f"hidden and layers must be at least 1, got {self.hidden} and {self.layers}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ColdbrewError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.loss not in LOSSES:
            raise ColdbrewError(f"loss must be one of {', '.join(LOSSES)}, not {self.loss!r}")


LSTM_PRESETS = {
    "seed": LSTMConfig(hidden=64, layers=2),
    "large": LSTMConfig(hidden=256, layers=3),
}


def lstm_preset(name: str, **overrides: object) -> LSTMConfig:
    """The preset ``name`` (``seed`` or ``large``) with ``overrides`` (``dropout=0.1``) applied."""
    if name not in LSTM_PRESETS:
        raise ColdbrewError(f"unknown LSTM preset {name!r}; available: {', '.join(LSTM_PRESETS)}")
    return replace(LSTM_PRESETS[name], **overrides)


@dataclass
class LSTMOptions:
    """The ``lstm`` model's options in a run (``coldbrew train --model lstm``, ``coldbrew
    forecast``): the series and windows (``ForecastConfig``) and the network (``LSTMConfig``).
    Presets: ``configs/lstm_seed.yaml`` (64/2, the default) and ``configs/lstm_large.yaml``."""

    series: str = option("item", "daily series: item, genre or total", choices=SERIES_KINDS)
    window: int = option(30, "input days of a window", minimum=1)
    horizon: int = option(7, "days forecast from one origin", minimum=1)
    val_days: int = option(28, "days of the validation period (before the test period)", minimum=1)
    test_days: int = option(28, "days of the test period (the last days)", minimum=1)
    moving_average: int = option(7, "days averaged by the moving-average baseline", minimum=1)
    log_scale: bool = option(True, "scale counts as log1p(count) / the series' training mean")
    hidden: int = option(64, "LSTM hidden size (seed 64, large 256)", minimum=1)
    layers: int = option(2, "stacked LSTM layers (seed 2, large 3)", minimum=1)
    dropout: float = option(0.0, "dropout between LSTM layers", minimum=0, maximum=0.99)
    loss: str = option("mae", "training loss: mae or mse", choices=LOSSES)

    def forecast_config(self) -> ForecastConfig:
        return ForecastConfig(
            series=self.series,
            window=self.window,
            horizon=self.horizon,
            val_days=self.val_days,
            test_days=self.test_days,
            moving_average=self.moving_average,
            log_scale=self.log_scale,
        )

    def lstm_config(self) -> LSTMConfig:
        return LSTMConfig(
            hidden=self.hidden, layers=self.layers, dropout=self.dropout, loss=self.loss
        )
