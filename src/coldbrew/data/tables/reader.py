"""The general layout on disk: a ``coldbrew.yaml`` naming the files and their columns.

A directory holding ``coldbrew.yaml`` is read by ``load``; the file is flat, every key one of
``coldbrew.data.tables.frames.dataset_fields``'s, file names relative to the directory::

    interactions: ratings.csv     # CSV, TSV (.tsv) or Parquet (.parquet)
    user: user_id                 # column names in the interaction files
    item: movie_id
    rating: stars                 # optional: checked numeric; min_rating keeps rows >= it
    timestamp: watched_at         # optional: numbers or dates
    items: movies.csv             # optional: one row per item
    item_id: movie_id             # default: the same name as item
    text: [title, plot]           # joined into one text per item, encoded by the text encoder
    categories: [genres]          # '|'-lists (multi-hot) or one value (one-hot)
    numeric: [year]               # standardised
    vectors: item_vectors.csv     # optional: item id column, then numbers
    val: cold_val.csv             # optional: your own cold items' interactions
    test: cold_test.csv

``coldbrew data init FILES...`` writes one (``coldbrew.data.tables.guess``). The same settings
given as flags (``--layout text=title,plot``: ``coldbrew.data.tables.settings``) go over the
file's key by key, or, where there is no file, name the files themselves. Ids are read as
text and become integers only when every id of the kind is a plain integer (``"007"`` stays
text), so ids come back as they were written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from coldbrew.data.dataset import Dataset
from coldbrew.data.tables.settings import (
    COLUMN_KEYS,
    FILE_KEYS,
    LIST_KEYS,
    OTHER_KEYS,
    SPEC_FILE,
    check_layout,
    check_roles,
    merge_layout,
)
from coldbrew.errors import DataError

SEPARATORS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
PLAIN_INTEGER = r"-?(?:0|[1-9][0-9]{0,17})"  # no leading zeros, fits int64


def detect(path: Path, layout: dict | None = None) -> bool:
    """Whether ``path`` is the general layout: it holds ``coldbrew.yaml``, or ``layout`` (the
    settings given as flags) names its interactions file."""
    return (path / SPEC_FILE).is_file() or "interactions" in (layout or {})


def read_spec(path: Path, layout: dict | None = None) -> dict:
    """``coldbrew.yaml``'s settings at ``path`` (none where it is absent), with ``layout``'s
    over them key by key, checked: known keys, the interactions file named, lists of names."""
    given = check_layout(layout or {}, "--layout")
    spec = merge_layout(check_layout(_load_yaml(path), path) if path.is_file() else {}, given)
    if "interactions" not in spec:
        raise DataError(f"{path}: name the interactions file (interactions: FILE)")
    check_roles(spec, path if path.is_file() else "--layout")
    return spec


def _load_yaml(path: Path) -> dict:
    """The YAML mapping in ``path``, or a one-line ``DataError`` (what is wrong, and where)."""
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError:
        raise DataError(f"{path} is not UTF-8 text") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or "unreadable"
        raise DataError(f"{path} is not valid YAML: {problem}{where}") from None
    if not isinstance(loaded, dict):
        raise DataError(f"{path} must be a mapping of key: value (interactions: FILE, ...)")
    return loaded


def load(
    path: Path,
    *,
    features=None,
    seed: int = 1,
    text_vectors: bool = True,
    layout: dict | None = None,
    **options,
):
    """The dataset ``path/coldbrew.yaml`` describes, ``layout``'s settings over the file's
    (without the file, ``layout`` alone: it names the interactions file); ``seed``: checked,
    draws nothing."""
    from coldbrew.data.dataset import check_seed
    from coldbrew.data.features import TEXT_OPTIONS, check_options

    check_seed(seed)
    check_options(path.name, options, TEXT_OPTIONS)
    spec = read_spec(path / SPEC_FILE, layout)
    frames = read_frames(path, spec)
    settings = {key: spec[key] for key in COLUMN_KEYS + LIST_KEYS + OTHER_KEYS if key in spec}
    return Dataset.from_frames(
        frames.pop("interactions"),
        frames.pop("items", None),
        **frames,
        **settings,
        features=features,
        text_vectors=text_vectors,
        name=path.name,
        sources={_split(key): spec[key] for key in FILE_KEYS if key in spec},
        **options,
    )


def _split(key: str) -> str:
    return "train" if key == "interactions" else key


def read_frames(folder: Path, spec: dict) -> dict[str, pd.DataFrame]:
    """Each file ``spec`` names, read with its id columns as text, then ids made one type."""
    user, item = spec.get("user", "user"), spec.get("item", "item")
    item_id = spec.get("item_id", item)
    ids = {"interactions": [user, item], "val": [user, item], "test": [user, item]}
    ids.update({"items": [item_id], "vectors": [item_id]})
    frames = {key: read_table(folder / spec[key], ids[key]) for key in FILE_KEYS if key in spec}
    item_columns = [(key, item) for key in ("interactions", "val", "test") if key in frames]
    item_columns += [(key, item_id) for key in ("items", "vectors") if key in frames]
    user_columns = [(key, user) for key in ("interactions", "val", "test") if key in frames]
    for columns in (item_columns, user_columns):
        present = [(key, c) for key, c in columns if c in frames[key].columns]
        if present and all(integer_like(frames[key][column]) for key, column in present):
            for key, column in present:
                frames[key][column] = frames[key][column].astype(np.int64)
    return frames


def integer_like(values: pd.Series) -> bool:
    """Whether every (non-empty) text id is a plain integer (no sign of leading zeros)."""
    if pd.api.types.is_integer_dtype(values):
        return True
    uniques = pd.Series(pd.unique(values.dropna()))
    if uniques.empty or values.isna().any():
        return False
    return bool(uniques.astype(str).str.fullmatch(PLAIN_INTEGER).all())


def read_table(
    path: Path, id_columns: list[str], separator: str | None = None, text: bool = False
) -> pd.DataFrame:
    """A CSV, TSV or Parquet file as a frame, ``id_columns`` (every column with ``text``) as
    text; a ``DataError`` naming the file for anything unreadable."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return _read_parquet(path, id_columns)
    separator = separator or SEPARATORS.get(suffix)
    if separator is None:
        raise DataError(f"{path}: unknown file type {suffix!r}; use .csv, .tsv or .parquet")
    try:
        frame = pd.read_csv(
            path,
            sep=separator,
            dtype=str if text else {column: str for column in id_columns},
            encoding="utf-8-sig",
            engine="c",
            skipinitialspace=True,
        )
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: empty file; expected a header line naming the columns") from None
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except (pd.errors.ParserError, ValueError) as error:
        message = (
            str(error).strip().splitlines()[-1].replace("Error tokenizing data. C error: ", "")
        )
        raise DataError(f"{path}: {message}") from None
    if frame.empty:
        raise DataError(f"{path}: no rows after the header")
    frame.columns = [str(column).strip() for column in frame.columns]
    return frame


def _read_parquet(path: Path, id_columns: list[str]) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path)
    except ImportError:
        raise DataError(
            f"{path}: reading Parquet needs pyarrow: pip install 'coldbrew[parquet]'"
        ) from None
    except Exception as error:  # noqa: BLE001 - pyarrow's errors have no common base
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    for column in id_columns:
        if column in frame.columns and not pd.api.types.is_integer_dtype(frame[column]):
            frame[column] = frame[column].astype(object).where(frame[column].notna())
    return frame
