"""Item content from an items table's named columns: text, category, numeric and vector blocks.

- **Text columns** are joined into one text per item, each field labelled by its column's name,
  ``"Title: Heat. Genres: Action, Crime. Plot: A thief."`` (empty fields left out, ``_`` read
  as a space, ``|``-lists written with commas), and that text is encoded once by the sentence
  encoder (``coldbrew.data.features.text_embeddings``, with its cache). With ``text_mode:
  per_column`` each column is encoded alone (``"Plot: A thief."``) and the text block is the
  columns' vectors side by side: a long field then cannot crowd out the short ones, and a
  model weighs each field (BENCHMARKS, "How an item's text is written"). An item whose text
  columns are all empty gets a zero text vector, and a note counts such items. A text column
  may also be a category or numeric column (genres are both a block and words to read).
- **Category columns**: a ``|``-separated list (genres) becomes a multi-hot block, one value a
  one-hot block; one block per column, named by it, each column of the block named by its value.
- **Numeric columns** become one block ``numeric``, each column standardised (mean 0, standard
  deviation 1; an empty cell is the mean, with a note).
- **Vectors**: a table keyed by item id whose other columns are numbers, block ``vectors``;
  an item without a row gets zeros, with a note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from coldbrew.data.features import (
    TEXT_EXTRA_HINT,
    TextEncoding,
    text_embeddings,
    text_encoder_available,
)
from coldbrew.data.titles import title_column
from coldbrew.errors import DataError

MAX_CATEGORIES = 2000  # a category block keeps its most frequent values (a note says so)
RESERVED_BLOCKS = ("text", "numeric", "vectors")


@dataclass
class Content:
    """The blocks an items table offers, computed only when ``select`` asks for them."""

    factories: dict[str, Callable[[], torch.Tensor]] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    texts: list[str] | None = None
    titles: list[str] | None = None  # the title column's plain values (coldbrew.data.titles)
    # each text column's own texts, when they are encoded apart (per_column)
    column_texts: list[list[str]] | None = None

    def select(
        self,
        requested: Sequence[str] | None,
        *,
        text_vectors: bool,
        options: Mapping[str, object],
        notes: list[str],
    ) -> dict[str, torch.Tensor]:
        """The blocks ``requested`` (default: all), in the order asked; ``text`` needs the
        ``[text]`` extra (skipped with a note when not asked for by name)."""
        names = list(dict.fromkeys(requested)) if requested is not None else list(self.factories)
        unknown = [name for name in names if name not in self.factories]
        if unknown:
            raise DataError(
                f"unknown feature block {', '.join(map(repr, unknown))}; this data offers: "
                f"{', '.join(self.factories) or 'none (name content columns in coldbrew.yaml)'}"
            )
        if not text_vectors:
            names = [name for name in names if name != "text"]
        features = {}
        for name in names:
            if name == "text" and not text_encoder_available():
                if requested is not None:
                    raise DataError(TEXT_EXTRA_HINT)
                notes.append(f"text features skipped: {TEXT_EXTRA_HINT}")
                continue
            if name == "text":  # the loader's options say how (TextEncoding.of)
                features[name] = self.text_block(TextEncoding.of(options))
            else:
                features[name] = self.factories[name]()
        return features

    def text_block(self, encoding: TextEncoding) -> torch.Tensor:
        """The joined texts encoded, or each column's texts encoded and put side by side."""
        if self.column_texts is None:
            return encoded(self.texts or [], encoding)
        return torch.hstack([encoded(texts, encoding) for texts in self.column_texts])


def item_content(
    items: pd.DataFrame | None,
    item_id: str,
    item_index: pd.Index,
    *,
    text: Sequence[str],
    categories: Sequence[str],
    numeric: Sequence[str],
    vectors: pd.DataFrame | None,
    separator: str,
    where: Mapping[str, str],
    notes: list[str],
    per_column: bool = False,
) -> Content:
    """What ``items`` (or ``None``) offers, as ``Content``: its rows, and the rows of
    ``vectors``, keyed by the id column ``item_id`` and taken in internal item order
    (``item_index``)."""
    items = in_item_order(items, item_id, item_index)
    content = Content()
    named = [*text, *categories, *numeric]
    if named and items is None:
        raise DataError(f"content columns ({', '.join(named)}) need an items table; name its file")
    blocks = [*categories, *numeric]  # a text column may be one of these too
    repeated = sorted(
        {c for c in blocks if blocks.count(c) > 1} | {c for c in text if list(text).count(c) > 1}
    )
    if repeated:
        raise DataError(
            f"column(s) {', '.join(repeated)} named twice, or as both category and numeric"
        )
    if items is not None:
        check_columns(items, list(dict.fromkeys(named)), where["items"])
    for column in categories:
        if column in RESERVED_BLOCKS:
            raise DataError(
                f"category column {column!r} has a reserved block name ({', '.join(RESERVED_BLOCKS)}); "
                "rename it"
            )
        matrix, values = category_block(items[column], separator, where["items"], column, notes)
        content.factories[column] = lambda matrix=matrix: matrix
        content.columns[column] = values
    if numeric:
        matrix = numeric_block(items, list(numeric), where["items"], notes)
        content.factories["numeric"] = lambda matrix=matrix: matrix
        content.columns["numeric"] = list(numeric)
    if vectors is not None:
        matrix = vector_block(vectors, item_id, item_index, where["vectors"], notes)
        content.factories["vectors"] = lambda matrix=matrix: matrix
    if text:
        texts = joined_texts(items, list(text), separator)
        empty = [position for position, value in enumerate(texts) if not value]
        if empty:
            notes.append(
                f"{len(empty)} item(s) have no text (every one of {', '.join(text)} empty, e.g. "
                f"item {shown(item_index[empty[0]])}): their text vector is zeros"
            )
        content.texts = texts
        column = title_column(list(text))
        content.titles = items[column].fillna("").astype(str).str.strip().tolist()
        if per_column:
            content.column_texts = [joined_texts(items, [c], separator) for c in text]
            for column, texts in zip(text, content.column_texts, strict=True):
                if not any(texts):
                    raise DataError(f"text column {column!r} is empty for every item: leave it out")
        # the block's name; select encodes it as the loader's options say (text_block)
        content.factories["text"] = lambda: content.text_block(TextEncoding())
    return content


def in_item_order(
    items: pd.DataFrame | None, item_id: str, item_index: pd.Index
) -> pd.DataFrame | None:
    """The items table's rows in internal item order."""
    if items is None:
        return None
    ids = items[item_id]
    if pd.api.types.is_integer_dtype(item_index.dtype):
        ids = ids.astype(np.int64)
    positions = pd.Index(ids).get_indexer(item_index)
    return items.iloc[positions].reset_index(drop=True)


def shown(value: object) -> str:
    """An id as a message shows it: ``'sku-1'``, ``42`` (numpy scalars as plain numbers)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def row_name(values: pd.Series, position: int, where: str) -> str:
    """Where row ``position`` (from 0) of ``values`` is, as messages say it: ``line N`` of a
    file (the header is line 1; the row's label counts from 0 in the file's order), ``row N``
    (from 1) of a frame given in Python."""
    label = values.index[position]
    if "." in str(where) and isinstance(label, int | np.integer):
        return f"line {int(label) + 2}"
    return f"row {position + 1}"


def text_label(column: str) -> str:
    """A column's name as a field label: ``"release_year"`` -> ``"Release year"``."""
    label = column.replace("_", " ").strip()
    return label[:1].upper() + label[1:]


def joined_texts(items: pd.DataFrame, columns: list[str], separator: str = "|") -> list[str]:
    """``"Title: Heat. Genres: Action, Crime."`` per row: each non-empty column, labelled.

    ``separator``'s lists read as comma lists (``"Action|Crime"`` -> ``"Action, Crime"``)
    unless it is a space or a comma already."""
    joined = pd.Series("", index=items.index, dtype=object)
    for column in columns:
        value = items[column].fillna("").astype(str).str.strip().str.rstrip(".").str.strip()
        if separator.strip() not in ("", ","):
            value = value.str.replace(separator, ", ", regex=False)
        piece = (f"{text_label(column)}: " + value + ".").where(value != "", "")
        both = (joined != "") & (piece != "")
        joined = (joined + " " + piece).where(both, joined + piece)
    return joined.tolist()


def encoded(texts: list[str], encoding: TextEncoding) -> torch.Tensor:
    """The text block: each distinct non-empty text encoded once, zeros for the empty ones.

    The distinct texts go to the encoder sorted, so its cache entry is the same whatever the
    items' order, and a repeated text (a year, a genre list) costs one encode."""
    distinct = sorted({value for value in texts if value})
    if not distinct:
        raise DataError("no item has any text in its text columns: leave text out, or fill it")
    vectors = text_embeddings(distinct, encoding)
    row_of = {value: row for row, value in enumerate(distinct)}
    present = [position for position, value in enumerate(texts) if value]
    rows = torch.as_tensor([row_of[texts[position]] for position in present], dtype=torch.long)
    block = torch.zeros(len(texts), vectors.shape[1], dtype=vectors.dtype)
    block[torch.as_tensor(present, dtype=torch.long)] = vectors[rows]
    return block


def category_block(
    values: pd.Series, separator: str, where: str, column: str, notes: list[str]
) -> tuple[torch.Tensor, list[str]]:
    """Multi-hot (``separator``-lists) or one-hot (one value) rows, and the values' names."""
    listed = values.fillna("").astype(str).str.split(separator, regex=False).explode()
    listed = listed.str.strip()
    listed = listed[listed != ""]
    counts = listed.value_counts()
    if len(counts) > MAX_CATEGORIES:
        notes.append(
            f"{where}: column {column!r} has {len(counts)} distinct values; the "
            f"{MAX_CATEGORIES} most frequent are kept"
        )
        counts = counts.iloc[:MAX_CATEGORIES]
    vocabulary = sorted(counts.index.tolist())
    codes = pd.Index(vocabulary).get_indexer(listed)
    kept = codes >= 0
    matrix = torch.zeros(len(values), len(vocabulary), dtype=torch.float32)
    rows = torch.as_tensor(listed.index.to_numpy()[kept], dtype=torch.long)
    matrix[rows, torch.as_tensor(codes[kept], dtype=torch.long)] = 1.0
    return matrix, vocabulary


def numeric_block(
    items: pd.DataFrame, columns: list[str], where: str, notes: list[str]
) -> torch.Tensor:
    """Each column standardised; a cell that is not a number is a ``DataError``."""
    out = np.zeros((len(items), len(columns)), dtype=np.float64)
    for position, column in enumerate(columns):
        raw = items[column]
        values = pd.to_numeric(raw, errors="coerce")
        bad = (values.isna() & raw.notna() & (raw.astype(str).str.strip() != "")).to_numpy()
        if bad.any():
            first = int(np.argmax(bad))
            raise DataError(
                f"{where}: numeric column {column!r} holds {raw.iloc[first]!r} (item "
                f"{first + 1} in id order; {int(bad.sum())} such cell(s)); list it as text or "
                "categories instead"
            )
        if values.isna().any():
            notes.append(
                f"{where}: {int(values.isna().sum())} empty {column!r} cell(s) read as the mean"
            )
        mean = values.mean() if values.notna().any() else 0.0
        spread = values.std(ddof=0) if values.notna().sum() > 1 else 0.0
        out[:, position] = ((values.fillna(mean) - mean) / (spread or 1.0)).to_numpy()
    return torch.as_tensor(out, dtype=torch.float32)


def vector_block(
    vectors: pd.DataFrame, id_column: str, item_index: pd.Index, where: str, notes: list[str]
) -> torch.Tensor:
    """The rows of ``vectors`` (id column + number columns) in internal item order."""
    if id_column not in vectors.columns:
        id_column = vectors.columns[0]
    values = vectors.drop(columns=[id_column])
    if values.shape[1] == 0 or not all(pd.api.types.is_numeric_dtype(t) for t in values.dtypes):
        raise DataError(f"{where}: a vector file is the item id column then number columns only")
    ids = vectors[id_column]
    if pd.api.types.is_integer_dtype(item_index.dtype):
        ids = pd.to_numeric(ids, errors="coerce")
    if ids.duplicated().any():
        raise DataError(
            f"{where}: item {shown(ids[ids.duplicated()].iloc[0])} has more than one vector"
        )
    positions = pd.Index(ids).get_indexer(item_index)
    matrix = values.to_numpy(dtype=np.float32)
    if not np.isfinite(matrix).all():
        raise DataError(f"{where}: empty, NaN or infinite values in the vectors")
    out = np.zeros((len(item_index), matrix.shape[1]), dtype=np.float32)
    out[positions >= 0] = matrix[positions[positions >= 0]]
    if (positions < 0).any():
        notes.append(f"{where}: {int((positions < 0).sum())} item(s) have no vector: zeros")
    extra = len(ids) - int((positions >= 0).sum())
    if extra:
        notes.append(f"{where}: {extra} vector(s) of items not in the catalogue ignored")
    return torch.as_tensor(out)


def check_columns(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    """Every column named must be in ``frame``; else a ``DataError`` naming those it has."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{where}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise DataError(
            f"{where}: no column {', '.join(map(repr, missing))} (it has: "
            f"{', '.join(map(str, frame.columns)) or 'none'}); name the right one in coldbrew.yaml"
        )
