"""What the forecasting data side needs, as a plain dataclass (no torch here): the series kind,
window, horizon, the time split, the baselines' knobs and scaling. Validated in
``__post_init__`` with a one-line ``ColdbrewError``."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.errors import ColdbrewError

SERIES_KINDS = ("item", "genre", "total")
SEASON = 7  # days: the weekly cycle of the seasonal naive baseline and of MASE's scale


@dataclass(frozen=True)
class ForecastConfig:
    """Which daily series, the window/horizon of a sample, and how the days are split.

    The last ``test_days`` days are the test period, the ``val_days`` before them the
    validation period, everything earlier the training period (see ``coldbrew.data.forecast.windows``).
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
