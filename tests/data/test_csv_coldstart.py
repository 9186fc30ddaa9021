"""The CSV cold-start loader on hand-made splits with known answers, and on ml-1m-coldstart."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from coldbrew.data import csv_coldstart
from coldbrew.data.csv_coldstart import match_extra_info, read_pairs
from coldbrew.data.features import normalise_title, title_keys
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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


def test_missing_cold_test_is_noted_and_warned_once(tmp_path):
    write_split(tmp_path)
    with pytest.warns(UserWarning, match="no cold_test.csv"):
        dataset = csv_coldstart.load(tmp_path, features=["genre"])
    assert "no cold_test.csv: test metrics skipped" in dataset.notes


def test_cold_test_becomes_the_test_split(tmp_path):
    dataset = load(write_split(tmp_path, **{"cold_test.csv": "uid,iid\n7,40\n11,40\n"}))
    assert dataset.user_ids.tolist() == [3, 7, 9, 11]
    assert dense(dataset.splits["test"]["cold"])[1] == [0, 0, 0, 1, 0]
    assert not any("cold_test" in note for note in dataset.notes)


def test_cold_items_shared_by_val_and_test_are_noted(tmp_path):
    dataset = load(write_split(tmp_path, **{"cold_test.csv": "uid,iid\n7,30\n"}))
    assert any("both cold_val.csv and cold_test.csv" in note for note in dataset.notes)


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


def test_fast_and_line_by_line_parsing_agree(tmp_path):
    rows = np.random.default_rng(0).integers(0, 1000, size=(500, 2))
    body = "\n".join(f"{u},{i}" for u, i in rows)
    (tmp_path / "a.csv").write_text("uid,iid\n" + body + "\n")
    (tmp_path / "b.csv").write_text("uid,iid,extra\n" + body.replace("\n", ",0\n") + ",0\n")
    for name in ("a.csv", "b.csv"):
        users, items = read_pairs(tmp_path / name)
        assert users.tolist() == rows[:, 0].tolist() and items.tolist() == rows[:, 1].tolist()


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
    start = time.perf_counter()
    dataset = load(path)
    return dataset, time.perf_counter() - start


def test_ml1m_coldstart_counts(ml1m):
    dataset, seconds = ml1m
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
    assert seconds < 10  # about 0.3 s on a laptop core


def test_ml1m_coldstart_extra_info_matches_most_items(ml1m):
    dataset, _ = ml1m
    with_plot = sum("Plot: " in text for text in dataset.item_text)
    assert 2600 <= with_plot <= 3018
    assert any("movies_extrainfos.dat: 2,9" in note for note in dataset.notes)


def test_ml1m_coldstart_through_load_dataset():
    shared_path(
        "ml-1m-coldstart"
    )  # skips when the shared data is absent (a clone outside the workspace)
    pytest.importorskip("coldbrew.data.clcrec_layout")
    from coldbrew.data import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
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
    start = time.perf_counter()
    again = load(shared_path("ml-1m-coldstart"), features=["text"], progress=False)
    assert torch.equal(again.features["text"], text) and time.perf_counter() - start < 5


def test_default_features_skip_text_without_the_extra(tmp_path, monkeypatch):
    from coldbrew.data import features

    monkeypatch.setattr(features, "text_encoder_available", lambda: False)
    dataset = load(write_split(tmp_path), features=None)
    assert list(dataset.features) == ["genre"]
    assert any("text features skipped" in note for note in dataset.notes)
