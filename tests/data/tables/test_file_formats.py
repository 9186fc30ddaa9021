"""Files as people keep them: each encoding, separator, quoting, compression and format read
by ``read_table`` the way a plain ``pandas.read_csv`` told the truth about the file reads it,
with a note where it was not plain UTF-8 with the suffix's separator."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import zipfile

import pandas as pd
import pytest

from coldbrew.cli import main
from coldbrew.data import load_dataset
from coldbrew.data.tables import text_tables
from coldbrew.data.tables.reader import read_frames, read_table
from coldbrew.data.tables.settings import parse_layout_flags
from coldbrew.errors import DataError

TABLE = 'user;title;year\n007;"Café; noir";1999\nbob;"Plain";2001\n'


def read(path, **options):
    """``(frame, notes)`` of ``path`` read with ``user`` as an id column."""
    notes: list[str] = []
    return read_table(path, ["user"], notes=notes, **options), notes


def reference(data: bytes, **options) -> pd.DataFrame:
    """The frame pandas reads when told the file's encoding, separator and escapes."""
    return pd.read_csv(io.BytesIO(data), dtype={"user": str}, **options)


@pytest.mark.parametrize(
    ("encoding", "text", "chosen"),
    [
        ("latin-1", "Café\x90", "latin-1"),  # 0x90 is no cp1252 character
        ("cp1252", "Caf\u00e9 \u20ac5 \u201cquoted\u201d", "cp1252"),  # é, €, smart quotes
    ],
)
def test_not_utf8_is_read_as_cp1252_else_latin1_and_said(tmp_path, encoding, text, chosen):
    path = tmp_path / "items.csv"
    path.write_bytes(f"user,title\nann,{text}\n".encode(encoding))
    frame, notes = read(path)
    assert frame["title"].tolist() == [text]
    assert notes == [f"items.csv: read as {chosen} (not UTF-8: byte 18 is 0xE9)"]


def test_a_file_mixing_utf8_and_cp1252_reads_each_byte_as_it_was_written(tmp_path):
    # Book-Crossing's books table: UTF-8 accents on most rows, single cp1252 bytes on others.
    rows = [f"u{n},Pelé {n}".encode() for n in range(12)] + ["bob,Café €5".encode("cp1252")]
    path = tmp_path / "items.csv"
    path.write_bytes(b"user,title\n" + b"\n".join(rows) + b"\n")
    frame, notes = read(path)
    assert frame["title"].tolist() == [f"Pelé {n}" for n in range(12)] + ["Café €5"]
    assert notes[0].startswith("items.csv: read as UTF-8 and cp1252 mixed (12 UTF-8 sequences")
    assert "each byte that is not UTF-8 read as cp1252" in notes[0]


def test_a_few_utf8_like_pairs_in_a_cp1252_file_leave_it_cp1252(tmp_path):
    # "Ã©" written in cp1252 is the UTF-8 of "é": under ten such pairs, the file is cp1252
    text = "Ã© " + "é" * 40
    path = tmp_path / "items.csv"
    path.write_bytes(f"user,title\nann,{text}\n".encode("cp1252"))
    frame, notes = read(path)
    assert frame["title"].tolist() == [text]
    assert notes[0].startswith("items.csv: read as cp1252")


def test_utf8_with_or_without_a_byte_order_mark_is_read_without_a_note(tmp_path):
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text("user,title\nann,Café\n", encoding="utf-8")
    marked.write_text("user,title\nann,Café\n", encoding="utf-8-sig")
    (first, first_notes), (second, second_notes) = read(plain), read(marked)
    assert list(second.columns) == ["user", "title"] and first.equals(second)
    assert first_notes == second_notes == []


@pytest.mark.parametrize("separator", [";", "\t", "|"])
def test_the_separator_is_sniffed_whatever_the_suffix_says(tmp_path, separator):
    path = tmp_path / "events.csv"
    data = TABLE.replace(";", separator).replace(f"Café{separator}", "Café;").encode()
    path.write_bytes(data)
    frame, notes = read(path)
    pd.testing.assert_frame_equal(frame, reference(data, sep=separator))
    assert frame["user"].tolist() == ["007", "bob"] and frame["title"][0] == "Café; noir"
    assert notes == [f"events.csv: {text_tables.describe(separator)}-separated"]


def test_where_two_separators_fit_the_suffixs_own_wins_and_one_column_reads(tmp_path):
    """',' splits every line in two as well as tab does: the .tsv says tab."""
    tsv, single = tmp_path / "events.tsv", tmp_path / "ids.csv"
    tsv.write_text("user,id\titem\nann,1\ta,b\n")
    single.write_text("user\nann\nbob\n")
    frame, notes = read(tsv)
    assert frame.to_dict("list") == {"user,id": ["ann,1"], "item": ["a,b"]} and notes == []
    assert read(single)[0]["user"].tolist() == ["ann", "bob"]


def test_every_field_quoted_keeps_ids_as_written(tmp_path):
    path = tmp_path / "ratings.csv"
    data = b'"user";"isbn";"rating"\n"007";"034545104X";"5"\n"8";"0155061224";"0"\n'
    path.write_bytes(data)
    frame, _ = read(path)
    assert frame["user"].tolist() == ["007", "8"] and frame["isbn"][0] == "034545104X"
    assert frame["rating"].tolist() == [5, 0]


def test_backslash_escaped_quotes_are_found_anywhere_in_the_file(tmp_path):
    """The escape is past the sniffer's sample: the whole file is searched for it."""
    path = tmp_path / "books.csv"
    rows = "".join(f'"{n}";"Title {n}"\n' for n in range(text_tables.SAMPLE_BYTES // 10))
    data = ('"isbn";"title"\n' + rows + '"x";"The \\"Big\\"; One"\n').encode()
    path.write_bytes(data)
    frame, notes = read(path)
    pd.testing.assert_frame_equal(frame, reference(data, sep=";", escapechar="\\"))
    assert frame["title"].iloc[-1] == 'The "Big"; One'
    assert notes == ["books.csv: ';'-separated, quotes inside fields escaped as \\\""]


def test_doubled_quotes_are_one_quote(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text('user,title\nann,"The ""Big"" One, again"\n')
    assert read(path)[0]["title"].tolist() == ['The "Big" One, again']


def compressed(kind: str, data: bytes) -> bytes:
    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("ratings.csv", data)
        return buffer.getvalue()
    return {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](data)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip"])
def test_each_compression_reads_like_the_plain_file(tmp_path, kind):
    data = TABLE.encode("cp1252")
    (tmp_path / "ratings.csv").write_bytes(data)
    path = tmp_path / f"ratings.csv.{kind}"
    path.write_bytes(compressed(kind, data))
    (plain, plain_notes), (frame, notes) = read(tmp_path / "ratings.csv"), read(path)
    pd.testing.assert_frame_equal(frame, plain)
    assert notes == [note.replace("ratings.csv", path.name) for note in plain_notes]


def test_compression_is_known_by_its_bytes_too_and_a_zip_member_names_the_format(tmp_path):
    data = b'{"user": "007", "item": "a"}\n'
    (tmp_path / "events.csv").write_bytes(gzip.compress(TABLE.encode()))
    with zipfile.ZipFile(tmp_path / "events.zip", "w") as archive:
        archive.writestr("events.jsonl", data)
    assert read(tmp_path / "events.csv")[0]["title"].tolist() == ["Café; noir", "Plain"]
    assert read(tmp_path / "events.zip")[0].to_dict("list") == {"user": ["007"], "item": ["a"]}


def test_json_lines_keep_ids_as_text_and_numbers_as_numbers(tmp_path):
    for suffix in ("jsonl", "ndjson"):
        path = tmp_path / f"events.{suffix}"
        path.write_text(
            '{"user": "007", "item": 5, "timestamp": "2020-01-01"}\n\n{"user": "8", "item": 6}\n'
        )
        frame, _ = read(path)
        assert frame["user"].tolist() == ["007", "8"] and frame["item"].tolist() == [5, 6]
        assert frame["timestamp"][0] == "2020-01-01"  # not turned into a date


def test_parquet_compressed_or_not_reads_its_types(tmp_path):
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"user": ["007", "8"], "item": [5, 6]})
    frame.to_parquet(tmp_path / "events.parquet")
    (tmp_path / "events.parquet.gz").write_bytes(
        gzip.compress((tmp_path / "events.parquet").read_bytes())
    )
    for name in ("events.parquet", "events.parquet.gz"):
        read_back, notes = read(tmp_path / name)
        assert read_back.to_dict("list") == frame.to_dict("list") and notes == []


def test_the_keys_overrule_the_sniffer(tmp_path):
    path = tmp_path / "events.csv"
    path.write_bytes("user|tags,more\nann|a,\x80\n".encode("latin-1"))
    sniffed, _ = read(path)  # both fit: the suffix's ',' wins, 0x80 is cp1252's euro
    assert list(sniffed.columns) == ["user|tags", "more"] and sniffed["more"][0] == "€"
    given, notes = read(path, separator="|", encoding="latin-1")
    assert list(given.columns) == ["user", "tags,more"] and given["tags,more"][0] == "a,\x80"
    assert notes == []  # what the user said needs no note
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('user,title\nann,"Big\nbob,Small\n')
    assert read(quoted, quote="none")[0]["title"].tolist() == ['"Big', "Small"]


def test_the_keys_reach_every_file_from_coldbrew_yaml_and_flags(tmp_path):
    (tmp_path / "events.csv").write_bytes(b"user|item\nann|a,1\nbob|b,2\n")
    (tmp_path / "items.csv").write_bytes(b"item|title\na,1|Caf\xe9\nb,2|Up\n")
    spec = {"interactions": "events.csv", "items": "items.csv", "text": ["title"]}
    layout = parse_layout_flags(["separator=pipe", "encoding=latin-1", "quote=double"])
    assert layout == {"separator": "|", "encoding": "latin-1", "quote": "double"}
    frames = read_frames(tmp_path, {**spec, **layout})
    assert frames["items"]["title"].tolist() == ["Café", "Up"]
    assert frames["interactions"]["item"].tolist() == ["a,1", "b,2"]
    (tmp_path / "coldbrew.yaml").write_text(
        "interactions: events.csv\nitems: items.csv\nseparator: '|'\nencoding: latin-1\n"
    )
    data = load_dataset(tmp_path, text_vectors=False)
    assert list(data.item_ids) == ["a,1", "b,2"]
    assert not any("read as" in note or "separated" in note for note in data.notes)


def test_a_datasets_notes_say_how_its_files_were_read(tmp_path):
    (tmp_path / "events.csv").write_bytes("user;item\nann;é\nbob;b\n".encode("cp1252"))
    (tmp_path / "coldbrew.yaml").write_text("interactions: events.csv\n")
    data = load_dataset(tmp_path)
    assert "events.csv: read as cp1252 (not UTF-8: byte 14 is 0xE9), ';'-separated" in data.notes
    assert list(data.item_ids) == ["b", "é"]


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("separator=x", "separator must be ',', ';', '|' or tab, not 'x'"),
        ("encoding=klingon", "encoding 'klingon' is unknown"),
        ("quote=maybe", "quote must be double, backslash, single, none, not 'maybe'"),
    ],
)
def test_wrong_keys_are_refused_naming_the_choices(flag, message):
    with pytest.raises(DataError, match=message):
        parse_layout_flags([flag])


@pytest.mark.parametrize(
    ("word", "separator"), [("tab", "\t"), ("\\t", "\t"), (",", ","), (";", ";")]
)
def test_a_separator_is_a_character_or_a_word(word, separator):
    assert parse_layout_flags([f"separator={word}"]) == {"separator": separator}


def test_data_info_reads_a_folder_with_the_keys_given_as_flags(tmp_path, capsys):
    (tmp_path / "events.csv").write_bytes(b"user|item\nann|a,1\nbob|b,2\nbob|a,1\n")
    flags = ["--layout", "interactions=events.csv", "--layout", "separator=pipe"]
    assert main(["data", "info", str(tmp_path), *flags, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["users"], summary["items"]) == (2, 2)
