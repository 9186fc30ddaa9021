"""``coldbrew data init FILES...``: guess a ``coldbrew.yaml`` from the files themselves.

Which file is which: the interaction file has a user-like column (``user``, ``uid``,
``customer`` ...; else it is the longest file); a file whose same-named item column (else a
column with each value once) holds the interactions' items is the items table; a file with the
interactions' columns is a cold file (``test`` in its name: the test split, else ``val``); a
file of an id column and at least 8 number columns is a vector table.

Which column is what, in the items table: numbers are ``numeric``; text with ``|``-lists is
``categories``; other text is ``text`` when it is long (40 characters on average), nearly
unique (90 % distinct: titles, names) or mostly distinct words (over half distinct, most values
with a space: directors), else ``categories``. Every guess is printed; edit the file where
one is wrong.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from coldbrew.data.tables.reader import SPEC_FILE, read_table
from coldbrew.errors import DataError

USER = re.compile(r"user|uid|customer|member|visitor|reader|buyer|client|account|person", re.I)
ITEM = re.compile(
    r"item|iid|product|movie|film|sku|asin|book|song|track|article|video|doc|isbn|id$", re.I
)
RATING = re.compile(r"rating|score|stars|weight|count|value|clicks|plays", re.I)
TIME = re.compile(r"time|date|^ts$|created|when|day", re.I)
LONG_TEXT = 40  # characters on average: free text, not a category
MIN_VECTOR_WIDTH = 8


def guess(files: list[Path]) -> tuple[dict, list[str]]:
    """``(spec, lines)``: the settings guessed for ``files`` and one line per guess."""
    if not files:
        raise DataError("name the files to read, e.g. coldbrew data init ratings.csv items.csv")
    lines: list[str] = []  # how each file was read (its encoding, separator), then guesses
    frames = {path: read_table(path, [], notes=lines) for path in files}
    interactions = _interaction_file(frames)
    frame = frames.pop(interactions)
    user, item = _user_item(frame)
    spec: dict = {"interactions": interactions, "user": user, "item": item}
    lines.append(f"{interactions.name}: interactions (user {user!r}, item {item!r})")
    for key, pattern in (("rating", RATING), ("timestamp", TIME)):
        column = _first(frame, pattern, exclude=(user, item), numeric=key == "rating")
        if column:
            spec[key] = column
            lines.append(f"{interactions.name}: {key} {column!r}")
    for path, other in list(frames.items()):
        if set(other.columns) >= {user, item}:
            split = "test" if "test" in path.name.lower() else "val"
            spec[split] = path
            lines.append(f"{path.name}: your own cold {split} interactions")
            frames.pop(path)
    for path, other in frames.items():
        kind = _items_or_vectors(other, frame[item])
        if kind is None:
            lines.append(f"{path.name}: not used (no column holds the interactions' item ids)")
            continue
        key, id_column = kind
        if key in spec:
            raise DataError(f"{path}: a second {key} file; name one in the files given")
        spec[key] = path
        if id_column != item:
            spec["item_id"] = id_column
        lines.append(f"{path.name}: {key} keyed by {id_column!r}")
        if key == "items":
            lines += _content(other, id_column, spec, path.name)
    return spec, lines


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


def _interaction_file(frames: dict[Path, pd.DataFrame]) -> Path:
    with_users = [p for p, f in frames.items() if any(USER.search(str(c)) for c in f.columns)]
    pool = with_users or list(frames)
    return max(pool, key=lambda path: len(frames[path]))


def _user_item(frame: pd.DataFrame) -> tuple[str, str]:
    columns = [str(c) for c in frame.columns]
    if len(columns) < 2:
        raise DataError(f"the interaction file has {len(columns)} column(s); expected user, item")
    user = next((c for c in columns if USER.search(c)), columns[0])
    item = next((c for c in columns if c != user and ITEM.search(c)), None)
    return user, item or next(c for c in columns if c != user)


def _first(frame: pd.DataFrame, pattern, exclude, numeric: bool) -> str | None:
    for column in map(str, frame.columns):
        if column in exclude or not pattern.search(column):
            continue
        if not numeric or pd.api.types.is_numeric_dtype(frame[column]):
            return column
    return None


def _items_or_vectors(frame: pd.DataFrame, items: pd.Series) -> tuple[str, str] | None:
    """``("items"|"vectors", id column)`` when a column of ``frame`` holds the item ids."""
    wanted = set(items.astype(str).unique()[:1000])
    for column in map(str, frame.columns):
        values = frame[column].astype(str)
        if values.is_unique and wanted & set(values):
            numbers = frame.drop(columns=[column])
            is_vectors = numbers.shape[1] >= MIN_VECTOR_WIDTH and all(
                pd.api.types.is_float_dtype(dtype) for dtype in numbers.dtypes
            )
            return ("vectors" if is_vectors else "items"), column
    return None


def _content(frame: pd.DataFrame, id_column: str, spec: dict, name: str) -> list[str]:
    """Sort the items table's other columns into text, categories and numeric."""
    kinds: dict[str, list[str]] = {"text": [], "categories": [], "numeric": []}
    lines = []
    for column in map(str, frame.columns):
        if column == id_column:
            continue
        values = frame[column].dropna()
        if values.empty:
            lines.append(f"{name}: {column!r} is empty: not used")
            continue
        if pd.api.types.is_numeric_dtype(values):
            kind, why = "numeric", "numbers"
        else:
            text = values.astype(str)
            listed = text.str.contains("|", regex=False).mean()
            distinct = text.nunique() / len(text)
            length = text.str.len().mean()
            spaced = text.str.contains(" ", regex=False).mean()
            if listed > 0.2:
                kind, why = "categories", f"'|'-lists in {listed:.0%} of rows"
            elif length >= LONG_TEXT or distinct >= 0.9 or (distinct > 0.5 and spaced > 0.5):
                kind, why = "text", f"{distinct:.0%} distinct, {length:.0f} characters on average"
            else:
                kind, why = "categories", f"{text.nunique()} distinct values"
        kinds[kind].append(column)
        lines.append(f"{name}: {column!r} is {kind} ({why})")
    spec.update({kind: columns for kind, columns in kinds.items() if columns})
    return lines
