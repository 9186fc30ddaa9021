"""Timestamped interactions, the raw material of the daily series.

An *event* is one interaction: an item and the Unix time (seconds, UTC) it happened. Today the
one source with times is raw MovieLens-100K (``u.data``: ``user item rating timestamp``), read
through ``coldbrew.data.loaders.movielens`` with the same rules as ``load_dataset``: ratings by users
missing from ``u.user`` are dropped with a note, an item missing from ``u.item`` is an error.
Every rating is one event (ML-100K has no repeated user-item pair, so this equals the
interactions ``load_dataset`` counts). Genres come from ``u.item``'s flags.

Sources without times (the ml-1m-coldstart CSVs, the CLCRec ``.npy`` layout, ``synthetic``)
raise ``DataError`` saying so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coldbrew.errors import DataError

NO_TIMESTAMPS = (
    "forecasting needs interaction timestamps (e.g. ml-100k's u.data), and {what} has none"
)


@dataclass(frozen=True)
class Events:
    """Events in internal item order, with each item's genres."""

    name: str
    items: np.ndarray  # (num_events,) int64 internal item index
    timestamps: np.ndarray  # (num_events,) int64 Unix seconds, UTC
    item_ids: np.ndarray  # (num_items,) source id of each internal item
    item_genres: np.ndarray  # (num_items, num_genres) bool
    genre_names: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.items) == 0:
            raise DataError(f"{self.name}: no events")
        if self.items.shape != self.timestamps.shape or self.items.ndim != 1:
            raise DataError(
                f"{self.name}: {len(self.items)} items but {len(self.timestamps)} timestamps"
            )
        if self.items.min() < 0 or self.items.max() >= self.num_items:
            raise DataError(f"{self.name}: event item out of range 0..{self.num_items - 1}")
        if self.item_genres.shape != (self.num_items, len(self.genre_names)):
            raise DataError(
                f"{self.name}: genre flags of shape {self.item_genres.shape}, expected "
                f"({self.num_items}, {len(self.genre_names)})"
            )

    @property
    def num_items(self) -> int:
        return len(self.item_ids)

    @property
    def num_events(self) -> int:
        return len(self.items)


def load_events(path_or_name: str | os.PathLike) -> Events:
    """Events of a dataset folder or known name (``"ml-100k"``, resolved like ``load_dataset``)."""
    if str(path_or_name).split(":")[0] == "synthetic":
        raise DataError(NO_TIMESTAMPS.format(what="synthetic data"))
    from coldbrew.data import resolve_data_path
    from coldbrew.data.loaders import clcrec_layout, csv_coldstart, movielens

    path = resolve_data_path(path_or_name)
    if not path.is_dir():
        raise DataError(f"{path} is not a directory")
    if movielens.detect(path):
        return read_movielens_events(path)
    if csv_coldstart.detect(path):
        raise DataError(f"{path}: " + NO_TIMESTAMPS.format(what="a uid,iid CSV split"))
    if clcrec_layout.detect(path):
        raise DataError(f"{path}: " + NO_TIMESTAMPS.format(what="the CLCRec .npy layout"))
    raise DataError(f"{path}: no known dataset layout with timestamps (expected u.data + u.item)")


def read_movielens_events(path: Path) -> Events:
    """Events of raw MovieLens-100K at ``path`` (see the module docstring for the rules)."""
    from coldbrew.data.loaders.movielens import (
        item_positions,
        read_genre_names,
        read_items,
        read_timestamped_ratings,
        user_catalogue,
    )

    notes: list[str] = []
    genre_names = read_genre_names(path / "u.genre")
    item_ids, _, genres = read_items(path / "u.item", genre_names)
    users, items, timestamps = read_timestamped_ratings(path / "u.data")
    known_user = np.isin(users, user_catalogue(path, users, notes))
    items, timestamps = items[known_user], timestamps[known_user]
    column = {genre: index for index, genre in enumerate(genre_names)}
    flags = np.zeros((len(item_ids), len(genre_names)), dtype=bool)  # u.genre's column order
    for row, item_genres in enumerate(genres):
        flags[row, [column[genre] for genre in item_genres]] = True
    return Events(
        name=path.name,
        items=item_positions(item_ids, items, path / "u.data"),
        timestamps=timestamps,
        item_ids=item_ids,
        item_genres=flags,
        genre_names=tuple(genre_names),
        notes=tuple(notes),
    )
