"""Ids of any one type, mapped once at the edge (``coldbrew.data.tables.frames``): integers, or text
such as SKUs and UUIDs; empty, mixed or fractional ids are refused naming the row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from coldbrew.data.tables.content import row_name, shown
from coldbrew.errors import DataError


def id_kind(values: pd.Series, what: str, where: str) -> str:
    """``"int"`` or ``"str"``: the one type of the ids ``values``; empty, mixed or fractional
    ids are a ``DataError`` naming the row."""
    empty = values.isna().to_numpy()
    if empty.any():
        named = ", ".join(row_name(values, int(p), where) for p in np.flatnonzero(empty)[:5])
        raise DataError(
            f"{where}, {named}: empty {what} id ({int(empty.sum())} row(s) without one)"
        )
    if pd.api.types.is_bool_dtype(values):
        raise DataError(f"{where}: {what} ids are true/false values, not ids")
    if pd.api.types.is_integer_dtype(values):
        return "int"
    if pd.api.types.is_float_dtype(values):
        fractional = (values != np.floor(values)).to_numpy()
        if fractional.any():
            raise DataError(
                f"{where}, row {int(np.argmax(fractional)) + 1}: {what} id "
                f"{shown(values.iloc[int(np.argmax(fractional))])} is not a whole number"
            )
        return "int"
    kind = pd.api.types.infer_dtype(values, skipna=False)
    if kind == "string":
        return "str"
    if kind == "integer":
        return "int"
    raise DataError(
        f"{where}: {what} ids of mixed types ({kind}, e.g. "
        f"{', '.join(repr(v) for v in values.drop_duplicates().head(3))}); give them one type "
        "(all text or all integers)"
    )


def one_kind(series: Sequence[tuple[pd.Series, str]], what: str) -> pd.Series:
    """The id columns ``series`` (with where each comes from) joined, of one type."""
    kinds = {where: id_kind(values, what, where) for values, where in series}
    if len(set(kinds.values())) > 1:
        described = ", ".join(
            f"{where}: {'integers' if k == 'int' else 'text'}" for where, k in kinds.items()
        )
        raise DataError(
            f"{what} ids of mixed types ({described}); give them one type in every file"
        )
    joined = pd.concat([values for values, _ in series], ignore_index=True)
    return joined.astype(np.int64) if set(kinds.values()) == {"int"} else joined


def sorted_ids(values: pd.Series, what: str, where: Mapping[str, str]) -> pd.Index:
    uniques = pd.unique(one_kind([(values, where["train"])], what))
    return pd.Index(np.sort(uniques))


def unique_items(items: pd.DataFrame, columns, where: str, notes: list) -> pd.DataFrame:
    """The items table with rows repeated in every column read (``columns``, the id first)
    read once, a note counting them; an id on rows that differ there is a ``DataError``
    naming the id and its rows."""
    item_id = columns[0]
    used = [column for column in dict.fromkeys(columns) if column in items.columns]
    repeated = items.duplicated(subset=used).to_numpy()
    if repeated.any():
        notes.append(f"{where}: {int(repeated.sum())} identical repeated row(s) read once")
        items = items[~repeated]
    differing = items[item_id].duplicated(keep=False).to_numpy()
    if differing.any():
        ids = items[item_id]
        first = ids.iloc[int(np.argmax(differing))]
        rows = np.flatnonzero((ids == first).to_numpy())
        named = ", ".join(row_name(ids, int(p), where) for p in rows[:5])
        count = int(ids[differing].nunique())
        raise DataError(
            f"{where}: item id {shown(first)} is on {len(rows)} rows that differ ({named}; "
            f"{count} id(s) so); give each item one row"
        )
    return items


def item_index_of(items, item_id, frames, item, where) -> pd.Index:
    """The catalogue's sorted item ids: the items table's (each once), else every item seen."""
    interaction_ids = [(frame[item], where[split]) for split, frame in frames.items()]
    if items is None:
        return pd.Index(np.sort(pd.unique(one_kind(interaction_ids, "item"))))
    ids = one_kind([(items[item_id], where["items"]), *interaction_ids], "item")[: len(items)]
    repeated = ids.duplicated(keep=False).to_numpy()
    if repeated.any():
        first = int(np.argmax(repeated))
        raise DataError(
            f"{where['items']}, row {first + 1}: item id {shown(ids.iloc[first])} listed more than "
            f"once ({int(ids[repeated].nunique())} id(s) repeated); give each item one row"
        )
    return pd.Index(np.sort(ids.to_numpy()))


def item_codes(values, item_index, missing_items, where, notes) -> np.ndarray:
    """Internal item ids of ``values``; -1 marks rows dropped (items the catalogue lacks)."""
    if pd.api.types.is_integer_dtype(item_index.dtype) and not pd.api.types.is_integer_dtype(
        values
    ):
        values = values.astype(np.int64)  # checked of one kind with the items table's
    codes = item_index.get_indexer(values)
    unknown = codes < 0
    if unknown.any():
        first = int(np.argmax(unknown))
        count, distinct = int(unknown.sum()), int(pd.unique(values[unknown]).size)
        said = (
            f"{where}: {count:,} interaction(s) name {distinct:,} item id(s) the items table lacks "
            f"(e.g. {shown(values.iloc[first])}, {row_name(values, first, where)})"
        )
        if missing_items == "error":
            raise DataError(f"{said}; add them to the items table or set missing_items: drop")
        notes.append(f"{said}: dropped (missing_items: drop)")
    return np.asarray(codes, dtype=np.int64)


def source_ids(index: pd.Index) -> np.ndarray:
    values = index.to_numpy()
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    return values.astype(object)
