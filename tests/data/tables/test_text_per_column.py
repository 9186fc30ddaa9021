"""``text_mode: per_column``: each text column encoded alone, the text block their vectors side
by side; a new item's one text cannot fill such a block and is refused by name."""

from __future__ import annotations

import pandas as pd
import pytest

import coldbrew
from coldbrew.cli import main
from coldbrew.errors import DataError
from text_support import fake_encoder

EVENTS = pd.DataFrame({"user": ["a", "b", "b", "c"], "item": ["s1", "s1", "s2", "s2"]})
ITEMS = pd.DataFrame(
    {"item": ["s1", "s2", "s3"], "title": ["Up", "Heat", "Big"], "plot": ["A house.", "", "A boy."]}
)


@pytest.fixture
def seen(monkeypatch):
    return fake_encoder(monkeypatch)


def test_each_column_is_encoded_alone_and_the_vectors_lie_side_by_side(seen):
    data = coldbrew.Dataset.from_frames(
        EVENTS, ITEMS, text=["title", "plot"], text_mode="per_column"
    )
    assert seen == [
        ["Title: Big.", "Title: Heat.", "Title: Up."],  # each column's distinct texts, sorted
        ["Plot: A boy.", "Plot: A house."],
    ]
    # "Title: Up." is 10 characters, "Plot: A house." 14; s2 has no plot: zeros in its half
    assert data.features["text"].tolist() == [[10, 1, 14, 1], [12, 1, 0, 0], [11, 1, 12, 1]]
    assert (
        data.text_fields == ["title", "plot"] and data.item_text[0] == "Title: Up. Plot: A house."
    )
    unread = {"text": ["title", "plot"], "text_mode": "per_column", "text_vectors": False}
    assert coldbrew.Dataset.from_frames(EVENTS, ITEMS, **unread).text_fields is None  # no block
    joined = coldbrew.Dataset.from_frames(EVENTS, ITEMS, text=["title", "plot"])
    assert joined.text_fields is None and joined.features["text"].shape == (3, 2)


def test_a_bad_mode_and_an_empty_column_are_refused(seen):
    with pytest.raises(DataError, match="text_mode must be joined or per_column, not 'apart'"):
        coldbrew.Dataset.from_frames(EVENTS, ITEMS, text=["title"], text_mode="apart")
    with pytest.raises(DataError, match="text column 'plot' is empty for every item"):
        coldbrew.Dataset.from_frames(
            EVENTS, ITEMS.assign(plot=""), text=["title", "plot"], text_mode="per_column"
        )


def test_a_new_items_text_is_refused_for_a_per_column_run(seen, tmp_path, capsys):
    folder, run = tmp_path / "shop", tmp_path / "run"
    folder.mkdir()
    events = [(f"u{user}", f"s{(user + step) % 5}") for user in range(8) for step in (0, 1)]
    pd.DataFrame(events, columns=["user", "item"]).to_csv(folder / "events.csv", index=False)
    items = {"item": [f"s{i}" for i in range(6)], "title": list("ABCDEF"), "plot": ["x."] * 6}
    pd.DataFrame(items).to_csv(folder / "items.csv", index=False)  # s5: cold
    layout = ["interactions=events.csv", "items=items.csv", "text=title,plot"]
    layout += ["text_mode=per_column"]
    flags = [word for setting in layout for word in ("--layout", setting)]
    argv = ["train", "--data", str(folder), *flags, "--model", "ridge", "--device", "cpu"]
    assert main([*argv, "--quiet", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["recommend", "--run", str(run), "--item-text", "A dog."]) == 2
    error = capsys.readouterr().err
    assert "one vector per text column (title, plot; text_mode: per_column)" in error
    assert error.count("\n") == 1
