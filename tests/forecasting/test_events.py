"""Timestamped events: read from MovieLens-100K files, refused for sources without times."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from coldbrew.data.forecast.events import Events, load_events
from coldbrew.data.loaders.movielens import read_ratings, read_timestamped_ratings
from coldbrew.errors import DataError
from conftest import shared_path

DAY = 86_400


def item_line(item: int, genres: tuple[int, ...]) -> str:
    flags = ["1" if index in genres else "0" for index in range(19)]
    return "|".join([str(item), f"Film {item} (1990)", "01-Jan-1995", "", "http://x", *flags])


def write_ml100k(root: Path, ratings: list[tuple[int, int, int]]) -> Path:
    """Items 10, 20, 30 (genres: Action; Comedy + Drama; none); ``(user, item, timestamp)`` rows."""
    root.mkdir(parents=True, exist_ok=True)
    items = [item_line(10, (1,)), item_line(20, (5, 8)), item_line(30, ())]
    (root / "u.item").write_text("\n".join(items) + "\n", encoding="latin-1")
    (root / "u.data").write_text("".join(f"{u}\t{i}\t3\t{t}\n" for u, i, t in ratings))
    return root


def test_events_keep_items_times_and_genres(tmp_path):
    ratings = [(1, 20, 5 * DAY + 10), (2, 10, 3 * DAY), (1, 30, 7 * DAY - 1)]
    events = load_events(write_ml100k(tmp_path / "ml", ratings))
    assert events.name == "ml" and events.num_events == 3 and events.num_items == 3
    assert events.item_ids.tolist() == [10, 20, 30]
    assert events.items.tolist() == [1, 0, 2]  # internal positions of items 20, 10, 30
    assert events.timestamps.tolist() == [5 * DAY + 10, 3 * DAY, 7 * DAY - 1]
    assert len(events.genre_names) == 19 and events.genre_names[1] == "Action"
    flagged = [np.flatnonzero(row).tolist() for row in events.item_genres]
    assert flagged == [[1], [5, 8], []]  # u.genre's column order, not sorted by name


def test_users_missing_from_u_user_are_dropped_with_a_note(tmp_path):
    root = write_ml100k(tmp_path / "ml", [(1, 10, DAY), (9, 20, DAY), (2, 30, 2 * DAY)])
    (root / "u.user").write_text("1|30|M|other|0\n2|30|F|other|0\n")
    events = load_events(root)  # a note, not a warning (the data layer's rule)
    assert events.items.tolist() == [0, 2]  # user 9's rating of item 20 is gone
    assert any("1 rating(s) by 1 user(s)" in note for note in events.notes)


def test_unknown_item_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="item 99 is not in u.item"):
        load_events(write_ml100k(tmp_path / "ml", [(1, 99, DAY)]))


def test_timestamped_reader_leaves_the_plain_reader_unchanged(tmp_path):
    root = write_ml100k(tmp_path / "ml", [(4, 20, 123), (5, 10, 456)])
    users, items = read_ratings(root / "u.data")
    assert users.tolist() == [4, 5] and items.tolist() == [20, 10]
    users, items, times = read_timestamped_ratings(root / "u.data")
    assert (users.tolist(), items.tolist(), times.tolist()) == ([4, 5], [20, 10], [123, 456])


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"train.csv": "uid,iid\n0,0\n", "cold_val.csv": "uid,iid\n0,1\n"}, "uid,iid CSV split"),
        ({"train.npy": ""}, "CLCRec .npy layout"),
        ({"notes.txt": "hello"}, "no known dataset layout with timestamps"),
    ],
)
def test_sources_without_timestamps_are_refused(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(DataError, match=message):
        load_events(tmp_path)


def test_synthetic_has_no_timestamps():
    with pytest.raises(DataError, match="needs interaction timestamps.*synthetic data has none"):
        load_events("synthetic:users=10")


def test_events_validate_their_shapes():
    common = {"name": "x", "item_ids": np.array([1, 2]), "genre_names": ("a",)}
    genres = np.zeros((2, 1), dtype=bool)
    with pytest.raises(DataError, match="no events"):
        Events(
            items=np.array([], dtype=np.int64),
            timestamps=np.array([]),
            item_genres=genres,
            **common,
        )
    with pytest.raises(DataError, match="out of range"):
        Events(items=np.array([2]), timestamps=np.array([0]), item_genres=genres, **common)
    with pytest.raises(DataError, match="genre flags of shape"):
        Events(items=np.array([0]), timestamps=np.array([0]), item_genres=genres[:1], **common)


@pytest.mark.shared_data
def test_shared_ml100k_events():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shared copy has 3 ratings by a user not in u.user
        events = load_events(shared_path("ml-100k"))
    assert events.num_events == 100_000 and events.num_items == 1682
    days = events.timestamps // DAY
    assert int(days.max() - days.min()) + 1 == 215
