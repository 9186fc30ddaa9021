"""The split of the days into train/val/test, and windows gathered on the device.

A *window* is one sample: a series ``s`` and an *origin* day ``t``; its inputs are days
``t - window .. t - 1`` and its targets days ``t .. t + horizon - 1``.

The split rule (days ``0 .. D-1``; ``V = val_days``, ``T = test_days``, ``H = horizon``):

* test period: the last ``T`` days; validation: the ``V`` days before; training: the rest,
  days ``0 .. D - V - T - 1``;
* a split's windows are those whose **targets** lie wholly inside its period, one per origin
  (stride 1): train origins ``window .. D - V - T - H``, val origins ``D - V - T .. D - T - H``,
  test origins ``D - T .. D - H``. No val or test target day is ever a training target day;
* **inputs** may reach back into earlier periods (a test window reads validation days): at
  forecast time those days are observed, as they would be in production.

ML-100K's 215 days with the defaults (window 30, horizon 7, 28 + 28 days): 159 training days
(123 origins), 22 validation and 22 test origins per series.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from coldbrew.errors import ColdbrewError, DataError

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class TimeSplit:
    """Day boundaries of the periods and each split's window origins (see module docstring)."""

    num_days: int
    window: int
    horizon: int
    val_days: int
    test_days: int

    def __post_init__(self) -> None:
        needed = self.window + self.horizon + self.val_days + self.test_days
        if self.num_days < needed:
            raise DataError(
                f"{self.num_days} days are too few: one training window ({self.window} input + "
                f"{self.horizon} target days) plus {self.val_days} validation and "
                f"{self.test_days} test days need {needed}"
            )
        if min(self.val_days, self.test_days) < self.horizon:
            raise ColdbrewError(
                f"val_days and test_days must hold one horizon ({self.horizon}), "
                f"got {self.val_days} and {self.test_days}"
            )

    @property
    def train_end(self) -> int:
        """First day after the training period."""
        return self.num_days - self.val_days - self.test_days

    @property
    def val_end(self) -> int:
        """First day of the test period."""
        return self.num_days - self.test_days

    def origins(self, split: str) -> range:
        """Origin days of ``split``'s windows, in order."""
        first, end = {
            "train": (self.window, self.train_end),
            "val": (self.train_end, self.val_end),
            "test": (self.val_end, self.num_days),
        }.get(split, (None, None))
        if first is None:
            raise ColdbrewError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        return range(first, end - self.horizon + 1)


def sample_windows(
    num_series: int, origins: range, index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(series, origin)`` of samples ``index``; samples run series-major over ``origins``."""
    per_series = len(origins)
    return index // per_series, origins.start + index % per_series


def all_windows(
    num_series: int, origins: range, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every ``(series, origin)`` of a split, series-major (reshapes to ``(S, origins)``)."""
    index = torch.arange(num_series * len(origins), device=device)
    return sample_windows(num_series, origins, index)


def gather_windows(
    values: torch.Tensor,
    series: torch.Tensor,
    origins: torch.Tensor,
    window: int,
    horizon: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs ``(B, window)`` and targets ``(B, horizon)`` of windows ``(series[b], origins[b])``.

    ``values`` is ``(num_series, num_days)`` on the device; ``unfold`` views every span of
    ``window + horizon`` days without copying, and one advanced index copies the ``B`` rows.
    """
    spans = values.unfold(1, window + horizon, 1)  # (S, D - window - horizon + 1, window + horizon)
    rows = spans[series, origins - window]  # (B, window + horizon)
    return rows[:, :window], rows[:, window:]
