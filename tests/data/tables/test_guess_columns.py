"""data init's rules, one trap each: index, e-mail, URL, constant, long and wide columns; files
told apart by their shape; a folder read as its table files."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from coldbrew.cli import main
from coldbrew.data.tables.columns import content_kind, is_email, is_index, is_location
from coldbrew.data.tables.guess import guess, table_files


def test_an_index_column_is_its_name_and_its_values_in_order():
    assert is_index("Unnamed: 0", pd.Series(["0", "1", "2"]))
    assert is_index("index", pd.Series(["1", "2", "3"]))
    assert is_index("", pd.Series(["0", "1"]))
    assert not is_index("Unnamed: 0", pd.Series(["0", "2", "1"]))  # not in order
    assert not is_index("user", pd.Series(["0", "1", "2"]))  # a real column named so
    assert not is_index("index", pd.Series(["a", "b"]))


def test_email_columns_are_named_so_or_hold_addresses_or_hex_digests():
    assert is_email("email", pd.Series(["x1", "x2"]))
    assert is_email("who", pd.Series(["ann@mail.com", "bob@mail.org"]))
    assert is_email("who", pd.Series(["0" * 32, "ab" * 20, "f" * 64]))
    assert not is_email("who", pd.Series(["ann", "bob"]))


@pytest.mark.parametrize(
    "values, expected",
    [
        (["http://a.com/x.jpg", "https://b.org/y"], True),
        (["www.shop.com/p/1", "www.shop.com/p/2"], True),
        (["/images/a/b.jpg", "/images/c/d.jpg"], True),
        (["C:\\pictures\\a.png", "C:\\pictures\\b.png"], True),
        (["Heat", "A thief / a cop"], False),
    ],
)
def test_urls_and_paths_are_locations(values, expected):
    assert is_location(pd.Series(values)) is expected


def kind(name, values):
    return content_kind(name, pd.Series(values, dtype=object))[0]


def test_long_text_stays_text_whatever_characters_it_holds():
    body = "A long article body that mentions a | pipe as prose and goes on for a while."
    assert kind("body", [body + "1", body + "2", body + "3"]) == "text"
    assert kind("genres", ["Action|Crime", "Drama", "Action|Drama"]) == "categories"


def test_constant_empty_and_url_columns_are_skipped_with_a_reason():
    assert content_kind("lang", pd.Series(["en", "en", None])) == (
        None,
        "one value ('en') in every row: not used",
    )
    assert content_kind("note", pd.Series([None, " "]))[0] is None
    assert content_kind("cover", pd.Series(["http://x/a.jpg", "http://x/b.jpg"]))[0] is None


def test_a_wide_label_column_is_text_and_says_why():
    wide = [f"Author {n}" for n in range(2500)]
    assert content_kind("author", pd.Series(wide)) == (
        "text",
        "2,500 distinct values, 100% seen once: too many for a category",
    )
    # 300 values, most of them once: a name per row, not a label shared by rows
    mostly_once = [f"P{n}" for n in range(300)] + ["P1"] * 50
    assert kind("publisher", mostly_once) == "text"
    assert kind("brand", ["Acme", "Lux"] * 200) == "categories"


def test_a_wide_label_whose_values_repeat_is_text_and_categories_too():
    # 3,000 authors: 2,500 with one book, 500 with 3 books each (1,500 of 4,000 items: 38 %)
    authors = [f"Solo {n}" for n in range(2500)] + [f"Prolific {n}" for n in range(500)] * 3
    kind_of, why = content_kind("author", pd.Series(authors))
    assert kind_of == "text+categories"
    assert why == (
        "3,000 distinct values, 83% seen once: too many for a category, so text; its most "
        "frequent values, each on 2 items or more, cover 38% of the items, so categories too"
    )
    # the same authors on 100,000 items: a 100,000 x 2,000 block (0.7 GiB) is not guessed
    many = pd.Series((authors * 34)[:100_000])
    kind_of, why = content_kind("author", many)
    assert kind_of == "text" and "would take 0.7 GiB: text only" in why
    # titles: a few repeat (reprints), most do not: text alone
    titles = [f"Title {n}" for n in range(3000)] + [f"Title {n}" for n in range(100)]
    assert content_kind("title", pd.Series(titles))[0] == "text"


def test_years_are_numeric_and_a_numbered_id_column_is_skipped():
    assert content_kind("year", pd.Series(["1999", "2001", "2001"])) == (
        "numeric",
        "numbers (years)",
    )
    assert content_kind("goodreads_id", pd.Series(["17", "4", "9"]))[0] is None
    assert kind("price", ["2.5", "3", "2.5"]) == "numeric"


def write(folder, files):
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


LOG = "a,b\n" + "".join(f"u{u},i{i}\n" for u in range(4) for i in range(3))
CATALOGUE = "key,title\n" + "".join(f"i{i},Title {i}\n" for i in range(5))


def test_the_item_column_is_the_one_another_table_keys_whatever_the_names(tmp_path):
    folder = write(tmp_path / "d", {"items.csv": LOG, "interactions.csv": CATALOGUE})
    spec, lines = guess([folder / "items.csv", folder / "interactions.csv"])
    assert spec["interactions"].name == "items.csv"  # the shape, not the name
    assert (spec["user"], spec["item"], spec["item_id"]) == ("a", "b", "key")
    assert spec["items"].name == "interactions.csv"
    assert "items.csv: 'b' is the item: another table lists its ids" in lines


def test_a_cold_file_must_repeat_like_interactions_and_name_only_new_items(tmp_path):
    files = {
        "log.csv": LOG,
        "catalogue.csv": CATALOGUE,
        "warm_test.csv": "a,b\nu0,i0\nu1,i0\n",
        "cold_val.csv": "a,b\nu0,i3\nu1,i3\n",
        "users.csv": "a,age\nu0,30\nu1,40\nu2,50\nu3,60\n",
    }
    folder = write(tmp_path / "d", files)
    spec, lines = guess([folder])
    assert spec["val"].name == "cold_val.csv" and "test" not in spec
    assert "warm_test.csv: not used (1 of its items have training interactions" in "\n".join(lines)
    assert "users.csv: not used (a users table keyed by 'a')" in lines


def test_a_users_table_is_not_taken_for_the_items(tmp_path):
    folder = write(
        tmp_path / "d",
        {"ratings.csv": "user,book\nu0,b0\nu0,b1\nu1,b0\n", "users.csv": "user,age\nu0,3\nu1,4\n"},
    )
    spec, lines = guess([folder])
    assert "items" not in spec and "users.csv: not used (a users table keyed by 'user')" in lines


def test_a_folder_is_read_as_its_table_files_and_a_file_named_twice_once(tmp_path, capsys):
    folder = write(
        tmp_path / "d",
        {"log.csv": LOG, "catalogue.tsv": CATALOGUE.replace(",", "\t"), "README.md": "hi\n"},
    )
    (folder / "coldbrew.yaml").write_text("interactions: log.csv\n")
    lines: list[str] = []
    found = table_files([folder, folder / "log.csv"], lines)
    assert [path.name for path in found] == ["catalogue.tsv", "log.csv"]
    assert lines == ["log.csv: named more than once; read once"]
    (folder / "broken.csv").write_bytes(b"")  # found in the folder: not used, said why
    assert main(["data", "init", str(folder), "--force"]) == 0
    assert "broken.csv: not used (cannot be read: " in capsys.readouterr().out
    spec = yaml.safe_load((folder / "coldbrew.yaml").read_text())
    assert spec["interactions"] == "log.csv" and spec["items"] == "catalogue.tsv"
    assert main(["data", "init", str(folder / "broken.csv"), "--force"]) == 2  # named: refused


def test_interactions_naming_items_the_table_lacks_are_counted_and_a_few_dropped(tmp_path):
    folder = write(tmp_path / "d", {"log.csv": LOG + "u0,zz\nu1,zz\n", "cat.csv": CATALOGUE})
    spec, lines = guess([folder])
    assert (
        "log.csv: 2 interaction(s) (14%) name 1 item(s) cat.csv lacks: missing_items: drop "
        "(delete the line to refuse them instead)"
    ) in lines
    assert spec["missing_items"] == "drop"
    unknown = "".join(f"u{n % 3},z{n}\n" for n in range(40))  # most rows: the wrong table
    folder = write(tmp_path / "e", {"log.csv": LOG + unknown, "cat.csv": CATALOGUE})
    spec, lines = guess([folder])
    assert "missing_items" not in spec
    assert any("loading refuses them; is cat.csv the right items table?" in line for line in lines)


def test_without_names_the_first_of_two_keyed_columns_is_the_user(tmp_path):
    folder = write(
        tmp_path / "d",
        {
            "log.csv": LOG,
            "catalogue.csv": CATALOGUE,
            "people.csv": "who,age\nu0,3\nu1,4\nu2,5\nu3,6\n",
        },
    )
    spec, lines = guess([folder])
    assert (spec["user"], spec["item"], spec["item_id"]) == ("a", "b", "key")
    assert "people.csv: not used (a users table keyed by 'who')" in lines
