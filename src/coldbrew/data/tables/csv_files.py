"""Strict reading of CSV files: every row checked against the header, quotes allowed.

``read_pairs`` reads a ``uid,iid`` interaction file. pandas' C parser reads it whole (hundreds
of thousands of lines) when every row has as many fields as the header and the two columns hold
only integers (``integer_columns``, for the other loaders too) or, failing that, text
(``text_columns``); anything else (a malformed row, an empty field) goes through the ``csv``
module line by line, which names the file and line to blame and is the reference the pandas
paths are tested against.

Ids (``id_values``) are integers when every one of a column is an integer as ``int`` reads it
(``7``, ``007``, ``+7``), text when none is (``item1``, ``7.5``); a column mixing the two is a
``DataError`` naming the line.
"""

from __future__ import annotations

import csv
import functools
import io
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from coldbrew.errors import DataError

INTEGER_ID = r"[+-]?0*[0-9]{1,18}"  # what int() reads, within int64
PAIR_IDS = "uid and iid must be integers"


def read_text(path: Path) -> str:
    """A UTF-8 file's text (a byte-order mark dropped, newlines made ``\\n``), else a ``DataError``."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error})") from error


def header_positions(path: Path, columns: list[str], required: tuple[str, ...]) -> list[int]:
    """Where each ``required`` column sits in the (already unquoted) header ``columns``."""
    names = [column.strip() for column in columns]
    if not any(names):
        raise DataError(f"{path}: empty file; expected a header line {','.join(required)!r}")
    missing = [name for name in required if name not in names]
    if missing:
        raise DataError(
            f"{path}, line 1: header {','.join(names)!r} lacks column(s) {', '.join(missing)}; "
            f"expected {','.join(required)!r}"
        )
    return [names.index(name) for name in required]


def read_pairs(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(uids, iids)`` of a ``uid,iid`` CSV, each int64, or an object array of text ids
    (``id_values``).

    More columns are allowed and ignored; names and values may be double-quoted
    (``"uid","iid"``). Every row must have exactly as many fields as the header: a row with more
    or fewer is a ``DataError`` naming the file and line, never re-paired with its neighbours.
    """
    header, _, body = read_text(path).partition("\n")
    columns = next(csv.reader([header]), [])
    positions = header_positions(path, columns, ("uid", "iid"))
    if not body.strip():
        raise DataError(f"{path}: no interactions after the header")
    values = integer_columns(body, len(columns), positions)
    if values is not None:
        return values[:, 0].copy(), values[:, 1].copy()
    texts = text_columns(body, len(columns), positions)
    if texts is not None:
        users, items = texts
        line_of = functools.partial(data_line, path)
    else:
        users, items, lines = _parse_lines(path, body, positions, len(columns))
        line_of = lines.__getitem__
    return (
        id_values(path, users, line_of, "uid", PAIR_IDS),
        id_values(path, items, line_of, "iid", PAIR_IDS),
    )


def id_values(
    path: Path, values: Sequence[str], line_of: Callable[[int], int], what: str, rule: str
) -> np.ndarray:
    """``values`` (row ``i`` read on line ``line_of(i)`` of ``path``) as int64 when every one is
    an integer, else as an object array of text (spaces around stripped); empty ids and a mix
    of the two kinds are a ``DataError`` naming the line, its message starting with ``rule``."""
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    texts = pd.Series(uniques, dtype=object).str.strip()  # each distinct value once
    empty = (texts == "").to_numpy()[codes]
    if empty.any():
        raise DataError(f"{path}, line {line_of(int(np.argmax(empty)))}: empty {what}")
    integer = texts.str.fullmatch(INTEGER_ID).to_numpy(dtype=bool)
    if integer.all():
        return texts.astype(np.int64).to_numpy()[codes]
    if not integer.any():
        return texts.to_numpy(dtype=object)[codes]
    integer = integer[codes]
    other = int(np.argmax(integer != integer[0]))
    kinds = ("text", "an integer") if integer[0] else ("an integer", "text")
    raise DataError(
        f"{path}, line {line_of(other)}: {rule}, or every {what} text: {what} "
        f"{texts.iloc[codes[other]]!r} is {kinds[0]} but line {line_of(0)}'s is {kinds[1]}"
    )


def data_line(path: Path, row: int) -> int:
    """The line of ``path`` (the header is line 1) holding data row ``row`` (from 0) as
    ``read_pairs`` counts rows, blank lines skipped: for messages."""
    header, _, body = read_text(path).partition("\n")
    width = len(next(csv.reader([header]), []))
    return _parse_lines(path, body, [0, 0], width)[2][row]


def integer_columns(
    body: str, width: int, columns: list[int], separator: str = ","
) -> np.ndarray | None:
    r"""``(rows, len(columns))`` int64: ``columns`` of ``body`` (no header line) read by pandas'
    C parser; ``None`` unless every row has exactly ``width`` fields and those columns hold only
    integers (quotes and blank lines are fine), so the caller's line-by-line parser can say
    which line is wrong. ``separator`` ``r"\s+"`` reads whitespace-separated files."""
    import pandas as pd

    with warnings.catch_warnings():
        # pandas only warns when the first row has more fields than ``width``: refuse it too
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(
                io.StringIO(body),
                sep=separator,
                header=None,
                names=list(range(width)),
                index_col=False,
                engine="c",
            )
        except (ValueError, OverflowError, pd.errors.ParserWarning):  # ParserError is a ValueError
            return None
    chosen = frame[columns]
    if frame.empty or any(dtype.kind != "i" for dtype in chosen.dtypes):  # NaN, 7.5, 7.0, text
        return None
    return chosen.to_numpy(dtype=np.int64)


def text_columns(body: str, width: int, columns: list[int]) -> list[np.ndarray] | None:
    """``columns`` of ``body`` (no header line) as object arrays of text, read by pandas' C
    parser; ``None`` unless every row has exactly ``width`` fields, none empty or read as
    missing (``NA``), so the caller's line-by-line parser can say which line is wrong."""
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)  # see integer_columns
        try:
            frame = pd.read_csv(
                io.StringIO(body),
                header=None,
                names=list(range(width)),
                index_col=False,
                engine="c",
                dtype=str,
            )
        except (ValueError, pd.errors.ParserWarning):
            return None
    if frame.empty or frame.isna().to_numpy().any():  # a short row, an empty field
        return None
    return [frame[column].to_numpy(dtype=object) for column in columns]


def _parse_lines(
    path: Path, body: str, positions: list[int], width: int
) -> tuple[list[str], list[str], list[int]]:
    """The reference parser: ``csv`` rows (quotes allowed), each checked, blank lines skipped;
    the two columns' values as written and each row's line."""
    users, items, lines = [], [], []
    rows = csv.reader(body.split("\n"))
    for row in rows:
        number = rows.line_num + 1  # the header is line 1
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != width:
            raise DataError(
                f"{path}, line {number}: expected {width} fields like the header, "
                f"got {len(row)} ({','.join(row)!r})"
            )
        users.append(row[positions[0]])
        items.append(row[positions[1]])
        lines.append(number)
    return users, items, lines
