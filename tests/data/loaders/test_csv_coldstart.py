"""The CSV cold-start loader on hand-made splits with known answers, and on ml-1m-coldstart."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from coldbrew.data import load_dataset
from coldbrew.data.features import normalise_title, title_keys
from coldbrew.data.loaders import csv_coldstart
from coldbrew.data.loaders.csv_coldstart import match_extra_info, read_pairs
from coldbrew.data.tables import csv_files
from coldbrew.data.text import backbones
from coldbrew.errors import DataError
from conftest import shared_path

ITEMS = """iid,title,genres
50,Heat (1995),Action|Crime
10,"Matrix, The (1999)",Action|Sci-Fi
20,"Postman, The (Postino, Il) (1994)",Comedy|Drama
30,Toy Story (1995),Animation|Children
40,Unlisted Film (1990),(no genres listed)
"""
# internal items: 0=iid 10, 1=20, 2=30, 3=40, 4=50; warm = {10, 20, 50}, cold = {30, 40}
TRAIN = "uid,iid\n7,10\n7,20\n3,20\n3,50\n"
COLD_VAL = "uid,iid\n3,30\n9,30\n"
# .dat: CRLF, keyed by another id; titles with the article in front, one year off by one
EXTRA = (
    "2571::The Matrix::1999::R::31 Mar 1999::Action::Lana Wachowski::W::Keanu Reeves::A hacker learns the truth.::u\r\n"
    "58::Il Postino::1994::PG::14 Jun 1995::Drama::Michael Radford::W::Philippe Noiret::N/A::u\r\n"
    "1::Toy Story::1996::G::22 Nov 1995::Animation::John Lasseter::W::Tom Hanks::Toys come alive.::u\r\n"
)


def write_split(root: Path, **files: str) -> Path:
    """Write the default small split, with any file replaced (or removed when given None)."""
    contents = {"items.csv": ITEMS, "train.csv": TRAIN, "cold_val.csv": COLD_VAL, **files}
    for name, text in contents.items():
        if text is not None:
            (root / name).write_text(text, encoding="utf-8", newline="")
    return root


def load(path: Path, **kwargs):
    return csv_coldstart.load(path, features=kwargs.pop("features", ["genre"]), **kwargs)


def dense(matrix) -> list[list[int]]:
    return matrix.toarray().astype(int).tolist()


# ---------------------------------------------------------------------------------- small split
def test_detect_needs_train_and_cold_val(tmp_path):
    assert not csv_coldstart.detect(tmp_path)
    write_split(tmp_path)
    assert csv_coldstart.detect(tmp_path)


def test_ids_interactions_and_cold_items(tmp_path):
    dataset = load(write_split(tmp_path))
    assert dataset.user_ids.tolist() == [3, 7, 9]  # sorted over train and cold_val
    assert dataset.item_ids.tolist() == [10, 20, 30, 40, 50]
    # rows users 3, 7, 9; columns iids 10..50
    assert dense(dataset.train) == [[0, 1, 0, 0, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]]
    assert dense(dataset.splits["val"]["cold"]) == [
        [0, 0, 1, 0, 0],
        [0, 0, 0, 0, 0],
        [0, 0, 1, 0, 0],
    ]
    assert list(dataset.splits["val"]) == ["cold"] and "test" not in dataset.splits
    assert dataset.cold_items.tolist() == [2, 3]  # iid 30 (in cold_val) and 40 (nowhere)
    assert dataset.known.nnz == 6


def test_missing_cold_test_is_a_note_not_a_warning(tmp_path):
    write_split(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # notes reach the user through the CLI, not as warnings
        dataset = csv_coldstart.load(tmp_path, features=["genre"])
    assert dataset.notes == ["no cold_test.csv: test metrics skipped"]


def test_cold_test_becomes_the_test_split(tmp_path):
    dataset = load(write_split(tmp_path, **{"cold_test.csv": "uid,iid\n7,40\n11,40\n"}))
    assert dataset.user_ids.tolist() == [3, 7, 9, 11]
    assert dense(dataset.splits["test"]["cold"])[1] == [0, 0, 0, 1, 0]
    assert not any("cold_test" in note for note in dataset.notes)


def test_cold_items_shared_by_val_and_test_are_noted(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dataset = load(write_split(tmp_path, **{"cold_test.csv": "uid,iid\n7,30\n"}))
    assert dataset.notes == ["1 cold item(s) occur in both cold_val.csv and cold_test.csv"]


def test_genre_features_and_texts(tmp_path):
    dataset = load(write_split(tmp_path))
    # vocabulary: Action, Animation, Children, Comedy, Crime, Drama, Sci-Fi
    assert dataset.features["genre"].tolist() == [
        [1, 0, 0, 0, 0, 0, 1],  # Matrix
        [0, 0, 0, 1, 0, 1, 0],  # Postman
        [0, 1, 1, 0, 0, 0, 0],  # Toy Story
        [0, 0, 0, 0, 0, 0, 0],  # (no genres listed)
        [1, 0, 0, 0, 1, 0, 0],  # Heat
    ]
    assert dataset.item_text[0] == "The Matrix (1999). Genres: Action, Sci-Fi."
    assert dataset.item_text[3] == "Unlisted Film (1990)."
    assert not any("no title and no genres" in note for note in dataset.notes)


def test_an_item_with_no_text_at_all_is_noted(tmp_path):
    dataset = load(write_split(tmp_path, **{"items.csv": ITEMS + '60,"",""\n'}))
    assert dataset.item_text[5] == "."
    assert "items.csv: 1 item(s) have no title and no genres (e.g. iid 60)" in " ".join(
        dataset.notes
    )


def test_extra_info_joins_by_title_and_year(tmp_path):
    dataset = load(write_split(tmp_path, **{"movies_extrainfos.dat": EXTRA}))
    matrix, postman, toy_story, unlisted, heat = dataset.item_text
    assert matrix.endswith(
        "Director: Lana Wachowski. Cast: Keanu Reeves. Plot: A hacker learns the truth."
    )
    assert postman.endswith(
        "Director: Michael Radford. Cast: Philippe Noiret."
    )  # plot N/A left out
    assert "Plot: Toys come alive." in toy_story  # 1995 in items.csv, 1996 in the .dat
    assert "Director" not in heat and "Director" not in unlisted
    (note,) = [note for note in dataset.notes if "movies_extrainfos" in note]
    assert "3 of 5 items matched" in note and "1 with the year off by one" in note


def test_title_normalisation():
    assert normalise_title("Misérables, Les!") == normalise_title("miserables les")
    assert normalise_title("Ren & Stimpy") == "ren and stimpy"
    keys, year = title_keys("City of Lost Children, The (Cité des enfants perdus, La) (1995)")
    assert year == "1995"
    assert keys == ["the city of lost children", "la cite des enfants perdus"]
    info = {("il postino", "1994"): {"plot": "p"}}
    matched, note = match_extra_info(
        ["Postman, The (Postino, Il) (1994)", "Il Postino (1990)"], info
    )
    assert list(matched) == [0] and "1 of 2 items" in note


def test_extra_columns_and_crlf_are_read(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes(b"rating,iid,uid\r\n5,10,7\r\n4,20,3\r\n\r\n")
    users, items = read_pairs(path)
    assert users.tolist() == [7, 3] and items.tolist() == [10, 20]


def test_quoted_header_and_values_are_read(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text('"uid","iid"\n"7","10"\n3,"20"\n\n5,30\n')
    users, items = read_pairs(path)
    assert users.tolist() == [7, 3, 5] and items.tolist() == [10, 20, 30]


def test_a_split_written_with_quoted_headers_loads_like_the_plain_one(tmp_path):
    def quote_header(text: str) -> str:
        header, _, body = text.partition("\n")
        return ",".join(f'"{name}"' for name in header.split(",")) + "\n" + body

    (tmp_path / "plain").mkdir()
    (tmp_path / "quoted").mkdir()
    plain = load(write_split(tmp_path / "plain"))
    originals = {"items.csv": ITEMS, "train.csv": TRAIN, "cold_val.csv": COLD_VAL}
    quoted_files = {name: quote_header(text) for name, text in originals.items()}
    quoted = load(write_split(tmp_path / "quoted", **quoted_files))
    assert dense(quoted.train) == dense(plain.train)
    assert dense(quoted.splits["val"]["cold"]) == dense(plain.splits["val"]["cold"])
    assert quoted.item_ids.tolist() == plain.item_ids.tolist()


def reference_pairs(path: Path) -> tuple[list[int], list[int]]:
    """A plain csv-module reading of a ``uid,iid`` file (any column order, blank lines skipped)."""
    with open(path, newline="") as file:
        rows = [row for row in csv.reader(file) if row]
    uid_at, iid_at = rows[0].index("uid"), rows[0].index("iid")
    return [int(row[uid_at]) for row in rows[1:]], [int(row[iid_at]) for row in rows[1:]]


def refuse_line_by_line(*args, **kwargs):
    raise AssertionError("expected the vectorised path, but the line-by-line parser was called")


def test_plain_pairs_take_the_vectorised_path_and_match_a_plain_reading(tmp_path, monkeypatch):
    rows = np.random.default_rng(0).integers(0, 1000, size=(500, 2))
    body = "\n".join(f"{u},{i}" for u, i in rows)
    (tmp_path / "plain.csv").write_text("uid,iid\n" + body + "\n")
    with monkeypatch.context() as patch:
        patch.setattr(csv_files, "_parse_lines", refuse_line_by_line)
        users, items = read_pairs(tmp_path / "plain.csv")
    assert (users.tolist(), items.tolist()) == reference_pairs(tmp_path / "plain.csv")
    assert users.tolist() == rows[:, 0].tolist() and items.tolist() == rows[:, 1].tolist()


@pytest.mark.parametrize(
    "text",
    ["uid,iid,title\n1,2,a\n3,4,b\n", 'iid,"uid"\n2,1\n\n4,"3"\n', "uid,iid\n1, 2\n3 ,4\n"],
)
def test_other_well_formed_shapes_take_the_vectorised_path_too(tmp_path, monkeypatch, text):
    path = tmp_path / "pairs.csv"
    path.write_text(text)
    with monkeypatch.context() as patch:
        patch.setattr(csv_files, "_parse_lines", refuse_line_by_line)
        users, items = read_pairs(path)
    assert (users.tolist(), items.tolist()) == reference_pairs(path) == ([1, 3], [2, 4])


@pytest.mark.parametrize(
    "text",
    [
        "uid,iid,extra\n1,2,0\n3,4,0\n",  # an extra column
        "iid,uid\n2,1\n4,3\n",  # columns swapped
        "uid,iid\n1,2\n\n3,4\n",  # a blank line inside
        'uid,iid\n"1",2\n3,4\n',  # a quoted value
        "uid,iid\n1, 2\n3 ,4\n",  # spaces around values
    ],
)
def test_every_other_shape_matches_the_plain_reading(tmp_path, text):
    path = tmp_path / "pairs.csv"
    path.write_text(text)
    users, items = read_pairs(path)
    assert (users.tolist(), items.tolist()) == reference_pairs(path) == ([1, 3], [2, 4])


@pytest.mark.parametrize(
    ("body", "line", "fields"),
    [
        ("0,16,5\n24\n", 2, 3),  # once read as the pairs (0, 16), (5, 24)
        ("1,2\n3\n4,5,6\n", 3, 1),  # six values on three lines: once three pairs
        ("1,2\n3,4,\n", 3, 3),  # a trailing comma is an empty third field
        ("1,2,9\n3,4\n", 2, 3),  # pandas would take a longer first row's field as an index
        ('1,2\n"3,4"\n', 3, 1),  # one quoted field
    ],
)
def test_a_row_with_the_wrong_number_of_fields_names_its_file_and_line(
    tmp_path, body, line, fields
):
    path = tmp_path / "train.csv"
    path.write_text("uid,iid\n" + body)
    with pytest.raises(
        DataError, match=rf"train.csv, line {line}: expected 2 fields .*got {fields}"
    ):
        read_pairs(path)


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"cold_val.csv": "uid,iid\n3,20\n"},
            r"cold_val.csv: 1 item\(s\) both warm and cold.*iid 20",
        ),
        ({"cold_test.csv": "uid,iid\n3,50\n"}, r"cold_test.csv: 1 item\(s\) both warm and cold"),
        (
            {"train.csv": "uid,iid\n7,10\n7,99\n"},
            r"train.csv: 1 iid\(s\) not in items.csv \(e.g. 99\)",
        ),
        (
            {"train.csv": "user,iid\n7,10\n"},
            r"train.csv, line 1: header 'user,iid' lacks column\(s\) uid",
        ),
        ({"train.csv": "uid,iid\n7,10\n7,x\n"}, r"train.csv, line 3: uid and iid must be integers"),
        (
            {"train.csv": "uid,iid\n7,10\n7.5,20\n"},
            r"train.csv, line 3: uid and iid must be integers",
        ),
        (
            {"train.csv": "uid,iid\n7,10\n7.0,20\n"},  # pandas reads 7.0 as a float column
            r"train.csv, line 3: uid and iid must be integers",
        ),
        ({"cold_val.csv": "uid,iid\n3,30\n3,30,1\n"}, r"cold_val.csv, line 3: expected 2 fields"),
        ({"train.csv": ""}, r"train.csv: empty file"),
        ({"cold_val.csv": "uid,iid\n"}, r"cold_val.csv: no interactions after the header"),
        (
            {"items.csv": "iid,name,genres\n10,a,b\n"},
            r"items.csv, line 1: header .* lacks column\(s\) title",
        ),
        (
            {"items.csv": "iid,title,genres\n10,a,b\nten,c,d\n"},
            r"items.csv, line 3: iid must be an integer",
        ),
        (
            {"items.csv": "iid,title,genres\n10,a,b\n10,c,d\n"},
            r"items.csv, line 3: iid 10 listed twice",
        ),
        ({"items.csv": None}, r"items.csv: file not found"),
        (
            {"movies_extrainfos.dat": "1::Heat::1995\r\n"},
            r"movies_extrainfos.dat, line 1: expected 11",
        ),
    ],
)
def test_malformed_input_is_a_data_error(tmp_path, files, message):
    with pytest.raises(DataError, match=message):
        load(write_split(tmp_path, **files))


def test_unknown_option_and_modality(tmp_path):
    write_split(tmp_path)
    with pytest.raises(DataError, match="unknown option"):
        load(tmp_path, num_users=3)
    with pytest.raises(DataError, match="offers: genre, text"):
        load(tmp_path, features=["audio"])


# ---------------------------------------------------------------------------------- shared data
@pytest.fixture(scope="module")
def ml1m():
    path = shared_path("ml-1m-coldstart")
    with pytest.MonkeyPatch.context() as patch:  # its plain uid,iid files must parse vectorised
        patch.setattr(csv_files, "_parse_lines", refuse_line_by_line)
        return load(path)


def test_ml1m_coldstart_counts(ml1m):
    dataset = ml1m
    assert dataset.num_users == 6018 and dataset.num_items == 3018
    assert dataset.train.nnz == 529_952
    assert len(np.unique(dataset.train.indices)) == 1811
    assert len(dataset.cold_items) == 1207
    val_cold = dataset.splits["val"]["cold"]
    assert val_cold.nnz == 106_695 and len(np.unique(val_cold.indices)) == 302
    assert np.isin(np.unique(val_cold.indices), dataset.cold_items).all()
    assert (
        dataset.features["genre"].shape[0] == 3018
        and dataset.features["genre"].dtype == torch.float32
    )


def test_ml1m_coldstart_extra_info_matches_most_items(ml1m):
    with_plot = sum("Plot: " in text for text in ml1m.item_text)
    assert 2600 <= with_plot <= 3018
    assert any("movies_extrainfos.dat: 2,9" in note for note in ml1m.notes)


def test_ml1m_coldstart_through_load_dataset():
    shared_path("ml-1m-coldstart")  # skips when the shared data is absent
    dataset = load_dataset("ml-1m-coldstart", features="genre")
    assert dataset.name == "ml-1m-coldstart" and dataset.num_items == 3018


@pytest.mark.slow
def test_ml1m_coldstart_text_features(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path))
    dataset = load(shared_path("ml-1m-coldstart"), features=["genre", "text"], progress=False)
    text = dataset.features["text"]
    assert text.shape == (3018, 384)
    torch.testing.assert_close(text.norm(dim=1), torch.ones(3018))
    # the second load is cached: loading the backbone at all is a failure
    monkeypatch.setattr(backbones, "load_backbone", refuse_loading)
    again = load(shared_path("ml-1m-coldstart"), features=["text"], progress=False)
    assert torch.equal(again.features["text"], text)


def refuse_loading(*args, **kwargs):
    raise AssertionError("the text model must not be loaded: the embeddings are cached")


def test_default_features_skip_text_without_the_extra(tmp_path, monkeypatch):
    from coldbrew.data import features

    monkeypatch.setattr(features, "text_encoder_available", lambda: False)
    dataset = load(write_split(tmp_path), features=None)
    assert list(dataset.features) == ["genre"]
    assert any("text features skipped" in note for note in dataset.notes)
