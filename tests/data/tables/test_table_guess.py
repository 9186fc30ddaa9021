"""coldbrew data init: which file and column is what, guessed and printed."""

from __future__ import annotations

import yaml

from coldbrew.cli import main
from coldbrew.data import load_dataset

EVENTS = (
    "customer_id,product_sku,stars,ts\nc1,A-1,5,100\nc2,A-1,4,101\nc2,B-2,3,102\nc3,B-2,5,103\n"
)
PRODUCTS = (
    "product_sku,name,description,tags,brand,price\n"
    "A-1,Kettle,A steel kettle that boils water fast and quietly.,kitchen|steel,Acme,20\n"
    "B-2,Mug,A big mug for coffee and tea at home or at work.,kitchen,Acme,5\n"
    "C-3,Lamp,A desk lamp with a warm light for reading late.,home|light,Lux,30\n"
)


def shop(folder):
    folder.mkdir()
    (folder / "events.csv").write_text(EVENTS)
    (folder / "products.csv").write_text(PRODUCTS)
    (folder / "cold_test.csv").write_text("customer_id,product_sku\nc1,C-3\nc3,C-3\n")
    return folder


def test_init_guesses_files_and_columns_and_the_folder_then_loads(tmp_path, capsys):
    folder = shop(tmp_path / "shop")
    files = [str(folder / name) for name in ("products.csv", "events.csv", "cold_test.csv")]
    assert main(["data", "init", *files]) == 0
    printed = capsys.readouterr().out
    assert "guessed: events.csv: interactions (user 'customer_id', item 'product_sku')" in printed
    assert "guessed: products.csv: 'tags' is categories ('|'-lists in 67% of rows)" in printed
    spec = yaml.safe_load((folder / "coldbrew.yaml").read_text())
    assert spec == {
        "interactions": "events.csv",
        "user": "customer_id",
        "item": "product_sku",
        "rating": "stars",
        "timestamp": "ts",
        "test": "cold_test.csv",
        "items": "products.csv",
        "text": ["name", "description"],
        "categories": ["tags", "brand"],
        "numeric": ["price"],
    }
    data = load_dataset(folder, features=["tags", "brand", "numeric"])
    assert list(data.item_ids) == ["A-1", "B-2", "C-3"] and data.splits["test"]["cold"].nnz == 2


def test_init_never_replaces_a_coldbrew_yaml_unless_forced(tmp_path, capsys):
    folder = shop(tmp_path / "shop")
    (folder / "coldbrew.yaml").write_text("interactions: mine.csv\n")
    assert main(["data", "init", str(folder / "events.csv")]) == 2
    assert "exists; give --force" in capsys.readouterr().err
    assert main(["data", "init", str(folder / "events.csv"), "--force"]) == 0


def test_init_writes_layout_flags_over_its_guesses_and_reads_with_them(tmp_path, capsys):
    folder = shop(tmp_path / "shop")
    # tab-separated files named .csv: the separator flag reaches the reading of both
    for name, table in (("events.csv", EVENTS), ("products.csv", PRODUCTS)):
        (folder / name).write_text(table.replace(",", "\t"))
    files = [str(folder / name) for name in ("events.csv", "products.csv")]
    flags = ["--layout", "separator=tab", "--layout", "k_core=2", "--layout", "text=name"]
    out = tmp_path / "new" / "folder"  # made where it does not exist
    assert main(["data", "init", *files, *flags, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "given: k_core: 2" in printed and "given: text: ['name']" in printed
    spec = yaml.safe_load((out / "coldbrew.yaml").read_text())
    assert spec["user"] == "customer_id" and spec["separator"] == "\t"
    assert spec["interactions"] == "../../shop/events.csv"
    assert spec["k_core"] == 2 and spec["text"] == ["name"]
    assert main(["data", "init", *files, "--force", "--layout", "colour=red"]) == 2
    assert "unknown key(s) colour" in capsys.readouterr().err
