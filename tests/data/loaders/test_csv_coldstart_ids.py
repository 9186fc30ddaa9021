"""Text ids in the CSV cold-start layout: read as written, one type per kind in every file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coldbrew.data.loaders import csv_coldstart
from coldbrew.data.tables import csv_files
from coldbrew.errors import DataError

# the split of test_csv_coldstart.py with text ids: iid 10 -> "m10", uid 7 -> "u7", ...
ITEMS = """iid,title,genres
m50,Heat (1995),Action|Crime
m10,"Matrix, The (1999)",Action|Sci-Fi
m20,"Postman, The (Postino, Il) (1994)",Comedy|Drama
m30,Toy Story (1995),Animation|Children
m40,Unlisted Film (1990),(no genres listed)
"""
TRAIN = "uid,iid\nu7,m10\nu7,m20\nu3,m20\nu3,m50\n"
COLD_VAL = "uid,iid\nu3,m30\nu9,m30\n"


def write_split(root: Path, **files: str) -> Path:
    contents = {"items.csv": ITEMS, "train.csv": TRAIN, "cold_val.csv": COLD_VAL, **files}
    for name, text in contents.items():
        (root / name).write_text(text, encoding="utf-8", newline="")
    return root


def as_integers(text: str) -> str:
    """The same file with the integer ids of test_csv_coldstart.py."""
    return text.replace(",m", ",").replace("\nm", "\n").replace("\nu", "\n")


def load(path: Path):
    return csv_coldstart.load(path, features=["genre"])


def test_text_ids_come_back_as_written_and_load_like_integer_ids(tmp_path):
    (tmp_path / "text").mkdir()
    (tmp_path / "int").mkdir()
    text = load(write_split(tmp_path / "text"))
    files = {"items.csv": ITEMS, "train.csv": TRAIN, "cold_val.csv": COLD_VAL}
    numbers = load(write_split(tmp_path / "int", **{k: as_integers(v) for k, v in files.items()}))
    assert text.item_ids.tolist() == ["m10", "m20", "m30", "m40", "m50"]
    assert text.user_ids.tolist() == ["u3", "u7", "u9"]
    assert text.item_ids.dtype == object and text.user_ids.dtype == object
    assert numbers.item_ids.tolist() == [10, 20, 30, 40, 50]
    assert numbers.item_ids.dtype == np.int64 and numbers.user_ids.dtype == np.int64
    # same sorted order either way, so the same matrices, cold items, texts and genres
    assert (text.train != numbers.train).nnz == 0
    assert (text.splits["val"]["cold"] != numbers.splits["val"]["cold"]).nnz == 0
    assert text.cold_items.tolist() == numbers.cold_items.tolist() == [2, 3]
    assert text.item_text == numbers.item_text
    assert text.features["genre"].tolist() == numbers.features["genre"].tolist()


@pytest.mark.parametrize("vectorised", [True, False])
def test_zero_padded_and_signed_ids_stay_integers_as_before(tmp_path, monkeypatch, vectorised):
    if not vectorised:
        monkeypatch.setattr(csv_files, "integer_columns", lambda *args, **kwargs: None)
    files = {
        "items.csv": as_integers(ITEMS).replace("\n10,", "\n010,"),
        "train.csv": 'uid,iid\n007,"+10"\n3, 20\n',
        "cold_val.csv": "uid,iid\n3,30\n",
    }
    dataset = load(write_split(tmp_path, **files))
    assert dataset.user_ids.tolist() == [3, 7] and dataset.item_ids.tolist()[:2] == [10, 20]
    assert dataset.user_ids.dtype == dataset.item_ids.dtype == np.int64


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (  # one file mixing the two kinds: the line of the first id unlike the first one
            {"train.csv": "uid,iid\nu7,m10\n\n7,m20\n"},
            r"train.csv, line 4: uid and iid must be integers, or every uid text: "
            r"uid '7' is an integer but line 2's is text$",
        ),
        (  # integers in one file, text in another
            {"cold_val.csv": "uid,iid\n3,m30\n"},
            r"cold_val.csv, line 2: uid and iid must be integers, or every uid text: "
            r"uid 3 is an integer but train.csv's uids are text$",
        ),
        (
            {"items.csv": "iid,title,genres\nm10,a,b\n20,c,d\n"},
            r"items.csv, line 3: iid must be an integer, or every iid text: "
            r"iid '20' is an integer but line 2's is text$",
        ),
        (
            {"items.csv": "iid,title,genres\nm10,a,b\nm10,c,d\n"},
            r"items.csv, line 3: iid 'm10' listed twice$",
        ),
        ({"train.csv": "uid,iid\nu7,m10\n,m20\n"}, r"train.csv, line 3: empty uid$"),
    ],
)
def test_mixed_repeated_or_empty_ids_are_one_line_naming_the_line(tmp_path, files, message):
    with pytest.raises(DataError, match=message) as raised:
        load(write_split(tmp_path, **files))
    assert "\n" not in str(raised.value)


def test_integer_items_and_text_interactions_are_refused(tmp_path):
    with pytest.raises(DataError) as raised:
        load(write_split(tmp_path, **{"items.csv": as_integers(ITEMS)}))
    assert str(raised.value).endswith(
        "train.csv, line 2: uid and iid must be integers, or every iid text: iid 'm10' is text "
        "but items.csv's iids are integers"
    )


@pytest.mark.parametrize(
    ("cold_val", "shown", "line"),
    [
        ("uid,iid\nu3,m30\n\nu9,zz\nu9,zz\n", "'zz'", 4),  # text ids: read line by line
        ("uid,iid\n3,30\n\n9,99\n", "99", 4),  # integer ids: read by pandas, line found after
    ],
)
def test_an_unknown_iid_names_its_file_and_line(tmp_path, cold_val, shown, line):
    files = {"cold_val.csv": cold_val}
    if shown == "99":
        files.update({k: as_integers(v) for k, v in (("items.csv", ITEMS), ("train.csv", TRAIN))})
    with pytest.raises(DataError) as raised:
        load(write_split(tmp_path, **files))
    assert str(raised.value) == (
        f"{tmp_path / 'cold_val.csv'}: 1 iid(s) not in items.csv (e.g. {shown}) from line "
        f"{line}; items.csv must list every item"
    )


def refuse_line_by_line(*args, **kwargs):
    raise AssertionError("expected pandas' parser, but the line-by-line parser was called")


def test_text_pairs_take_pandas_path_and_match_the_line_by_line_reading(tmp_path, monkeypatch):
    rows = np.random.default_rng(0).integers(0, 50, size=(300, 2))
    body = "\n".join(f'u{u},"i {i}"' if u % 7 else f" u{u} ,i {i}" for u, i in rows)
    path = tmp_path / "pairs.csv"
    path.write_text("uid,iid\n" + body + "\n\n")
    with monkeypatch.context() as patch:
        patch.setattr(csv_files, "_parse_lines", refuse_line_by_line)
        users, items = csv_files.read_pairs(path)
    monkeypatch.setattr(csv_files, "text_columns", lambda *args, **kwargs: None)
    reference_users, reference_items = csv_files.read_pairs(path)
    assert users.tolist() == reference_users.tolist() == [f"u{u}" for u in rows[:, 0]]
    assert items.tolist() == reference_items.tolist() == [f"i {i}" for i in rows[:, 1]]
    assert users.dtype == items.dtype == object


def test_ids_pandas_would_read_as_missing_are_text_too(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("uid,iid\nNA,null\nu2,nan\n")
    users, items = csv_files.read_pairs(path)
    assert users.tolist() == ["NA", "u2"] and items.tolist() == ["null", "nan"]


def test_ml1m_coldstart_with_text_ids_is_the_same_data(tmp_path):
    """The shared split rewritten with ids u<uid> / m<iid>: item for item and user for user the
    same interactions, cold items, texts (movies_extrainfos.dat joined alike) and genres."""
    import csv
    import shutil

    from conftest import shared_path

    source = shared_path("ml-1m-coldstart")
    for name in ("train.csv", "cold_val.csv"):
        lines = (source / name).read_text().splitlines()
        rows = (line.split(",") for line in lines[1:] if line)
        (tmp_path / name).write_text("\n".join([lines[0], *(f"u{u},m{i}" for u, i in rows)]))
    with open(source / "items.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    with open(tmp_path / "items.csv", "w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([rows[0], *([f"m{row[0]}", *row[1:]] for row in rows[1:])])
    shutil.copy(source / "movies_extrainfos.dat", tmp_path)
    text, prepared = load(tmp_path), load(source)
    items_at = np.searchsorted(prepared.item_ids, [int(i[1:]) for i in text.item_ids])
    users_at = np.searchsorted(prepared.user_ids, [int(u[1:]) for u in text.user_ids])
    assert (prepared.item_ids[items_at] == [int(i[1:]) for i in text.item_ids]).all()
    for mine, theirs in (
        (text.train, prepared.train),
        (text.splits["val"]["cold"], prepared.splits["val"]["cold"]),
    ):
        assert (mine != theirs[users_at][:, items_at]).nnz == 0
    assert sorted(items_at[text.cold_items]) == prepared.cold_items.tolist()
    assert text.item_text == [prepared.item_text[i] for i in items_at]
    assert text.features["genre"].tolist() == prepared.features["genre"][items_at].tolist()
    assert text.notes == prepared.notes
