"""Bad data in the general layout: each case one line through the CLI, no traceback, nothing
half-done (no run, no file written)."""

from __future__ import annotations

import pandas as pd
import pytest

from coldbrew.cli import main
from coldbrew.data.dataset import Dataset
from coldbrew.errors import DataError

EVENTS = "user,item,stars,ts\nann,a,5,1\nbob,a,3,2\nbob,b,4,3\n"
ITEMS = "item,title,genres,year\na,Heat,Crime|Drama,1995\nb,Up,Animation,2009\n"
SPEC = (
    "interactions: events.csv\nrating: stars\ntimestamp: ts\nitems: items.csv\n"
    "text: [title]\ncategories: [genres]\nnumeric: [year]\n"
)
MORE = "\nval: cold.csv\n"

CASES = {
    "yaml not yaml": ({"coldbrew.yaml": "interactions: [events.csv\n"}, "not valid YAML"),
    "yaml unknown key": ({"coldbrew.yaml": SPEC + "itmes: x.csv\n"}, "unknown key(s) itmes"),
    "yaml no interactions": ({"coldbrew.yaml": "items: items.csv\n"}, "name the interactions"),
    "yaml list not list": (
        {"coldbrew.yaml": SPEC.replace("[year]", "5")},
        "numeric must be a list",
    ),
    "yaml one column two roles": (
        {"coldbrew.yaml": SPEC + "user: item\nitem: item\n"},
        "column 'item' is named for both user and item: each of user, item, rating, timestamp",
    ),
    "yaml a role's default taken": (
        {"coldbrew.yaml": SPEC + "user: item\n"},
        "column 'item' is named for both user and item (item's default)",
    ),
    "yaml rating is the time": (
        {"coldbrew.yaml": SPEC.replace("rating: stars", "rating: ts")},
        "column 'ts' is named for both rating and timestamp",
    ),
    "yaml min_rating text": ({"coldbrew.yaml": SPEC + "min_rating: high\n"}, "min_rating must"),
    "yaml missing_items": ({"coldbrew.yaml": SPEC + "missing_items: skip\n"}, "error or drop"),
    "file missing": ({"events.csv": None}, "events.csv: file not found"),
    "file empty": ({"events.csv": ""}, "events.csv: empty file; expected a header"),
    "header only": ({"events.csv": "user,item,stars,ts\n"}, "events.csv: no rows after the header"),
    "ragged row": (
        {"events.csv": EVENTS + "cy,b,4,5,6\n"},
        "line 5: 5 fields where the header has 4",
    ),
    "column misnamed": (
        {"events.csv": EVENTS.replace("user,", "uid,")},
        "no column 'user' (it has: uid",
    ),
    "empty user id": ({"events.csv": EVENTS + ",b,4,5\n"}, "line 5: empty user id (1 row(s)"),
    "rating not numeric": (
        {"events.csv": EVENTS + "cy,b,five,5\n"},
        "line 5: rating 'five' is not a number",
    ),
    "timestamp not time": (
        {"events.csv": EVENTS + "cy,b,4,soon\n"},
        "line 5: timestamp 'soon' is not",
    ),
    "item repeated": (
        {"items.csv": ITEMS + "a,Heat 2,Crime,1996\n"},
        "item id 'a' is on 2 rows that differ (line 2, line 4;",
    ),
    "item not in items": (
        {"events.csv": EVENTS + "cy,zz,4,5\n"},
        "1 item id(s) the items table lacks (e.g. 'zz', line 5)",
    ),
    "text column absent": (
        {"coldbrew.yaml": SPEC.replace("[title]", "[plot]")},
        "no column 'plot'",
    ),
    "numeric holds text": (
        {"items.csv": ITEMS + "c,Odd,Drama,new\n"},
        "numeric column 'year' holds 'new'",
    ),
    "two kinds": (
        {"coldbrew.yaml": SPEC.replace("[year]", "[genres]")},
        "genres named twice, or as both category and numeric",
    ),
    "reserved name": (
        {
            "items.csv": ITEMS.replace("genres", "text"),
            "coldbrew.yaml": SPEC.replace("text: [title]\n", "").replace("[genres]", "[text]"),
        },
        "reserved block name",
    ),
    "spreadsheet": (
        {"coldbrew.yaml": SPEC.replace("events.csv", "events.xlsx"), "events.xlsx": EVENTS},
        "events.xlsx: a spreadsheet, not a text table; export it as CSV",
    ),
    "binary file": ({"items.csv": ITEMS.replace("Up", "\x00\x01")}, "not a text table (binary"),
    "cold file warm item": (
        {"coldbrew.yaml": SPEC + MORE, "cold.csv": "user,item\nann,b\n"},
        "cold.csv: 1 item(s) also have training",
    ),
    "no interactions left": ({"coldbrew.yaml": SPEC + "min_rating: 9\n"}, "no interactions"),
    "content without items": (
        {"coldbrew.yaml": SPEC.replace("items: items.csv\n", "")},
        "need an items table",
    ),
    "vectors not numbers": (
        {"coldbrew.yaml": SPEC + "vectors: vec.csv\n", "vec.csv": "item,v0\na,x\n"},
        "then number columns only",
    ),
    "vector repeated": (
        {"coldbrew.yaml": SPEC + "vectors: vec.csv\n", "vec.csv": "item,v0\na,1\na,2\n"},
        "item 'a' has more than one vector",
    ),
    "unknown feature": ({}, "unknown feature block 'genre'"),
}


def write(folder, changes):
    files = {"events.csv": EVENTS, "items.csv": ITEMS, "coldbrew.yaml": SPEC, **changes}
    for name, text in files.items():
        if text is not None:
            (folder / name).write_bytes(text.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_data_is_one_line_naming_the_cause(tmp_path, capsys, case):
    changes, message = CASES[case]
    write(tmp_path, changes)
    features = "genre" if case == "unknown feature" else "genres,numeric"
    assert main(["data", "info", str(tmp_path), "--features", features]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("coldbrew: error: ") and captured.err.count("\n") == 1
    assert message in captured.err and "Traceback" not in captured.err + captured.out


def test_the_good_files_load_and_info_says_what_was_read_dropped_and_guessed(tmp_path, capsys):
    write(tmp_path, {"events.csv": EVENTS + "bob,a,2,4\ncy,zz,4,5\n"})
    (tmp_path / "coldbrew.yaml").write_text(SPEC + "missing_items: drop\n")
    assert main(["data", "info", str(tmp_path), "--features", "genres,numeric"]) == 0
    out = capsys.readouterr().out
    assert "note: events.csv: 5 row(s) read" in out and "note: items.csv: 2 item(s) read" in out
    assert "(e.g. 'zz', line 6): dropped (missing_items: drop)" in out
    assert "note: events.csv: 1 repeated (user, item) row(s) counted once" in out


@pytest.mark.parametrize(
    ("interactions", "items", "message"),
    [
        ({"user": [1, "1"], "item": ["a", "a"]}, None, "user ids of mixed types"),
        ({"user": [1, 2], "item": [1, 2]}, {"item": ["1", "2"]}, "item ids of mixed types"),
        ({"user": [1, 2], "item": [1.0, 2.5]}, None, "item id 2.5 is not a whole number"),
        ({"user": [True, False], "item": [1, 2]}, None, "true/false values"),
    ],
)
def test_mixed_or_odd_id_types_in_frames_are_refused(interactions, items, message):
    items = pd.DataFrame(items) if items else None
    with pytest.raises(DataError, match=message):
        Dataset.from_frames(pd.DataFrame(interactions), items)


def test_one_column_for_two_roles_is_refused_from_flags_and_frames(tmp_path, capsys):
    """``--layout`` over the file, and ``Dataset.from_frames``, are held to one role a column."""
    write(tmp_path, {})
    assert main(["data", "info", str(tmp_path), "--layout", "timestamp=stars"]) == 2
    assert "column 'stars' is named for both rating and timestamp" in capsys.readouterr().err
    frame = pd.DataFrame({"user": ["ann", "bob"], "item": ["a", "b"]})
    with pytest.raises(DataError, match="column 'item' is named for both user and item"):
        Dataset.from_frames(frame, user="item")
    assert Dataset.from_frames(frame).num_users == 2  # distinct columns load
