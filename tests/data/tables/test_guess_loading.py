"""Loading what data init guessed: ids matched as numbers, repeated item rows, day-first dates,
every bad row of a file named by line, and k_core."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from coldbrew.cli import main
from coldbrew.data import load_dataset
from coldbrew.data.tables.core import k_core
from coldbrew.data.tables.settings import parse_layout_flags
from coldbrew.errors import DataError


def folder_of(tmp_path, files, spec):
    folder = tmp_path / "d"
    folder.mkdir(parents=True)
    for name, text in {**files, "coldbrew.yaml": spec}.items():
        (folder / name).write_text(text)
    return folder


SPEC = "interactions: views.csv\nuser: user\nitem: item\nitems: items.csv\ntext: [title]\n"
ITEMS = "item,title\n1430,Heat\n1431,Alien\n1432,Up\n"


def test_ids_written_as_decimals_or_with_spaces_match_and_missing_items_drop_keeps_them(tmp_path):
    views = "user,item\n u1 ,1430.0\nu1,1431.0\nu2,1430.0\nu2,9999.0\n"
    folder = folder_of(
        tmp_path, {"views.csv": views, "items.csv": ITEMS}, SPEC + "missing_items: drop\n"
    )
    data = load_dataset(folder, text_vectors=False)
    assert data.num_train == 3  # only 9999 dropped: 1430.0 is 1430
    assert list(data.item_ids) == [1430, 1431, 1432] and list(data.user_ids) == ["u1", "u2"]
    notes = "\n".join(data.notes)
    assert "views.csv: item ids in 'item' written as decimals (e.g. '1430.0')" in notes
    assert "views.csv: spaces around 1 id(s) in 'user' stripped" in notes


def test_decimal_ids_stay_text_when_no_file_writes_integers(tmp_path):
    views = "user,item\nu1,1430.5\nu2,1430.0\n"
    folder = folder_of(tmp_path, {"views.csv": views}, "interactions: views.csv\n")
    assert list(load_dataset(folder).item_ids) == ["1430.0", "1430.5"]


def test_identical_item_rows_are_read_once_and_differing_ones_name_their_lines(tmp_path):
    views = "user,item\nu1,1430\nu2,1431\n"
    repeated = ITEMS + "1431,Alien\n"
    folder = folder_of(tmp_path, {"views.csv": views, "items.csv": repeated}, SPEC)
    data = load_dataset(folder, text_vectors=False)
    assert data.num_items == 3
    assert "items.csv: 1 identical repeated row(s) read once" in data.notes
    (folder / "items.csv").write_text(ITEMS + "1431,Aliens\n")
    with pytest.raises(DataError, match=r"item id 1431 is on 2 rows that differ \(line 3, line 5;"):
        load_dataset(folder, text_vectors=False)


def dated(tmp_path, dates, extra=""):
    views = "user,item,when\n" + "".join(
        f"u{n % 2},{1430 + n % 3},{date}\n" for n, date in enumerate(dates)
    )
    spec = SPEC + "timestamp: when\n" + extra
    return folder_of(tmp_path, {"views.csv": views, "items.csv": ITEMS}, spec)


def test_day_first_dates_are_read_day_first_with_a_note(tmp_path):
    folder = dated(tmp_path, ["02/03/2021", "25/03/2021", "01/04/2021"])
    data = load_dataset(folder, text_vectors=False)
    seconds = pd.Timestamp("2021-03-02", tz="UTC").timestamp()  # 2 March, not 3 February
    assert data.item_first_seen[0] == seconds
    assert any("dates written day first (e.g. '25/03/2021'): read so" in n for n in data.notes)
    iso = load_dataset(dated(tmp_path / "iso", ["2021-03-02", "2021-03-25"]), text_vectors=False)
    assert iso.item_first_seen[0] == seconds and not any("first" in n for n in iso.notes)


def test_dates_whose_order_cannot_be_told_are_refused_until_stated(tmp_path):
    folder = dated(tmp_path, ["02/03/2021", "04/05/2021", "01/12/2021"])
    with pytest.raises(DataError, match=r'cannot be told apart.*date_format: "%d/%m/%Y"'):
        load_dataset(folder, text_vectors=False)
    data = load_dataset(folder, text_vectors=False, layout={"date_format": "%d/%m/%Y"})
    assert data.item_first_seen[0] == pd.Timestamp("2021-03-02", tz="UTC").timestamp()
    month_first = dated(tmp_path / "m", ["02/03/2021", "04/25/2021", "01/12/2021"])
    data = load_dataset(month_first, text_vectors=False)
    assert data.item_first_seen[0] == pd.Timestamp("2021-02-03", tz="UTC").timestamp()


def test_every_bad_rating_of_a_file_is_named_by_line_in_one_error(tmp_path):
    views = "user,item,stars\n" + "".join(f"u{n},1430,{'bad' if n % 2 else 4}\n" for n in range(16))
    folder = folder_of(tmp_path, {"views.csv": views, "items.csv": ITEMS}, SPEC + "rating: stars\n")
    with pytest.raises(DataError) as refused:
        load_dataset(folder, text_vectors=False)
    assert str(refused.value) == (
        "views.csv, line 3: rating 'bad' is not a number; also line 5 ('bad'), line 7 ('bad'), "
        "line 9 ('bad'), line 11 ('bad') and 3 more (8 such row(s) in column 'stars')"
    )


def naive_core(pairs: set[tuple[int, int]], k: int) -> set[tuple[int, int]]:
    """The k-core by the definition: drop users and items under k, again until none is."""
    while True:
        users = pd.Series([u for u, _ in pairs]).value_counts()
        items = pd.Series([i for _, i in pairs]).value_counts()
        kept = {(u, i) for u, i in pairs if users[u] >= k and items[i] >= k}
        if kept == pairs:
            return pairs
        pairs = kept
        if not pairs:
            return pairs


@pytest.mark.parametrize("seed, k", [(0, 2), (1, 3), (2, 5)])
def test_k_core_matches_the_definition_on_random_interactions(seed, k):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"u": rng.integers(0, 60, 400), "i": rng.integers(0, 40, 400)})
    kept = k_core(frame, "u", "i", k)
    expected = naive_core(set(zip(frame.u, frame.i, strict=True)), k)
    assert set(zip(frame.u[kept], frame.i[kept], strict=True)) == expected


def test_k_core_keeps_the_core_items_in_the_catalogue_and_notes_the_counts(tmp_path, capsys):
    # u3 and item 1432 have one interaction each: out of the 2-core, and 1432 off the catalogue
    views = "user,item\nu1,1430\nu1,1431\nu2,1430\nu2,1431\nu3,1432\n"
    folder = folder_of(tmp_path, {"views.csv": views, "items.csv": ITEMS}, SPEC)
    data = load_dataset(folder, text_vectors=False, layout={"k_core": 2})
    assert (data.num_users, data.num_items, data.num_train) == (2, 2, 4)
    notes = "\n".join(data.notes)
    assert "views.csv: k_core 2: 3 users, 3 items, 5 interactions -> 2, 2, 4" in notes
    assert "items.csv: 1 item(s) outside the 2-core left out of the catalogue" in notes
    assert parse_layout_flags(["k_core=5"]) == {"k_core": 5}
    with pytest.raises(DataError, match="k_core must be a whole number, 1 or more, not 'x'"):
        parse_layout_flags(["k_core=x"])
    assert main(["data", "info", str(folder), "--layout", "k_core=2"]) == 0
    assert "k_core 2: 3 users" in capsys.readouterr().out


def test_k_core_counts_only_the_interactions_missing_items_drop_keeps(tmp_path):
    # u1's third view names 9999, an item the table lacks: with it u1 would have 3 views and
    # stay in the 3-core; without it (dropped) u1 has 2 and leaves, so the core is empty of u1
    views = "user,item\nu1,1430\nu1,1431\nu1,9999\nu2,1430\nu2,1431\nu2,1432\n"
    views += "u3,1430\nu3,1431\nu3,1432\nu4,1430\nu4,1431\nu4,1432\n"
    spec = SPEC + "missing_items: drop\n"
    folder = folder_of(tmp_path, {"views.csv": views, "items.csv": ITEMS}, spec)
    data = load_dataset(folder, text_vectors=False, layout={"k_core": 3})
    assert list(data.user_ids) == ["u2", "u3", "u4"] and data.num_train == 9
    assert data.train.sum(axis=0).min() >= 3 and data.train.sum(axis=1).min() >= 3
    assert "-> 3, 3, 9 (1 naming items the table lacks dropped first)" in "\n".join(data.notes)


def test_every_problem_of_a_file_comes_in_one_error(tmp_path):
    views = "user,item,stars,when\nu1,1430,4,5\n,1431,x,6\nu2,1432,5,soon\n"
    spec = SPEC + "rating: stars\ntimestamp: when\n"
    folder = folder_of(tmp_path, {"views.csv": views, "items.csv": ITEMS}, spec)
    with pytest.raises(DataError) as refused:
        load_dataset(folder, text_vectors=False)
    assert str(refused.value) == (
        "views.csv: 3 problems: line 3: empty user id (1 row(s) without one); "
        "line 3: rating 'x' is not a number (1 such row(s) in column 'stars'); "
        "line 4: timestamp 'soon' is not a number like the others (1 such row(s))"
    )
