"""RecBole's atomic files (NAME.inter, NAME.item with typed headers) read as they are."""

from __future__ import annotations

import json
import re

import pytest

from coldbrew.data import load_dataset
from coldbrew.errors import DataError
from conftest import shared_path

INTER = (
    "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    "1\t10\t4\t881250949\n1\t20\t3\t881250950\n2\t10\t5\t881250951\n2\t30\t1\t881250952\n"
    "2\t99\t2\t881250953\n"
)
ITEM = (
    "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\temb:float_seq\n"
    "10\tToy Story\t1995\tAnimation Comedy\t1 2\n20\tHeat\t1995\tCrime\t3 4\n"
    "30\tUp\t2009\tAnimation\t5 6\n40\tNew\t\tDrama\t\n"
)


def atomic(folder, inter=INTER, item=ITEM, name="tiny"):
    (folder / f"{name}.inter").write_text(inter)
    if item is not None:
        (folder / f"{name}.item").write_text(item)
    return folder


def test_typed_fields_become_ids_rating_time_text_categories_numbers_and_vectors(tmp_path):
    data = load_dataset(atomic(tmp_path), text_vectors=False)
    assert data.item_ids.tolist() == [10, 20, 30, 40] and data.user_ids.tolist() == [1, 2]
    assert data.item_text[0] == "Movie title: Toy Story."
    assert data.feature_columns["class"] == ["Animation", "Comedy", "Crime", "Drama"]
    assert data.features["class"][0].tolist() == [1, 1, 0, 0]  # space-separated token_seq
    assert data.feature_columns["numeric"] == ["release_year"]  # a token of numbers
    assert data.features["vectors"].tolist() == [[1, 2], [3, 4], [5, 6], [0, 0]]
    assert data.item_first_seen.tolist()[:3] == [881250949.0, 881250950.0, 881250952.0]
    assert any(
        "item id(s) the items table lacks (e.g. 99, line 6)" in n for n in data.notes
    )  # dropped
    assert data.num_train == 4 and list(data.cold_items) == [3]


def test_string_tokens_stay_text_and_the_item_file_is_optional(tmp_path):
    inter = "user_id:token\titem_id:token\nann\tB00X\nbob\tB00X\nbob\t0042\n"
    data = load_dataset(atomic(tmp_path, inter=inter, item=None))
    assert list(data.item_ids) == ["0042", "B00X"] and list(data.user_ids) == ["ann", "bob"]


@pytest.mark.parametrize(
    ("inter", "message"),
    [
        ("user_id\titem_id\n1\t2\n", "line 1: field 'user_id' is not NAME:TYPE"),
        ("user_id:token\titem_id:tokens\n1\t2\n", "field 'item_id:tokens' is not NAME:TYPE"),
        ("user_id:token\titem_id:token\trating:float\n1\t2\tgood\n", "rating 'good' is not a"),
    ],
)
def test_malformed_atomic_files_are_one_line_errors(tmp_path, inter, message):
    with pytest.raises(DataError, match=message):
        load_dataset(atomic(tmp_path, inter=inter, item=None))


def recbole_ml100k(folder):
    """RecBole's own ml-100k atomic files, written from the MovieLens originals as RecBole's
    conversion script does (title and year apart, genres as a space-separated class)."""
    source = shared_path("ml-100k")
    genres = [line.split("|")[0] for line in (source / "u.genre").read_text().split("\n") if line]
    rows = ["user_id:token\titem_id:token\trating:float\ttimestamp:float"]
    rows += ["\t".join(line.split()) for line in (source / "u.data").read_text().splitlines()]
    (folder / "ml-100k.inter").write_text("\n".join(rows) + "\n")
    items = ["item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq"]
    for line in (source / "u.item").read_text(encoding="latin-1").splitlines():
        fields = line.split("|")
        dated = re.match(r"^(.*) \((\d{4})\)\s*$", fields[1])
        title, year = dated.groups() if dated else (fields[1].strip(), "")
        classes = " ".join(g for g, flag in zip(genres, fields[5:], strict=False) if flag == "1")
        items.append(f"{fields[0]}\t{title}\t{year.rstrip(')')}\t{classes}")
    (folder / "ml-100k.item").write_text("\n".join(items) + "\n")
    return folder


@pytest.mark.slow
def test_recboles_ml100k_loads_and_trains_an_epoch_with_a_time_cold_split(tmp_path):
    from coldbrew.cli import main

    (tmp_path / "ml-100k").mkdir()
    folder = recbole_ml100k(tmp_path / "ml-100k")
    data = load_dataset(folder, features=["class", "numeric"])
    pairs = {
        tuple(line.split()[:2]) for line in (folder / "ml-100k.inter").read_text().splitlines()[1:]
    }
    users = {user for user, _ in pairs}
    assert (data.num_users, data.num_items, data.num_train) == (len(users), 1682, len(pairs))
    assert data.features["class"].shape == (1682, 19)
    out = tmp_path / "run"
    flags = ["--features", "class,numeric", "--cold-split", "time:0.2", "--epochs", "1"]
    assert main(["train", "--data", str(folder), *flags, "--quiet", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["dataset"]["cold_split"]["cold_items"] == 336
    assert results["metrics"]["report"]["cold"]["recall@20"] >= 0.0
