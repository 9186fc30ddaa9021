"""Strict reading of CSV files: every row checked against the header, quotes allowed.

``read_pairs`` reads a ``uid,iid`` interaction file. Plain two-column files (the common case,
hundreds of thousands of lines) take a C-speed path whose per-line field count is checked from
the raw bytes; anything else (quotes, extra columns, blank or malformed lines) goes through the
``csv`` module line by line, which is also the reference the fast path is tested against.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np

from coldbrew.errors import DataError


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
    """``(uids, iids)`` int64 arrays of a ``uid,iid`` CSV.

    More columns are allowed and ignored; names and values may be double-quoted
    (``"uid","iid"``). Every row must have exactly as many fields as the header: a row with more
    or fewer is a ``DataError`` naming the file and line, never re-paired with its neighbours.
    """
    header, _, body = read_text(path).partition("\n")
    columns = next(csv.reader([header]), [])
    positions = header_positions(path, columns, ("uid", "iid"))
    if not body.strip():
        raise DataError(f"{path}: no interactions after the header")
    if positions == [0, 1] and len(columns) == 2:
        pairs = _parse_plain_pairs(body)
        if pairs is not None:
            return pairs
    return _parse_lines(path, body, positions, len(columns))


def _parse_plain_pairs(body: str) -> tuple[np.ndarray, np.ndarray] | None:
    """C-speed parse of unquoted ``int,int`` lines; ``None`` when any line is anything else.

    Each line must hold exactly one comma (counted per line from the raw bytes, so a 3-field
    line next to a 1-field line cannot pass as two pairs); blank lines, quotes and non-integers
    also return ``None`` and leave the line-by-line parser to report or handle them.
    """
    body = body.rstrip("\n")
    if '"' in body:
        return None
    raw = np.frombuffer(body.encode(), dtype=np.uint8)
    line_ends = np.append(np.flatnonzero(raw == ord("\n")), len(raw))  # (lines,)
    commas_before = np.concatenate([[0], np.cumsum(raw == ord(","))])  # (bytes + 1,)
    commas_per_line = np.diff(commas_before[line_ends], prepend=0)  # (lines,)
    if (commas_per_line != 1).any():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(body.replace("\n", ","), dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            return None
    if len(values) != 2 * len(line_ends):
        return None
    return values[0::2].copy(), values[1::2].copy()


def _parse_lines(
    path: Path, body: str, positions: list[int], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """The reference parser: ``csv`` rows (quotes allowed), each checked, blank lines skipped."""
    users, items = [], []
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
        try:
            users.append(int(row[positions[0]]))
            items.append(int(row[positions[1]]))
        except ValueError:
            raise DataError(
                f"{path}, line {number}: uid and iid must be integers, got {','.join(row)!r}"
            ) from None
    return np.asarray(users, dtype=np.int64), np.asarray(items, dtype=np.int64)
