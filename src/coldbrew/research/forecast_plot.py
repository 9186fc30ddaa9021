"""A PNG of forecasts against the truth for a few series (matplotlib, imported lazily).

One panel per series: the true daily counts over ``history_days`` before the split and through
it, and each method's forecasts from non-overlapping origins (every ``horizon`` days from the
split's first origin), each drawn as a ``horizon``-day segment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from coldbrew.errors import ColdbrewError
from coldbrew.tasks.forecasting import ForecastingTask

DEFAULT_PANELS = 4


def busiest_series(task: ForecastingTask, count: int = DEFAULT_PANELS) -> list[int]:
    """The ``count`` series with the most training-period events (the most legible panels)."""
    totals = task.counts[:, : task.time_split.train_end].sum(dim=1)
    return torch.argsort(totals, descending=True)[:count].tolist()


def plot_forecasts(
    path: str | os.PathLike,
    task: ForecastingTask,
    forecasts: Mapping[str, torch.Tensor],
    *,
    split: str = "test",
    series: Sequence[int] | None = None,
    history_days: int = 28,
) -> Path:
    """Write the PNG to ``path``; ``forecasts`` maps a method name to its ``(N, horizon)``
    forecasts for ``task.windows(split)`` (``task.forecasts`` or ``baseline_forecasts``)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ColdbrewError("plotting needs matplotlib: pip install 'coldbrew[plot]'") from None
    series = busiest_series(task) if series is None else list(series)
    origins = task.time_split.origins(split)
    horizon = task.config.horizon
    shown = range(0, len(origins), horizon)  # non-overlapping origins, as positions in `origins`
    first_day = max(0, origins.start - history_days)
    last_day = origins[-1] + horizon  # exclusive
    dates = [task.series.date(day) for day in range(first_day, last_day)]
    figure = Figure(figsize=(10, 2.6 * len(series)), layout="constrained")
    axes = figure.subplots(len(series), 1, squeeze=False)[:, 0]
    for axis, index in zip(axes, series, strict=True):
        axis.plot(
            dates, task.counts[index, first_day:last_day].tolist(), "k-", lw=1.2, label="truth"
        )
        for colour, (name, values) in enumerate(forecasts.items()):
            table = values.reshape(task.series.num_series, len(origins), horizon)  # (S, O, H)
            for position in shown:
                start = origins[position]
                axis.plot(
                    [task.series.date(day) for day in range(start, start + horizon)],
                    table[index, position].tolist(),
                    color=f"C{colour}",
                    lw=1.2,
                    label=name if position == 0 else None,
                )
        axis.axvline(task.series.date(origins.start), color="grey", ls=":", lw=1)
        axis.set_title(f"{task.series.kind} {task.series.names[index]} ({split})", fontsize=9)
        axis.set_ylabel("events / day")
    axes[0].legend(fontsize=8, ncol=len(forecasts) + 1, loc="upper left")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path
