"""The general layout given as flags (``--layout KEY=VALUE``) or a config's ``layout:`` mapping:
the same data as coldbrew.yaml, over it key by key, and refused in one line where it cannot
apply."""

from __future__ import annotations

import json

import pytest
import torch

from coldbrew.cli import main
from coldbrew.config import Flags, make_config
from coldbrew.data import load_dataset
from coldbrew.data.tables.settings import parse_layout_flags
from coldbrew.errors import ColdbrewError, DataError

EVENTS = "uid,sku,stars\nann,a,5\nbob,a,3\nbob,b,4\ncy,b,2\ncy,c,5\n"
COLD = "uid,sku,stars\nann,d,4\nbob,e,5\n"
ITEMS = "sku,genres,band,year\na,X|Y,G,1990\nb,Y,PG,2001\nc,Z,G,1995\nd,X,PG,2010\ne,Z,G,1980\n"
FLAGS = [
    "interactions=events.csv",
    "user=uid",
    "item=sku",
    "rating=stars",
    "items=items.csv",
    "categories=genres,band",
    "numeric=year",
    "val=cold.csv",
]
SPEC = (
    "interactions: events.csv\nuser: uid\nitem: sku\nrating: stars\nitems: items.csv\n"
    "categories: [genres, band]\nnumeric: [year]\nval: cold.csv\n"
)


@pytest.fixture
def tables(tmp_path):
    """A folder of plain files and no coldbrew.yaml."""
    for name, text in (("events.csv", EVENTS), ("cold.csv", COLD), ("items.csv", ITEMS)):
        (tmp_path / name).write_text(text)
    return tmp_path


def assert_same_data(mine, theirs) -> None:
    assert mine.summary() == theirs.summary() and mine.notes == theirs.notes
    assert mine.item_ids.tolist() == theirs.item_ids.tolist()
    assert mine.user_ids.tolist() == theirs.user_ids.tolist()
    assert (mine.train != theirs.train).nnz == 0
    assert (mine.splits["val"]["cold"] != theirs.splits["val"]["cold"]).nnz == 0
    assert mine.feature_columns == theirs.feature_columns
    assert all(torch.equal(mine.features[k], theirs.features[k]) for k in theirs.features)


def test_flags_alone_give_the_dataset_coldbrew_yaml_gives(tables):
    from_flags = load_dataset(tables, layout=parse_layout_flags(FLAGS))
    (tables / "coldbrew.yaml").write_text(SPEC)
    assert_same_data(from_flags, load_dataset(tables))
    assert list(from_flags.features) == ["genres", "band", "numeric"]
    assert from_flags.num_train == 5 and from_flags.splits["val"]["cold"].nnz == 2


def test_data_info_with_flags_prints_what_it_prints_for_coldbrew_yaml(tables, capsys):
    flags = [word for flag in FLAGS for word in ("--layout", flag)]
    assert main(["data", "info", str(tables), *flags, "--json"]) == 0
    from_flags = json.loads(capsys.readouterr().out)
    (tables / "coldbrew.yaml").write_text(SPEC)
    assert main(["data", "info", str(tables), "--json"]) == 0
    assert from_flags == json.loads(capsys.readouterr().out)


def test_a_flag_wins_over_its_coldbrew_yaml_key_and_the_other_keys_stay(tables):
    (tables / "coldbrew.yaml").write_text(SPEC + "min_rating: 3\n")
    plain = load_dataset(tables)
    assert list(plain.features) == ["genres", "band", "numeric"] and plain.num_train == 4
    layout = parse_layout_flags(["categories=band", "min_rating=5"])
    data = load_dataset(tables, layout=layout)
    assert list(data.features) == ["band", "numeric"]  # categories replaced, numeric kept
    assert data.num_train == 2  # only the 5-star rows: ann-a and cy-c
    assert data.splits["val"]["cold"].nnz == 1  # val: cold.csv still read, bob-e (5) kept


def test_flag_texts_become_what_coldbrew_yaml_holds():
    layout = parse_layout_flags(
        ["text=title, plot", "categories=genres", "min_rating=3.5", "category_separator=,"]
    )
    assert layout == {
        "text": ["title", "plot"],
        "categories": ["genres"],
        "min_rating": 3.5,
        "category_separator": ",",  # a separator is not split at commas
    }
    assert parse_layout_flags(["user=a", "user=b"]) == {"user": "b"}  # the last one wins


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("txt=title", "--layout: unknown key(s) txt; known: interactions, items, vectors"),
        ("interactions", "--layout takes KEY=VALUE (e.g. --layout interactions=events.csv"),
        ("=events.csv", "--layout takes KEY=VALUE"),
        ("user=uid,name", "--layout: user takes one name, not a list (uid,name)"),
        ("items=a.csv,b.csv", "items takes one name, not a list"),
        ("rating=", "--layout: rating must be a name, not ''"),
        ("min_rating=high", "--layout: min_rating must be a number, not 'high'"),
    ],
)
def test_a_bad_flag_is_one_line_naming_the_cause(tables, capsys, flag, message):
    argv = ["--layout", "interactions=events.csv", "--layout", flag]
    assert main(["data", "info", str(tables), *argv]) == 2
    error = capsys.readouterr().err
    assert error.startswith("coldbrew: error: ") and error.count("\n") == 1
    assert message in error and "Traceback" not in error


def test_flags_are_refused_for_data_that_is_not_your_own_tables(tmp_path, tables, capsys):
    prepared = tmp_path / "prepared"  # the train.csv + cold_val.csv layout (ml-1m-coldstart's)
    prepared.mkdir()
    for name in ("train.csv", "cold_val.csv"):
        (prepared / name).write_text("uid,iid\n1,1\n")
    refusal = "is not your own tables (no coldbrew.yaml, no --layout interactions=FILE)"
    for data in (str(prepared), "synthetic", str(tables)):  # tables: its files named by none
        assert main(["data", "info", data, "--layout", "text=title"]) == 2
        error = capsys.readouterr().err
        assert refusal in error and "layout flags apply only to those" in error
    with pytest.raises(DataError, match="not your own tables"):
        load_dataset("synthetic", layout={"interactions": "events.csv"})


def test_a_config_layout_mapping_is_checked_and_flags_go_over_it_key_by_key(tables):
    preset = {"data": str(tables), "model": "ridge", "layout": {"interactions": "events.csv"}}
    preset["layout"].update(user="uid", item="sku", items="items.csv", categories="genres")
    config = make_config(preset, Flags({"layout": ["categories=band", "numeric=year"]}))
    assert config.layout == {
        "interactions": "events.csv",
        "user": "uid",
        "item": "sku",
        "items": "items.csv",
        "categories": ["band"],
        "numeric": ["year"],
    }
    assert make_config(config.to_dict()).layout == config.layout  # as a run's config.yaml
    assert make_config({"layout": None}).layout is None
    for bad, message in (
        ({"txt": ["title"]}, "option 'layout': unknown key(s) txt; known: interactions"),
        ({"user": ["a", "b"]}, "option 'layout': user takes one name, not a list (a,b)"),
        ("text=title", "option 'layout': expected a mapping of coldbrew.yaml's keys"),
    ):
        with pytest.raises(ColdbrewError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make_config({"layout": bad})
    with pytest.raises(ColdbrewError, match="'layout' is shared by every model"):
        make_config({"model": "ridge", "ridge": {"layout": {"user": "uid"}}})


def test_a_forecast_refuses_a_layout():
    from coldbrew.tasks import load_data

    config = make_config({"model": "lstm", "data": "synthetic", "layout": {"text": "title"}})
    with pytest.raises(ColdbrewError, match="--layout applies only to your own tables"):
        load_data("forecasting", config)
