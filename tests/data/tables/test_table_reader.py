"""The general layout: named columns, ids of any one type, each kind of content column."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import torch

import coldbrew
from coldbrew.data import load_dataset
from coldbrew.errors import DataError
from text_support import fake_encoder

INTERACTIONS = pd.DataFrame(
    {"user": ["ann", "bob", "bob", "cy"], "item": ["sku-1", "sku-1", "sku-2", "sku-2"]}
)
ITEMS = pd.DataFrame(
    {
        "item": ["sku-2", "sku-1", "sku-3"],  # not sorted: internal order is the sorted ids
        "title": ["Heat", "Up", ""],
        "plot": ["A thief.", None, ""],
        "genres": ["Crime|Drama", "Animation", "Drama"],
        "rating_band": ["PG", "G", "PG"],
        "year": [1995, 2009, None],
    }
)


def test_string_ids_are_kept_as_they_came_in_sorted_internal_order():
    data = coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS)
    assert list(data.item_ids) == ["sku-1", "sku-2", "sku-3"] and data.item_ids.dtype == object
    assert list(data.user_ids) == ["ann", "bob", "cy"]
    assert data.train.toarray().tolist() == [[1, 0, 0], [1, 1, 0], [0, 1, 0]]
    assert list(data.cold_items) == [2]  # sku-3 has no interaction: cold, from content alone
    assert data.splits == {} and any("no interactions at all" in n for n in data.notes)


def test_integer_ids_stay_integers():
    frame = pd.DataFrame({"user": [10, 3], "item": [7, 5]})
    data = coldbrew.Dataset.from_frames(frame)
    assert data.item_ids.tolist() == [5, 7] and data.item_ids.dtype == np.int64


def test_text_columns_are_joined_with_their_names_and_an_empty_text_is_zeros(monkeypatch):
    seen = fake_encoder(monkeypatch)
    data = coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, text=["title", "plot"])
    assert data.item_text == ["Title: Up.", "Title: Heat. Plot: A thief.", ""]
    assert seen == [["Title: Heat. Plot: A thief.", "Title: Up."]]  # sorted; the empty one not
    assert data.features["text"][2].tolist() == [0.0, 0.0]
    assert any("1 item(s) have no text" in note and "'sku-3'" in note for note in data.notes)


def test_a_category_column_may_be_text_too_its_list_read_with_commas(monkeypatch):
    seen = fake_encoder(monkeypatch)
    items = ITEMS.rename(columns={"rating_band": "rating_band_"})
    data = coldbrew.Dataset.from_frames(
        INTERACTIONS, items, text=["title", "genres", "rating_band_"], categories=["genres"]
    )
    assert data.item_text[1] == "Title: Heat. Genres: Crime, Drama. Rating band: PG."
    assert seen[0][1] == data.item_text[1]
    assert data.feature_columns["genres"] == ["Animation", "Crime", "Drama"]  # still a block


def test_a_repeated_text_is_encoded_once_whatever_the_items_order(monkeypatch):
    seen = fake_encoder(monkeypatch)
    items = ITEMS.assign(title=["Heat", "Up", "Heat"])
    data = coldbrew.Dataset.from_frames(INTERACTIONS, items, text=["title"])
    again = coldbrew.Dataset.from_frames(INTERACTIONS, items.iloc[::-1], text=["title"])
    assert seen == [["Title: Heat.", "Title: Up."]] * 2  # the same cache entry both times
    assert data.features["text"][:, 0].tolist() == [10.0, 12.0, 12.0]  # sku-1 Up, sku-2/3 Heat
    assert torch.equal(data.features["text"], again.features["text"])


def test_text_columns_with_no_text_at_all_are_refused(monkeypatch):
    fake_encoder(monkeypatch)
    with pytest.raises(DataError, match="no item has any text"):
        coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS.assign(title=""), text=["title"])


def test_category_columns_are_multi_hot_or_one_hot_blocks_named_by_their_values():
    data = coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, categories=["genres", "rating_band"])
    assert data.feature_columns["genres"] == ["Animation", "Crime", "Drama"]
    assert data.features["genres"].tolist() == [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    assert data.features["rating_band"].tolist() == [[1, 0], [0, 1], [0, 1]]  # G, PG


def test_numeric_columns_are_standardised_and_an_empty_cell_is_the_mean():
    data = coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, numeric=["year"])
    # sku-1 2009, sku-2 1995: mean 2002, std 7; sku-3 empty -> the mean -> 0
    assert data.features["numeric"][:, 0].tolist() == [1.0, -1.0, 0.0]
    assert any("1 empty 'year' cell(s)" in note for note in data.notes)


def test_a_vector_table_is_keyed_by_item_id():
    vectors = pd.DataFrame({"item": ["sku-3", "sku-1"], "v0": [1.0, 2.0], "v1": [3.0, 4.0]})
    data = coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, vectors=vectors)
    assert data.features["vectors"].tolist() == [[2, 4], [0, 0], [1, 3]]
    assert any("1 item(s) have no vector" in note for note in data.notes)


def test_features_pick_blocks_by_name():
    data = coldbrew.Dataset.from_frames(
        INTERACTIONS, ITEMS, categories=["genres"], numeric=["year"], features=["numeric"]
    )
    assert list(data.features) == ["numeric"]
    with pytest.raises(DataError, match="unknown feature block 'genre'; this data offers: genres"):
        coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, categories=["genres"], features=["genre"])


def test_own_cold_files_become_the_validation_and_test_splits():
    val = pd.DataFrame({"user": ["ann"], "item": ["sku-3"]})
    data = coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, val=val)
    assert list(data.splits) == ["val"] and data.splits["val"]["cold"].nnz == 1
    warm = pd.DataFrame({"user": ["ann"], "item": ["sku-2"]})
    with pytest.raises(DataError, match="test: 1 item.*also have training interactions.*sku-2"):
        coldbrew.Dataset.from_frames(INTERACTIONS, ITEMS, test=warm)


def test_ratings_below_min_rating_are_dropped_and_timestamps_give_first_seen():
    frame = INTERACTIONS.assign(stars=[5, 1, 4, 4], when=["2020-01-02", "2020-01-01", "3", "4"])
    with pytest.raises(
        DataError,
        match=r"row 3: timestamp '3' is neither a number nor a date; also row 4 \('4'\) \(2 such",
    ):
        coldbrew.Dataset.from_frames(frame, rating="stars", timestamp="when")
    frame = frame.assign(when=[20, 10, 30, 40])
    data = coldbrew.Dataset.from_frames(frame, rating="stars", timestamp="when", min_rating=3)
    assert data.num_train == 3 and any("1 row(s) rated below 3 dropped" in n for n in data.notes)
    assert data.item_first_seen.tolist() == [20.0, 30.0]  # bob's rating 1 of sku-1 dropped


@pytest.mark.parametrize(
    "column, values, message",
    [
        (
            "stars",
            [5, "x", 4, "y"],
            "row 2: rating 'x' is not a number; also row 4 ('y') (2 such row(s) in column 'stars')",
        ),
        (
            "when",
            [1, 2, 3, "soon"],
            "row 4: timestamp 'soon' is not a number like the others (1 such row(s))",
        ),
        (
            "when",
            ["2020-01-01", "no", "3", "x"],
            "row 2: timestamp 'no' is neither a number nor a date; also row 3 ('3'), row 4 ('x') "
            "(3 such row(s))",
        ),
    ],
)
def test_bad_ratings_and_timestamps_name_their_rows_and_the_count(column, values, message):
    # the three refusals come from one helper; their whole texts, counts included, are pinned
    frame = INTERACTIONS.assign(**{column: values})
    columns = {"rating": "stars"} if column == "stars" else {"timestamp": "when"}
    with pytest.raises(DataError) as refused:
        coldbrew.Dataset.from_frames(frame, **columns)
    assert str(refused.value) == f"interactions, {message}"


def test_a_coldbrew_yaml_folder_loads_through_load_dataset(tmp_path):
    (tmp_path / "ratings.csv").write_text("uid,sku,stars\nann,007,5\nbob,007,3\nbob,12,4\n")
    (tmp_path / "items.tsv").write_text("sku\ttitle\tgenres\n007\tGold\tSpy|Action\n12\tTin\t\n")
    (tmp_path / "coldbrew.yaml").write_text(
        "interactions: ratings.csv\nuser: uid\nitem: sku\nrating: stars\nitems: items.tsv\n"
        "categories: [genres]\n"
    )
    data = load_dataset(tmp_path)
    assert list(data.item_ids) == ["007", "12"]  # "007" keeps its zeros: every id stays text
    assert data.features["genres"].tolist() == [[1, 1], [0, 0]]
    (tmp_path / "items.tsv").write_text("sku\ttitle\tgenres\n7\tGold\tSpy\n12\tTin\t\n")
    (tmp_path / "ratings.csv").write_text("uid,sku,stars\n1,7,5\n2,7,3\n2,12,4\n")
    data = load_dataset(tmp_path)
    assert data.item_ids.tolist() == [7, 12] and data.user_ids.tolist() == [1, 2]


def test_parquet_files_are_read(tmp_path):
    pytest.importorskip("pyarrow")
    INTERACTIONS.to_parquet(tmp_path / "inter.parquet")
    (tmp_path / "coldbrew.yaml").write_text("interactions: inter.parquet\n")
    assert list(load_dataset(tmp_path).item_ids) == ["sku-1", "sku-2"]


@pytest.mark.slow
def test_a_million_string_id_interactions_load_within_ten_seconds(tmp_path):
    rng = np.random.default_rng(0)
    users = pd.Series(rng.integers(0, 60_000, 1_000_000)).map("user-{:05d}".format)
    items = pd.Series(rng.integers(0, 20_000, 1_000_000)).map("8f14e45f-{:06d}".format)
    pd.DataFrame({"user": users, "item": items}).to_csv(tmp_path / "events.csv", index=False)
    (tmp_path / "coldbrew.yaml").write_text("interactions: events.csv\n")
    start = time.perf_counter()
    data = load_dataset(tmp_path)
    seconds = time.perf_counter() - start
    assert data.num_train > 900_000 and isinstance(data.item_ids[0], str)
    print(f"1M string-id interactions loaded in {seconds:.2f} s")
    assert seconds <= 10.0


def test_every_block_keeps_its_own_values():
    vectors = pd.DataFrame({"item": ["sku-1", "sku-2", "sku-3"], "v0": [7.0, 8.0, 9.0]})
    data = coldbrew.Dataset.from_frames(
        INTERACTIONS, ITEMS, categories=["genres"], numeric=["year"], vectors=vectors
    )
    assert data.features["numeric"][:, 0].tolist() == [1.0, -1.0, 0.0]
    assert data.features["vectors"][:, 0].tolist() == [7.0, 8.0, 9.0]


@pytest.mark.slow
def test_ml1m_coldstart_as_plain_tables_with_text_ids_is_the_same_data(tmp_path, capsys):
    """The prepared layout rewritten as plain tables (ids u1/m1 as text), through data init:
    the same interactions, cold items and genre block, item for item."""
    from coldbrew.cli import main
    from conftest import shared_path

    source = shared_path("ml-1m-coldstart")
    for name, out in (("train.csv", "ratings.csv"), ("cold_val.csv", "cold_val.csv")):
        pairs = pd.read_csv(source / name)
        pairs = pd.DataFrame(
            {"user": "u" + pairs.uid.astype(str), "item": "m" + pairs.iid.astype(str)}
        )
        pairs.to_csv(tmp_path / out, index=False)
    items = pd.read_csv(source / "items.csv")
    items.assign(iid="m" + items.iid.astype(str)).rename(columns={"iid": "item"}).to_csv(
        tmp_path / "movies.csv", index=False
    )
    files = [str(tmp_path / name) for name in ("ratings.csv", "movies.csv", "cold_val.csv")]
    assert main(["data", "init", *files]) == 0
    assert "'title' is text" in capsys.readouterr().out
    plain = load_dataset(tmp_path, features=["genres"])
    prepared = load_dataset(source, features=["genre"])
    order = [int(i[1:]) for i in plain.item_ids]  # plain row -> prepared iid
    items_at = np.searchsorted(prepared.item_ids, order)
    users_at = np.searchsorted(prepared.user_ids, [int(u[1:]) for u in plain.user_ids])
    for mine, theirs in (
        (plain.train, prepared.train),
        (plain.splits["val"]["cold"], prepared.splits["val"]["cold"]),
    ):
        assert (mine != theirs[users_at][:, items_at]).nnz == 0
    assert sorted(items_at[plain.cold_items]) == list(prepared.cold_items)
    assert plain.feature_columns["genres"] == prepared.feature_columns["genre"]
    assert torch.equal(plain.features["genres"], prepared.features["genre"][items_at])
