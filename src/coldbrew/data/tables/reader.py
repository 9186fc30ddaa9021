"""The general layout on disk: a ``coldbrew.yaml`` naming the files and their columns.

A directory holding ``coldbrew.yaml`` is read by ``load``; the file is flat, every key one of
``coldbrew.data.tables.frames.dataset_fields``'s, file names relative to the directory::

    interactions: ratings.csv     # CSV/TSV, JSON Lines or Parquet, maybe .gz/.zip/.bz2/.xz
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
    encoding: latin-1             # optional, for every file: overrule the sniffer (read_table)
    separator: ";"
    quote: backslash

``coldbrew data init FILES...`` writes one (``coldbrew.data.tables.guess``). The same settings
given as flags (``--layout text=title,plot``: ``coldbrew.data.tables.settings``) go over the
file's key by key, or, where there is no file, name the files themselves. Ids are read as
text and become integers only when every id of the kind is a plain integer (``"007"`` stays
text), so ids come back as they were written; spaces around an id are stripped, and whole
numbers written as decimals (``1430.0``) count as integers where another file writes them so.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from coldbrew.data.dataset import Dataset
from coldbrew.data.tables.files import (
    JSON_LINES,
    MIXED,
    PARQUET,
    check_text,
    choose_encoding,
    mixed_to_utf8,
    open_table,
)
from coldbrew.data.tables.settings import (
    COLUMN_KEYS,
    FILE_KEYS,
    LIST_KEYS,
    OTHER_KEYS,
    READ_KEYS,
    SPEC_FILE,
    check_layout,
    check_roles,
    merge_layout,
)
from coldbrew.data.tables.text_tables import (
    SUFFIX_SEPARATORS,
    Dialect,
    describe,
    read_text_table,
    sample_text,
    sniff,
)
from coldbrew.errors import DataError

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
    notes: list[str] = []
    frames = read_frames(path, spec, notes)
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
        notes=notes,
        **options,
    )


def _split(key: str) -> str:
    return "train" if key == "interactions" else key


def read_frames(
    folder: Path, spec: dict, notes: list[str] | None = None
) -> dict[str, pd.DataFrame]:
    """Each file ``spec`` names, read with its id columns as text (``spec``'s ``encoding``,
    ``separator`` and ``quote`` over the sniffer's, how each was read added to ``notes``),
    then ids made one type: spaces around an id stripped, and integers where every file's ids
    are (``1430.0`` read as ``1430`` where the other files write ``1430``), with a note."""
    notes = notes if notes is not None else []
    user, item = spec.get("user", "user"), spec.get("item", "item")
    item_id = spec.get("item_id", item)
    ids = {"interactions": [user, item], "val": [user, item], "test": [user, item]}
    ids.update({"items": [item_id], "vectors": [item_id]})
    reading = {key: spec[key] for key in READ_KEYS if key in spec}
    frames = {
        key: read_table(folder / spec[key], ids[key], notes=notes, **reading)
        for key in FILE_KEYS
        if key in spec
    }
    item_columns = [(key, item) for key in ("interactions", "val", "test") if key in frames]
    item_columns += [(key, item_id) for key in ("items", "vectors") if key in frames]
    user_columns = [(key, user) for key in ("interactions", "val", "test") if key in frames]
    for what, columns in (("item", item_columns), ("user", user_columns)):
        present = [(key, c) for key, c in columns if c in frames[key].columns]
        for key, column in present:
            frames[key][column] = _stripped(frames[key][column], spec[key], notes)
        _integer_ids(frames, present, what, {key: spec[key] for key, _ in present}, notes)
    return frames


def _stripped(values: pd.Series, name: str, notes: list[str]) -> pd.Series:
    """Text ids with the spaces around them stripped (a note counts the ids changed)."""
    if pd.api.types.is_numeric_dtype(values):
        return values
    text = values.where(values.isna(), values.astype(str))
    stripped = text.str.strip()
    changed = int((stripped != text).sum())
    if changed:
        notes.append(f"{name}: spaces around {changed:,} id(s) in {values.name!r} stripped")
    return stripped.where(stripped != "", None)


def _integer_ids(frames, present, what: str, names: dict, notes: list[str]) -> None:
    """The ``present`` id columns as int64 when every one holds integers, whole numbers
    written as decimals (``1430.0``) counted as integers when another file writes integers."""
    if not present:
        return
    plain = {key: integer_like(frames[key][column]) for key, column in present}
    whole = {key: plain[key] or whole_like(frames[key][column]) for key, column in present}
    if not all(whole.values()) or not any(plain.values()):
        return
    for key, column in present:
        if not plain[key]:
            notes.append(
                f"{names[key]}: {what} ids in {column!r} written as decimals (e.g. "
                f"{frames[key][column].iloc[0]!r}) read as the integers the other files name"
            )
        values = frames[key][column]
        if not plain[key] and not pd.api.types.is_numeric_dtype(values):
            values = pd.to_numeric(values.astype(str))  # "1430.0" -> 1430.0, made whole below
        frames[key][column] = values.astype(np.int64)


def integer_like(values: pd.Series) -> bool:
    """Whether every (non-empty) text id is a plain integer (no sign of leading zeros)."""
    if pd.api.types.is_integer_dtype(values):
        return True
    uniques = pd.Series(pd.unique(values.dropna()))
    if uniques.empty or values.isna().any():
        return False
    return bool(uniques.astype(str).str.fullmatch(PLAIN_INTEGER).all())


def whole_like(values: pd.Series) -> bool:
    """Whether every id is a whole number written as a decimal (``1430.0``)."""
    if values.isna().any():
        return False
    if pd.api.types.is_float_dtype(values):
        return bool((values == np.floor(values)).all())
    uniques = pd.Series(pd.unique(values)).astype(str)
    pattern = PLAIN_INTEGER + r"\.0+"
    return bool(uniques.iloc[:100].str.fullmatch(pattern).all()) and bool(
        uniques.str.fullmatch(pattern).all()
    )  # a sample first: text ids fail at once


def read_table(
    path: Path,
    id_columns: list[str],
    separator: str | None = None,
    text: bool = False,
    *,
    encoding: str | None = None,
    quote: str | None = None,
    notes: list[str] | None = None,
) -> pd.DataFrame:
    """A table file as a frame, ``id_columns`` (every column with ``text``) as text: CSV-like
    text (separator, quotes and encoding sniffed: ``coldbrew.data.tables.text_tables``), JSON
    Lines or Parquet, each maybe compressed (``coldbrew.data.tables.files``). ``separator``,
    ``encoding`` and ``quote`` overrule the sniffer; what was read other than plain UTF-8 with
    the suffix's separator is a line in ``notes``. Anything unreadable is a ``DataError``
    naming the file and what coldbrew saw."""
    table = open_table(path)
    if table.suffix in PARQUET:
        frame = _read_parquet(path, io.BytesIO(table.data), id_columns)
    else:
        check_text(path, table.data, encoding)
        encoding, why = choose_encoding(path, table.data, encoding)
        said = [why] if why else []
        data = table.data
        if encoding == MIXED:
            data, encoding = mixed_to_utf8(data), "utf-8"
        if table.suffix in JSON_LINES:
            frame = _read_json_lines(path, data, encoding, id_columns)
        else:
            dialect = sniff(
                sample_text(data, encoding),
                table.suffix,
                separator,
                quote,
                backslashes=b'\\"' in data,
            )
            said += _dialect_notes(dialect, table.suffix, quote)
            dtype = str if text else {column: str for column in id_columns}
            frame = read_text_table(path, data, encoding, dialect, dtype)
        if said and notes is not None:
            notes.append(f"{path.name}: {', '.join(said)}")
    if frame.empty:
        raise DataError(f"{path}: no rows after the header")
    frame.columns = [str(column).strip() for column in frame.columns]
    return frame


def _dialect_notes(dialect: Dialect, suffix: str, quote: str | None) -> list[str]:
    """What a reader of the file should know: a sniffed separator the suffix does not say,
    quotes escaped with backslashes found in the file."""
    said = []
    if dialect.sniffed and dialect.separator != SUFFIX_SEPARATORS.get(suffix, ","):
        said.append(f"{describe(dialect.separator)}-separated")
    if dialect.quote == "backslash" and quote is None:
        said.append('quotes inside fields escaped as \\"')
    return said


def _read_json_lines(path: Path, data: bytes, encoding: str, id_columns: list[str]) -> pd.DataFrame:
    """One JSON object per line, its keys the columns; values keep their JSON types."""
    import json

    lines = data.decode(encoding)
    try:
        frame = pd.read_json(io.StringIO(lines), lines=True, dtype=False)
    except (ValueError, TypeError):  # TypeError: a line holds a list
        frame = None
    for number, line in enumerate(lines.splitlines() if frame is None else [], start=1):
        try:
            if line.strip() and not isinstance(json.loads(line), dict):
                raise ValueError
        except ValueError:
            raise DataError(
                f"{path}, line {number}: not a JSON object; JSON Lines hold one {{...}} a line"
            ) from None
    if frame is None:
        raise DataError(f"{path}: not readable as JSON Lines (one {{...}} object a line)")
    return _ids_as_text(frame, id_columns)


def _read_parquet(path: Path, source, id_columns: list[str]) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(source)
    except ImportError:
        raise DataError(
            f"{path}: reading Parquet needs pyarrow: pip install 'coldbrew[parquet]'"
        ) from None
    except Exception as error:  # noqa: BLE001 - pyarrow's errors have no common base
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    return _ids_as_text(frame, id_columns)


def _ids_as_text(frame: pd.DataFrame, id_columns: list[str]) -> pd.DataFrame:
    """``id_columns`` as text where they are not integers (missing values stay missing)."""
    for column in id_columns:
        if column in frame.columns and not pd.api.types.is_integer_dtype(frame[column]):
            frame[column] = frame[column].astype(object).where(frame[column].notna())
    return frame
