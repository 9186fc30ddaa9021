"""Daily series against a plain Python loop, and their sums on the real ML-100K."""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pytest

from coldbrew.data.forecast.events import Events, load_events
from coldbrew.data.forecast.series import build_series, synthetic_series
from coldbrew.errors import ColdbrewError
from conftest import shared_path

DAY = 86_400


def random_events(seed: int, num_events: int = 400, num_items: int = 9, num_genres: int = 4):
    rng = np.random.default_rng(seed)
    genres = rng.random((num_items, num_genres)) < 0.4  # some items with 0, some with 2+ genres
    start = 876_000_000 + int(rng.integers(DAY))  # not aligned to midnight
    return Events(
        name="random",
        items=rng.integers(0, num_items, num_events),
        timestamps=start + rng.integers(0, 30 * DAY, num_events),
        item_ids=np.arange(100, 100 + num_items),
        item_genres=genres,
        genre_names=tuple(f"g{index}" for index in range(num_genres)),
    )


def loop_series(events: Events, kind: str) -> np.ndarray:
    """The plain reference: walk the events, add one to each series the event belongs to."""
    days = [int(t) // DAY for t in events.timestamps]
    first, last = min(days), max(days)
    rows = {"item": events.num_items, "genre": len(events.genre_names), "total": 1}[kind]
    counts = [[0] * (last - first + 1) for _ in range(rows)]
    for item, day in zip(events.items.tolist(), days, strict=True):
        if kind == "item":
            targets = [item]
        elif kind == "genre":
            targets = [g for g in range(rows) if events.item_genres[item, g]]
        else:
            targets = [0]
        for row in targets:
            counts[row][day - first] += 1
    return np.array(counts)


@pytest.mark.parametrize("kind", ["item", "genre", "total"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_series_match_a_plain_loop(kind, seed):
    events = random_events(seed)
    series = build_series(events, kind)
    assert np.array_equal(series.counts, loop_series(events, kind))
    assert series.num_series == len(series.names) and series.kind == kind
    assert series.first_day == int(events.timestamps.min()) // DAY


def test_days_are_utc_calendar_days_with_empty_days_kept():
    # 1998-01-01 00:00:00 UTC is 883,612,800 s; events at 23:59:59 on Jan 1, 00:00:00 on Jan 2,
    # and on Jan 5: 5 days from Jan 1 to Jan 5, days 3 and 4 empty
    midnight = 883_612_800
    events = Events(
        name="utc",
        items=np.array([0, 1, 0]),
        timestamps=np.array([midnight + DAY - 1, midnight + DAY, midnight + 4 * DAY + 5]),
        item_ids=np.array([7, 8]),
        item_genres=np.array([[True, True], [False, True]]),
        genre_names=("a", "b"),
    )
    items = build_series(events, "item")
    assert items.counts.tolist() == [[1, 0, 0, 0, 1], [0, 1, 0, 0, 0]]
    assert items.names == ("7", "8") and items.date(0) == datetime.date(1998, 1, 1)
    # item 7 is in genres a and b, item 8 in b: each event counts once per genre of its item
    assert build_series(events, "genre").counts.tolist() == [[1, 0, 0, 0, 1], [1, 1, 0, 0, 1]]
    assert build_series(events, "total").counts.tolist() == [[1, 1, 0, 0, 1]]


def test_unknown_kind():
    with pytest.raises(ColdbrewError, match="series must be one of item, genre, total"):
        build_series(random_events(0), "user")


def test_synthetic_series_is_seeded_and_weekly():
    first, again = synthetic_series(3, 70, seed=5), synthetic_series(3, 70, seed=5)
    assert first.counts.shape == (3, 70) and np.array_equal(first.counts, again.counts)
    exact = synthetic_series(3, 70, seed=5, noise=False).counts
    assert np.array_equal(exact[:, 7:], exact[:, :-7])  # the noiseless shape repeats weekly
    assert (exact.max(axis=1) > 1.5 * exact.min(axis=1)).all()  # and has a real weekly swing


@pytest.mark.shared_data
def test_ml100k_series_sum_consistently():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 3 ratings by a user not in u.user are dropped
        events = load_events(shared_path("ml-100k"))
    items, genres, total = (build_series(events, kind) for kind in ("item", "genre", "total"))
    assert items.counts.shape == (1682, 215) and genres.counts.shape == (19, 215)
    assert total.counts.shape == (1, 215) and total.counts.sum() == 100_000
    assert np.array_equal(items.counts.sum(axis=0), total.counts[0])  # total = sum of items
    # each genre = the sum of its items' series; the genre sum counts an item once per genre
    flags = events.item_genres
    for genre in range(19):
        assert np.array_equal(genres.counts[genre], items.counts[flags[:, genre]].sum(axis=0))
    per_item_genres = flags.sum(axis=1)
    assert genres.counts.sum() == (items.counts.sum(axis=1) * per_item_genres).sum()
    assert (per_item_genres > 0).all()  # every ML-100K item has a genre (maybe "unknown")
    assert items.date(0) == datetime.date(1997, 9, 20)
    assert items.date(214) == datetime.date(1998, 4, 22)
