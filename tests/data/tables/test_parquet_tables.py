"""Parquet files in the general layout: the same Dataset as the same tables in CSV."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from coldbrew.cli import main
from coldbrew.data import load_dataset
from coldbrew.data.tables import reader
from coldbrew.errors import DataError

EVENTS = pd.DataFrame(
    {
        "customer_id": ["c1", "c2", "c2", "c3", "c3", "c4"],
        "product_sku": ["A-1", "A-1", "B-2", "B-2", "D-4", "D-4"],
        "stars": [5, 4, 3, 5, 2, 4],
    }
)
PRODUCTS = pd.DataFrame(
    {
        "product_sku": ["B-2", "A-1", "C-3", "D-4"],  # not sorted: internal order is sorted ids
        "description": [
            "A big mug for coffee and tea at home or at work.",
            "A steel kettle that boils water fast and quietly.",
            None,  # an empty text cell
            "A teapot of white china for four cups.",
        ],
        "tags": ["kitchen", "kitchen|steel", "home|light", "kitchen|china"],
        "price": [5.0, 20.0, 30.0, np.nan],  # an empty cell is the mean
    }
)
SPEC = {
    "user": "customer_id",
    "item": "product_sku",
    "rating": "stars",
    "text": ["description"],
    "categories": ["tags"],
    "numeric": ["price"],
}


def write_folder(folder: Path, suffix: str, events=EVENTS, products=PRODUCTS) -> Path:
    folder.mkdir()
    for name, frame in (("events", events), ("products", products)):
        if suffix == ".parquet":
            frame.to_parquet(folder / f"{name}.parquet", index=False)
        else:
            frame.to_csv(folder / f"{name}.csv", index=False)
    spec = {"interactions": f"events{suffix}", "items": f"products{suffix}", **SPEC}
    (folder / "coldbrew.yaml").write_text(yaml.safe_dump(spec))
    return folder


def assert_same_dataset(mine, theirs) -> None:
    assert mine.item_ids.tolist() == theirs.item_ids.tolist()
    assert mine.user_ids.tolist() == theirs.user_ids.tolist()
    assert mine.item_ids.dtype == theirs.item_ids.dtype
    assert (mine.train != theirs.train).nnz == 0
    assert mine.cold_items.tolist() == theirs.cold_items.tolist()
    assert mine.item_text == theirs.item_text
    assert mine.feature_columns == theirs.feature_columns
    assert list(mine.features) == list(theirs.features)
    for name, block in mine.features.items():
        assert block.tolist() == theirs.features[name].tolist(), name


def test_parquet_tables_load_the_same_dataset_as_csv(tmp_path):
    pytest.importorskip("pyarrow")
    blocks = ["tags", "numeric"]  # every block but the encoded text; the texts are still read
    parquet = load_dataset(write_folder(tmp_path / "pq", ".parquet"), features=blocks)
    csv = load_dataset(write_folder(tmp_path / "csv", ".csv"), features=blocks)
    assert_same_dataset(parquet, csv)
    assert parquet.item_ids.tolist() == ["A-1", "B-2", "C-3", "D-4"]
    assert parquet.item_ids.dtype == object and isinstance(parquet.item_ids[0], str)
    assert parquet.cold_items.tolist() == [2]  # C-3: no interaction
    assert parquet.item_text[2] == ""  # None in Parquet, an empty cell in CSV
    assert parquet.features["numeric"][:, 0].tolist()[3] == 0.0  # NaN: the mean


def test_integer_ids_in_parquet_stay_integers_like_csv(tmp_path):
    pytest.importorskip("pyarrow")
    events = EVENTS.assign(product_sku=[7, 7, 12, 12, 40, 40])
    products = PRODUCTS.assign(product_sku=[12, 7, 30, 40])
    parquet = load_dataset(write_folder(tmp_path / "pq", ".parquet", events, products))
    csv = load_dataset(write_folder(tmp_path / "csv", ".csv", events, products))
    assert parquet.item_ids.tolist() == [7, 12, 30, 40] and parquet.item_ids.dtype == np.int64
    assert_same_dataset(parquet, csv)


def test_integer_items_and_text_interactions_in_parquet_are_one_line(tmp_path):
    pytest.importorskip("pyarrow")
    products = PRODUCTS.assign(product_sku=[12, 7, 30, 40])  # int64; the events' are text
    folder = write_folder(tmp_path / "pq", ".parquet", EVENTS, products)
    with pytest.raises(DataError, match=r"item ids of mixed types") as raised:
        load_dataset(folder)
    assert "\n" not in str(raised.value)


def test_init_guesses_a_parquet_pair(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    folder = write_folder(tmp_path / "shop", ".parquet")
    (folder / "coldbrew.yaml").unlink()
    files = [str(folder / name) for name in ("products.parquet", "events.parquet")]
    assert main(["data", "init", *files]) == 0
    printed = capsys.readouterr().out
    assert "events.parquet: interactions (user 'customer_id', item 'product_sku')" in printed
    spec = yaml.safe_load((folder / "coldbrew.yaml").read_text())
    assert spec == {
        "interactions": "events.parquet",
        "items": "products.parquet",
        **SPEC,
    }
    assert load_dataset(folder, features=["tags"]).num_items == 4


def test_without_pyarrow_parquet_is_refused_naming_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "events.parquet"
    path.write_bytes(b"PAR1")  # never opened: the engine is missing
    for module in ("pyarrow", "pyarrow.parquet", "fastparquet"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(DataError) as raised:
        reader.read_table(path, ["user"])
    assert str(raised.value) == (
        f"{path}: reading Parquet needs pyarrow: pip install 'coldbrew[parquet]'"
    )
