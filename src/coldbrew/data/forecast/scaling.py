"""Per-series scaling of counts for the LSTM, fitted on the training period only.

``z = log1p(count) / scale_s`` with ``scale_s`` the mean of ``log1p(count)`` over series ``s``'s
training days (``log=False``: ``z = count / scale_s``, the mean count). Why:

* one global LSTM serves series whose levels differ by orders of magnitude (an item with a
  rating a week beside the total of ~470 a day): dividing by the series' own level puts every
  series near 1;
* ``log1p`` tames the spikes of release days and keeps zero at zero (sparse items stay sparse);
* both steps are increasing, so the median of ``z`` maps to the median count: an MAE loss on
  ``z`` aims at the conditional median, which is what minimises MAE in counts;
* the scale reads training days only, so nothing of validation or test leaks into training.

A series with no training events (scale 0) gets scale 1. Forecasts map back through ``inverse``
and are clipped at 0 (a count is never negative).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SeriesScaler:
    """``scale`` ``(num_series,)`` and whether ``log1p`` comes first."""

    scale: torch.Tensor  # (num_series,) float32
    log: bool = True

    @classmethod
    def fit(cls, counts: torch.Tensor, train_end: int, *, log: bool = True) -> SeriesScaler:
        """Scales from days ``0 .. train_end - 1`` of ``counts`` ``(num_series, num_days)``."""
        lifted = counts[:, :train_end].float()
        if log:
            lifted = torch.log1p(lifted)
        level = lifted.mean(dim=1)  # (num_series,)
        return cls(scale=torch.where(level > 0, level, torch.ones_like(level)), log=log)

    def transform(self, counts: torch.Tensor, series: torch.Tensor | None = None) -> torch.Tensor:
        """Scaled ``counts`` ``(rows, days)``; row ``r`` is series ``series[r]`` (default: ``r``)."""
        scale = self.scale if series is None else self.scale[series]
        lifted = torch.log1p(counts.float()) if self.log else counts.float()
        return lifted / scale[:, None]

    def inverse(self, scaled: torch.Tensor, series: torch.Tensor | None = None) -> torch.Tensor:
        """Counts (clipped at 0) from scaled values ``(rows, days)``; the inverse of ``transform``."""
        scale = self.scale if series is None else self.scale[series]
        lifted = scaled * scale[:, None]
        counts = torch.expm1(lifted) if self.log else lifted
        return counts.clamp(min=0.0)
