"""Daily interaction counts, one row per series.

Days are UTC calendar days (``timestamp // 86400``), from the first event's day to the last
event's day inclusive, with zero-count days kept. Kinds:

* ``item``: one series per catalogue item (items with no event are all-zero rows);
* ``genre``: one series per genre; an event on an item with several genres counts once in
  each of them, and an item without a genre flag counts in none;
* ``total``: one series, every event.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import numpy as np

from coldbrew.data.forecast.config import SEASON, SERIES_KINDS
from coldbrew.data.forecast.events import Events
from coldbrew.errors import ColdbrewError, DataError

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class DailySeries:
    """Counts ``(num_series, num_days)``; column ``d`` is UTC day ``first_day + d``."""

    kind: str
    counts: np.ndarray  # (num_series, num_days) int64
    names: tuple[str, ...]  # one per row
    first_day: int  # days since 1970-01-01 (UTC) of column 0

    def __post_init__(self) -> None:
        if self.counts.ndim != 2 or self.counts.shape[0] != len(self.names):
            raise DataError(
                f"{self.kind} series: counts of shape {self.counts.shape} for {len(self.names)} names"
            )

    @property
    def num_series(self) -> int:
        return self.counts.shape[0]

    @property
    def num_days(self) -> int:
        return self.counts.shape[1]

    def date(self, day: int) -> datetime.date:
        """The calendar date of column ``day``."""
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=self.first_day + day)

    @property
    def name(self) -> str:
        return f"{self.kind} series"

    @property
    def notes(self) -> list[str]:
        return []

    def summary(self) -> dict:
        """What a run records about its data (``results.json``'s ``dataset``)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "series": self.num_series,
            "days": self.num_days,
            "first_date": str(self.date(0)),
            "last_date": str(self.date(self.num_days - 1)),
            "events": int(self.counts.sum()) if self.kind != "genre" else None,
        }

    def describe(self) -> str:
        return f"{self.num_series} {self.kind} series over {self.num_days} days"


def build_series(events: Events, kind: str) -> DailySeries:
    """Daily counts of ``kind`` (``item``, ``genre`` or ``total``) from ``events``."""
    if kind not in SERIES_KINDS:
        raise ColdbrewError(f"series must be one of {', '.join(SERIES_KINDS)}, not {kind!r}")
    day = events.timestamps // SECONDS_PER_DAY  # floor division: UTC day, also before 1970
    first_day = int(day.min())
    num_days = int(day.max()) - first_day + 1
    cell = events.items * num_days + (day - first_day)  # (item, day) flattened
    item_counts = np.bincount(cell, minlength=events.num_items * num_days).reshape(
        events.num_items, num_days
    )  # (num_items, num_days)
    if kind == "item":
        counts, names = item_counts, tuple(str(item) for item in events.item_ids)
    elif kind == "genre":
        # (num_genres, num_items) @ (num_items, num_days): each event once per genre of its item
        counts = events.item_genres.T.astype(np.int64) @ item_counts
        names = events.genre_names
    else:
        counts, names = item_counts.sum(axis=0, keepdims=True), ("total",)
    return DailySeries(kind=kind, counts=counts, names=names, first_day=first_day)


def synthetic_series(
    num_series: int = 4,
    num_days: int = 140,
    *,
    season: int = SEASON,
    amplitude: float = 0.6,
    seed: int = 0,
    noise: bool = True,
) -> DailySeries:
    """Weekly-seasonal counts with a known shape, for tests.

    Series ``s`` has mean ``level_s * (1 + amplitude * sin(2 pi (d + phase_s) / season))`` on
    day ``d`` (levels uniform in [5, 40], phases uniform over the season); counts are Poisson
    draws of that mean, or the mean rounded when ``noise`` is off.
    """
    rng = np.random.default_rng(seed)
    level = rng.uniform(5.0, 40.0, size=(num_series, 1))
    phase = rng.integers(0, season, size=(num_series, 1))
    days = np.arange(num_days)[None, :]
    mean = level * (1.0 + amplitude * np.sin(2 * np.pi * (days + phase) / season))
    counts = rng.poisson(mean) if noise else np.rint(mean)
    return DailySeries(
        kind="synthetic",
        counts=counts.astype(np.int64),
        names=tuple(f"synthetic-{index}" for index in range(num_series)),
        first_day=0,
    )


def load_series(data: str, kind: str, *, seed: int = 1) -> DailySeries:
    """``kind`` daily series of dataset ``data``; ``"synthetic[:series=N,days=D]"`` gives
    ``synthetic_series`` (weekly-seasonal counts, whatever ``kind``) for tests and demos."""
    name, _, options = str(data).partition(":")
    if name != "synthetic":
        from coldbrew.data.forecast.events import load_events

        return build_series(load_events(data), kind)
    settings = {"series": 4, "days": 140}
    for part in filter(None, (piece.strip() for piece in options.split(","))):
        key, _, value = part.partition("=")
        if key not in settings or not value.isdigit() or int(value) < 1:
            raise DataError(f"synthetic series options are series=N,days=D; got {part!r}")
        settings[key] = int(value)
    return synthetic_series(settings["series"], settings["days"], seed=seed)
