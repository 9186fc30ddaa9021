"""A file coldbrew cannot read is one line saying what coldbrew saw there (never a library's
parse error), and ``coldbrew data init`` reads a latin-1 ``;``-separated pair end to end."""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest
import yaml

from coldbrew.cli import main
from coldbrew.data import load_dataset
from coldbrew.data.tables.reader import read_table
from coldbrew.errors import DataError

LIBRARY_WORDS = ("Error tokenizing", "C error", "Expected", "codec", "EOF inside")


def refusal(path, **options) -> str:
    """The message ``read_table`` refuses ``path`` with, checked to be one line, no pandas."""
    with pytest.raises(DataError) as raised:
        read_table(path, ["user"], **options)
    message = str(raised.value)
    assert "\n" not in message and not any(word in message for word in LIBRARY_WORDS)
    return message


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_ragged_rows_are_named_by_line_with_their_field_counts_and_all_counted(tmp_path):
    path = tmp_path / "events.csv"
    rows = ["user,item,stars"] + ["ann,a,5"] * 3 + ["bob,b,4,9"] + ["cy,c,1,2,3"] * 4
    path.write_text("\n".join(rows) + "\n")
    assert refusal(path) == (
        f"{path}, line 5: 4 fields where the header has 3 (5 rows in all; also line 6, 7); "
        "fix the row(s), or quote fields that hold the separator"
    )


def test_a_first_row_longer_than_the_header_is_ragged_not_an_index_column(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("user,item\nann,a,extra\nbob,b\n")
    assert refusal(path).startswith(f"{path}, line 2: 3 fields where the header has 2;")


def test_a_forced_separator_that_misreads_the_file_names_the_one_that_fits(tmp_path):
    path = tmp_path / "BX-Books.csv"
    path.write_text('"isbn";"title";"year"\n"1";"A, B";"1999"\n"2";"C, D, E";"2001"\n')
    assert read_table(path, [])["title"].tolist() == ["A, B", "C, D, E"]  # sniffed: ';'
    assert refusal(path, separator=",") == (
        f"{path}, line 2: 2 fields where the header has 1 (2 rows in all; also line 3); the "
        "file looks ';'-separated (3 fields in the header): coldbrew read it as ','; give "
        "--layout separator=';'"
    )


def test_backslash_escapes_read_with_doubled_quotes_say_which_quote_to_give(tmp_path):
    path = tmp_path / "books.csv"
    path.write_text('"isbn";"title"\n"1";"A \\"big\\"; one"\n')
    message = refusal(path, quote="double")
    assert message.startswith(f"{path}, line 2: 3 fields where the header has 2")
    assert message.endswith('the file holds \\": give --layout quote=backslash')


def test_a_quote_never_closed_is_named_by_the_line_it_opens(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text('user,title\nann,Heat\nbob,"Up\ncy,Jaws\n')
    assert refusal(path) == (
        f'{path}, line 3: a quote (") opened on this line is never closed; close it, or give '
        "--layout quote=none if quotes are plain characters there"
    )


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("events.csv", b"", "empty file; expected a header line naming the columns"),
        ("events.csv", b"\n\n", "empty file; expected a header line naming the columns"),
        ("events.csv", b"user,item\n", "no rows after the header"),
        ("events.csv", b"user,item\n\x00\x01\x02", "not a text table (binary data at byte 10)"),
        ("events.csv", "user\nann\n".encode("utf-16"), "UTF-16 text; save it as UTF-8"),
        ("events.xlsx", b"PK\x03\x04", "a spreadsheet, not a text table; export it as CSV"),
        ("events.csv", zipped({"xl/workbook.xml": b"<x/>"}), "a spreadsheet, not a text"),
        ("events.zip", zipped({"a.csv": b"u\n1\n", "b.csv": b"u\n2\n"}), "a zip of 2 files"),
        ("events.csv.gz", gzip.compress(b"user,item\nann,a\n")[:-9], "a damaged or cut-off gzip"),
        ("events.jsonl", b'{"user": "ann"}\n[1, 2]\n', "line 2: not a JSON object"),
        ("events.jsonl", b'{"user": "ann"}\n{"user": \n', "line 2: not a JSON object"),
    ],
)
def test_what_is_no_table_is_refused_naming_the_cause(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    assert refusal(path).startswith(f"{path}") and message in refusal(path)


def test_a_missing_file_and_a_wrong_encoding_given_are_refused(tmp_path):
    assert refusal(tmp_path / "nowhere.csv") == f"{tmp_path / 'nowhere.csv'}: file not found"
    path = tmp_path / "events.csv"
    path.write_bytes("user,item\nann,é\n".encode("latin-1"))
    assert refusal(path, encoding="utf-8").startswith(f"{path}: not utf-8 text (byte 14: ")


def test_data_init_reads_a_latin1_semicolon_pair_that_data_info_then_loads(tmp_path, capsys):
    ratings = '"User-ID";"ISBN";"Book-Rating"\n' + "".join(
        f'"{user}";"{isbn}";"{rating}"\n'
        for user, isbn, rating in [(1, "034545104X", 5), (2, "034545104X", 0), (2, "0002005018", 7)]
    )
    books = (
        '"ISBN";"Book-Title";"Year-Of-Publication"\n'
        '"034545104X";"Café \\"Noir\\"";"2002"\n"0002005018";"Clara; Callan";"2001"\n'
    )
    (tmp_path / "BX-Book-Ratings.csv").write_bytes(ratings.encode("latin-1"))
    (tmp_path / "BX-Books.csv").write_bytes(books.encode("latin-1"))
    files = [str(tmp_path / name) for name in ("BX-Book-Ratings.csv", "BX-Books.csv")]
    assert main(["data", "init", *files]) == 0
    printed = capsys.readouterr().out
    assert "guessed: BX-Books.csv: read as cp1252 (not UTF-8: byte 59 is 0xE9)" in printed
    spec = yaml.safe_load((tmp_path / "coldbrew.yaml").read_text())
    assert spec["interactions"] == "BX-Book-Ratings.csv" and spec["items"] == "BX-Books.csv"
    assert spec["user"] == "User-ID" and spec["item"] == "ISBN"
    assert main(["data", "info", str(tmp_path)]) == 0
    info = capsys.readouterr().out
    assert "note: BX-Books.csv: read as cp1252" in info and "';'-separated" in info
    data = load_dataset(tmp_path, text_vectors=False)
    assert list(data.item_ids) == ["0002005018", "034545104X"]
    assert data.item_text is None or 'Café "Noir"' in " ".join(data.item_text)
