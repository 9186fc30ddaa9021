"""``coldbrew data init FILES...``: guess a ``coldbrew.yaml`` from the files themselves.

Which file is which, from the files' shape, not their names:

- the interactions: two id columns whose values repeat (many rows per user and per item); of
  several such files, the one with the most rows. Its user column is an e-mail column (named
  ``email``, hex digests, ``@``-addresses), else one named like a user (``user``,
  ``customer`` ...); its item column is the one whose values the items table's id column
  holds (``1430.0`` matches ``1430``).
- the items table: one row per id (identical repeated rows aside), its id column holding the
  interactions' items; a table of an id column and at least 8 number columns is a vector table.
- a cold val/test file: the interactions' user and item columns, values repeating, and no
  item of the training file (``test`` in its name: the test split, else ``val``).
- a users table (one row per user id) is not used.

Index columns written by pandas (``Unnamed: 0``, 0..n-1) are ignored; each items table's
column is sorted into text, categories and numeric (``coldbrew.data.tables.columns``).
Every guess is printed with its reason; edit the file where one is wrong.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from coldbrew.data.tables.columns import (
    content_kind,
    id_values,
    is_email,
    is_index,
    matched_ids,
    numbers,
)
from coldbrew.data.tables.dates import date_order
from coldbrew.data.tables.files import COMPRESSIONS, JSON_LINES, PARQUET
from coldbrew.data.tables.reader import SPEC_FILE, read_table
from coldbrew.errors import DataError

USER = re.compile(r"user|uid|customer|member|visitor|reader|buyer|client|account|person", re.I)
ITEM = re.compile(
    r"item|iid|product|movie|film|sku|asin|book|song|track|article|video|doc|isbn|id$", re.I
)
RATING = re.compile(r"rating|score|stars|weight|count|value|clicks|plays", re.I)
TIME = re.compile(r"time|date|^ts$|created|when|day", re.I)
MAX_MISSING_SHARE = 0.5  # of interactions naming unknown items: more, and the table is wrong
MIN_VECTOR_WIDTH = 8
MIN_MATCH = 0.05  # share of a column's distinct ids another table's id column must hold
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".psv", ".txt", *JSON_LINES, *PARQUET)
COMPRESSED = ("", *COMPRESSIONS)


@dataclass
class Table:
    """One file read as text, its index columns left out; its ids computed once."""

    path: Path
    frame: pd.DataFrame
    _ids: dict[str, pd.Index] = field(default_factory=dict)
    _keys: list[str] | None = None
    _repeating: list[str] | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def ids(self, column: str) -> pd.Index:
        """The column's distinct ids as files' ids are matched."""
        if column not in self._ids:
            self._ids[column] = id_values(self.frame[column])
        return self._ids[column]

    def repeating(self) -> list[str]:
        """Id-like columns whose values repeat: not ratings, times or fractions."""
        if self._repeating is None:
            self._repeating = self._repeating_columns()
        return self._repeating

    def _repeating_columns(self) -> list[str]:
        found = []
        for column in self.frame.columns:
            values = self.frame[column]
            if RATING.search(column) or TIME.search(column) or values.isna().any():
                continue
            counted = numbers(values)
            if counted is not None and (counted != counted.round()).any():
                continue
            if 1 < values.nunique() < len(values) or is_email(column, values):
                found.append(column)
        return found

    def keys(self) -> list[str]:
        """Columns with one row per value (identical repeated rows counted once)."""
        if self._keys is None:
            # a key holds about as many values as rows: skip the rest before dropping repeats
            size = len(self.frame)
            wide = [c for c in self.frame.columns if self.frame[c].nunique() >= size / 2]
            rows = self.frame.drop_duplicates() if wide else self.frame
            self._keys = [c for c in wide if rows[c].notna().all() and rows[c].is_unique]
        return self._keys

    def match(self, values: pd.Index) -> tuple[str | None, float]:
        """The key column holding the most of ``values``, and the share it holds."""
        best: tuple[str | None, float] = (None, 0.0)
        for column in self.keys():
            share = float(values.isin(self.ids(column)).mean()) if len(values) else 0.0
            if share > best[1]:
                best = (column, share)
        return best if best[1] >= MIN_MATCH else (None, best[1])


def table_files(names: list[Path], lines: list[str]) -> list[Path]:
    """The files named, a folder read as its table files; a file named twice once."""
    files: list[Path] = []
    for name in names:
        if name.is_dir():
            found = sorted(p for p in name.iterdir() if p.is_file() and _is_table(p))
            if not found:
                raise DataError(f"{name}: no table files (.csv, .tsv, .parquet ...) in it")
            files += found
        else:
            files.append(name)
    unique = list(dict.fromkeys(path.resolve() for path in files))
    for path in unique:
        if files.count(path) > 1 or [p.resolve() for p in files].count(path) > 1:
            lines.append(f"{path.name}: named more than once; read once")
    return unique


def _is_table(path: Path) -> bool:
    name = path.name.lower()
    if path.name == SPEC_FILE or name.startswith("."):
        return False
    return any(name.endswith(s + c) for s in TABLE_SUFFIXES for c in COMPRESSED)


def guess(files: list[Path], reading: dict | None = None) -> tuple[dict, list[str]]:
    """``(spec, lines)``: the settings guessed for ``files`` and one line per guess;
    ``reading`` (``encoding``, ``separator``, ``quote``) over the sniffer's, for every file."""
    if not files:
        raise DataError("name the files to read, e.g. coldbrew data init ratings.csv items.csv")
    lines: list[str] = []
    named = {path.resolve() for path in files if not path.is_dir()}
    tables = []
    for path in table_files(files, lines):
        try:
            tables.append(_read(path, lines, reading or {}))
        except DataError as error:
            if path in named:
                raise
            lines.append(f"{path.name}: not used (cannot be read: {error})")
    if not tables:
        raise DataError(f"none of {', '.join(map(str, files))} could be read as a table")
    train = _interaction_table(tables)
    others = [table for table in tables if table is not train]
    user, item = _user_item(train, others, lines)
    spec: dict = {"interactions": train.path, "user": user, "item": item}
    lines.insert(0, f"{train.name}: interactions (user {user!r}, item {item!r})")
    _rating_and_time(train, (user, item), spec, lines)
    for table in others:
        _place(table, train, spec, lines)
    return spec, lines


def _read(path: Path, lines: list[str], reading: dict) -> Table:
    frame = read_table(path, [], text=True, notes=lines, **reading)
    kept = []
    for column in frame.columns:
        if is_index(column, frame[column]):
            lines.append(f"{path.name}: {column!r} is a row index (0..n-1 or 1..n): ignored")
        else:
            kept.append(column)
    return Table(path, frame[kept])


def _interaction_table(tables: list[Table]) -> Table:
    """Two repeating id columns, one of them an id of another table; then the most rows."""

    def shape(table: Table) -> tuple[bool, bool, int]:
        repeating = table.repeating()
        if len(repeating) < 2:
            return False, False, len(table.frame)
        keyed = any(
            other.match(table.ids(column))[0]
            for other in tables
            if other is not table and other.keys()
            for column in repeating
        )
        return True, keyed, len(table.frame)

    return max(tables, key=shape)


def _user_item(train: Table, others: list[Table], lines: list[str]) -> tuple[str, str]:
    """The user column (an e-mail, else named like a user), then the item column: the one
    an items table keys, else named like an item."""
    columns = list(train.frame.columns)
    if len(columns) < 2:
        raise DataError(f"{train.path}: {len(columns)} column(s); expected a user and an item")
    plain = [c for c in columns if not (RATING.search(c) or TIME.search(c))]
    repeating = train.repeating() or plain or columns
    user = next((c for c in columns if is_email(c, train.frame[c])), None)
    if user is not None:
        lines.append(f"{train.name}: {user!r} holds e-mail addresses or hashes: the user id")
    user = user or next((c for c in repeating if USER.search(c)), None)
    keyed = {}
    for column in repeating:
        if column == user:
            continue
        shares = [other.match(train.ids(column)) for other in others]
        keyed[column] = max((share for key, share in shares if key), default=0.0)
    matched = sorted((c for c in keyed if keyed[c] > 0), key=keyed.get, reverse=True)
    if user is None and len(matched) > 1:  # both key a table (the items, the users)
        named = [c for c in matched if ITEM.search(c)]
        matched = named or [c for c in matched if c != repeating[0]]  # the first: the user
    rest = [c for c in repeating if c != user]
    item = (matched or [c for c in rest if ITEM.search(c)] or rest or columns)[0]
    if matched:
        lines.append(f"{train.name}: {item!r} is the item: another table lists its ids")
    user = user or next(c for c in repeating + columns if c != item)
    return user, item


def _rating_and_time(train: Table, ids: tuple[str, str], spec: dict, lines: list[str]) -> None:
    for key, pattern in (("rating", RATING), ("timestamp", TIME)):
        for column in train.frame.columns:
            if column in ids or not pattern.search(column):
                continue
            if key == "rating" and numbers(train.frame[column]) is None:
                continue
            spec[key] = column
            lines.append(f"{train.name}: {key} {column!r}")
            break
    if "timestamp" in spec:
        order = date_order(train.frame[spec["timestamp"]])
        if order:
            lines.append(f"{train.name}: {spec['timestamp']!r}: {order}")


def _place(table: Table, train: Table, spec: dict, lines: list[str]) -> None:
    """A file other than the interactions: a cold file, the items, vectors, or not used."""
    user, item = spec["user"], spec["item"]
    if {user, item} <= set(table.frame.columns):
        _cold_file(table, train, spec, lines)
        return
    id_column, _ = table.match(train.ids(item))
    if id_column is None:
        user_key, _ = table.match(train.ids(user))
        why = (
            f"a users table keyed by {user_key!r}"
            if user_key
            else "no column holds the interactions' item ids"
        )
        lines.append(f"{table.name}: not used ({why})")
        return
    numbers_only = table.frame.drop(columns=[id_column])
    is_vectors = numbers_only.shape[1] >= MIN_VECTOR_WIDTH and all(
        numbers(numbers_only[c]) is not None for c in numbers_only.columns
    )
    key = "vectors" if is_vectors else "items"
    if key in spec:
        raise DataError(f"{table.path}: a second {key} file; name one in the files given")
    spec[key] = table.path
    if id_column != item:
        spec["item_id"] = id_column
    lines.append(f"{table.name}: {key} keyed by {id_column!r} (one row per id)")
    if key == "items":
        _note_missing(table, id_column, train, item, spec, lines)
        lines += _content(table, id_column, spec)


def _cold_file(table: Table, train: Table, spec: dict, lines: list[str]) -> None:
    user, item = spec["user"], spec["item"]
    frame = table.frame
    if frame[user].nunique() == len(frame) and frame[item].nunique() == len(frame):
        lines.append(f"{table.name}: not used (each user and item once: not interactions)")
        return
    warm = table.ids(item).isin(train.ids(item))
    if warm.any():
        lines.append(
            f"{table.name}: not used ({int(warm.sum())} of its items have training "
            "interactions: a cold file names only new items)"
        )
        return
    split = "test" if "test" in table.name.lower() else "val"
    if split in spec:
        split = "val" if split == "test" else "test"
    if split in spec:
        lines.append(f"{table.name}: not used (a third cold file)")
        return
    spec[split] = table.path
    lines.append(f"{table.name}: your own cold {split} interactions (new items only)")


def _note_missing(items: Table, id_column: str, train: Table, item: str, spec, lines) -> None:
    """Say how many interactions name items the table lacks. A minority (a catalogue export
    missing some items, as Book-Crossing's) is dropped: ``missing_items: drop`` is written
    and said; a majority is left to refuse at load, since the item table is likely the wrong
    one."""
    raw = pd.unique(train.frame[item].dropna())
    lacking = ~pd.Index(matched_ids(raw), dtype=object).isin(items.ids(id_column))
    if not lacking.any():
        return
    missing = train.frame[item].isin(raw[lacking])
    said = (
        f"{train.name}: {int(missing.sum()):,} interaction(s) ({missing.mean():.0%}) name "
        f"{int(lacking.sum()):,} item(s) {items.name} lacks"
    )
    if missing.mean() <= MAX_MISSING_SHARE:
        spec["missing_items"] = "drop"
        lines.append(f"{said}: missing_items: drop (delete the line to refuse them instead)")
    else:
        lines.append(f"{said}: loading refuses them; is {items.name} the right items table?")


def _content(table: Table, id_column: str, spec: dict) -> list[str]:
    """Sort the items table's other columns into text, categories and numeric."""
    kinds: dict[str, list[str]] = {"text": [], "categories": [], "numeric": []}
    lines = []
    rows = len(table.frame)
    frame = table.frame.drop_duplicates()
    if len(frame) < rows:
        lines.append(f"{table.name}: {rows - len(frame):,} identical repeated row(s): read once")
    for column in frame.columns:
        if column == id_column:
            continue
        kind, why = content_kind(column, frame[column])
        if kind is None:
            lines.append(f"{table.name}: {column!r} is {why}")
            continue
        for each in kind.split("+"):  # "text+categories": both blocks
            kinds[each].append(column)
        lines.append(f"{table.name}: {column!r} is {kind.replace('+', ' and ')} ({why})")
    spec.update({kind: columns for kind, columns in kinds.items() if columns})
    return lines


def write_spec(spec: dict, folder: Path, *, force: bool = False) -> Path:
    """Write ``spec`` as ``folder/coldbrew.yaml`` (file names relative to ``folder``)."""
    import yaml

    target = folder / SPEC_FILE
    if target.exists() and not force:
        raise DataError(f"{target} exists; give --force to replace it")
    relative = {
        key: os.path.relpath(value, folder) if isinstance(value, Path) else value
        for key, value in spec.items()
    }
    header = (
        "# coldbrew.yaml: the files and columns of this dataset, guessed by coldbrew data init.\n"
        "# Check the guesses, then: coldbrew train --data "
        f"{folder} (docs: Data page)\n"
    )
    target.write_text(header + yaml.safe_dump(relative, sort_keys=False, allow_unicode=True))
    return target
