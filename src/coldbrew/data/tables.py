"""Your data as it comes: interactions and an items table with named columns, as pandas frames.

``from_frames`` is the one general reader; ``coldbrew.data.table_files`` reads the frames from
CSV, TSV or Parquet files named in a ``coldbrew.yaml`` and ``coldbrew.data.recbole`` from
RecBole's atomic files, both through it.

- Interactions: one row per (user, item), optional ``rating`` (checked numeric; ``min_rating``
  keeps the rows at or above it: coldbrew learns from implicit feedback, so every kept row is
  one interaction) and optional ``timestamp`` (numbers or dates: each item's first interaction,
  which ``cold_split: time:FRACTION`` reads).
- Items: one id column and content columns (``coldbrew.data.table_content``).
- ``val`` and ``test``: the user's own cold interactions, on items without training
  interactions (optional: without them the dataset has no validation at all).

Ids of any one type (integers, or text such as SKUs and UUIDs) are mapped once, here, with
pandas (no Python loop over rows): internal ids follow the sorted source ids, and
``Dataset.user_ids`` / ``item_ids`` give the source ids back unchanged (``int64``, or an object
array of ``str``). Rows are counted from 1 after the header in messages (``row 3``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from coldbrew.data.dataset import Dataset, interactions_to_csr
from coldbrew.data.table_content import item_content, shown
from coldbrew.errors import DataError

MISSING_ITEMS = ("error", "drop")
INTERACTION_SPLITS = ("train", "val", "test")


def from_frames(
    interactions: pd.DataFrame,
    items: pd.DataFrame | None = None,
    *,
    user: str = "user",
    item: str = "item",
    rating: str | None = None,
    timestamp: str | None = None,
    item_id: str | None = None,
    text: Sequence[str] = (),
    categories: Sequence[str] = (),
    numeric: Sequence[str] = (),
    vectors: pd.DataFrame | None = None,
    val: pd.DataFrame | None = None,
    test: pd.DataFrame | None = None,
    min_rating: float | None = None,
    missing_items: str = "error",
    category_separator: str = "|",
    features: Sequence[str] | None = None,
    text_vectors: bool = True,
    name: str = "frames",
    sources: Mapping[str, str] | None = None,
    notes: list[str] | None = None,
    **options,
) -> Dataset:
    """A ``Dataset`` from pandas frames with named columns (see the module's docstring).

    ``items`` has the id column ``item_id`` (default: ``item``) and the content columns named
    by ``text``, ``categories`` and ``numeric``; ``vectors`` is a frame of precomputed item
    vectors keyed by the same id column. ``missing_items="drop"`` drops interactions whose item
    the items table lacks (with a note) instead of refusing them. ``features`` picks content
    blocks by name (default: all); ``text_vectors=False`` leaves the text block out. ``sources``
    names the file of each frame (``train``, ``val``, ``test``, ``items``, ``vectors``) for
    messages. ``options``: the text encoder's (``text_encoder``, ``progress``,
    ``text_batch_size``).

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"user": ["ann", "bob", "bob"], "item": ["sku-1", "sku-1", "sku-2"]})
    >>> data = from_frames(frame)
    >>> data.describe(), list(data.item_ids)
    ('2 users, 2 items, 3 interactions', ['sku-1', 'sku-2'])
    """
    if missing_items not in MISSING_ITEMS:
        raise DataError(f"missing_items must be error or drop, not {missing_items!r}")
    notes = list(notes or [])
    where = {
        "train": "interactions",
        "val": "val",
        "test": "test",
        "items": "items",
        "vectors": "vectors",
    }
    where.update(sources or {})
    frames = {"train": interactions, "val": val, "test": test}
    frames = {split: frame for split, frame in frames.items() if frame is not None}
    for split, frame in frames.items():  # a cold file may lack the rating and the time
        check_columns(frame, [user, item], where[split])
    check_columns(interactions, [c for c in (rating, timestamp) if c], where["train"])
    item_id = item_id or item
    if items is not None:
        check_columns(items, [item_id], where["items"])
    for split, frame in frames.items():
        notes.append(f"{where[split]}: {len(frame):,} row(s) read")
    if items is not None:
        notes.append(f"{where['items']}: {len(items):,} item(s) read")
    frames = {
        split: _kept_ratings(frame, rating, min_rating, where[split], notes)
        for split, frame in frames.items()
    }
    item_index = _item_index(items, item_id, frames, item, where)
    codes = {
        split: _item_codes(frame[item], item_index, missing_items, where[split], notes)
        for split, frame in frames.items()
    }
    frames = {split: frame[codes[split] >= 0] for split, frame in frames.items()}
    codes = {split: code[code >= 0] for split, code in codes.items()}
    user_index = _sorted_ids(
        pd.concat([frame[user] for frame in frames.values()], ignore_index=True), "user", where
    )
    if len(user_index) == 0:
        raise DataError(f"{where['train']}: no interactions")
    shape = (len(user_index), len(item_index))
    matrices = {}
    for split, frame in frames.items():
        users = user_index.get_indexer(frame[user])
        _note_duplicates(users, codes[split], shape[1], where[split], notes)
        matrices[split] = interactions_to_csr(users, codes[split], shape)
    cold_items = _cold_items(matrices, item_index, where, notes)
    content = item_content(
        _aligned(items, item_id, item_index),
        item_index,
        text=text,
        categories=categories,
        numeric=numeric,
        vectors=vectors,
        vector_id=item_id,
        separator=category_separator,
        where=where,
        notes=notes,
    )
    known = matrices["train"]
    for split in ("val", "test"):
        if split in matrices:
            known = known + matrices[split]
    known = interactions_to_csr(*known.nonzero(), shape)
    return Dataset(
        name=name,
        num_users=shape[0],
        num_items=shape[1],
        train=matrices["train"],
        cold_items=cold_items,
        splits={split: {"cold": matrices[split]} for split in ("val", "test") if split in matrices},
        features=content.select(features, text_vectors=text_vectors, options=options, notes=notes),
        user_ids=_source_ids(user_index),
        item_ids=_source_ids(item_index),
        known=known,
        notes=notes,
        item_text=content.texts,
        feature_columns=content.columns,
        item_first_seen=_first_seen(frames, codes, timestamp, len(item_index), where),
    )


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


def id_kind(values: pd.Series, what: str, where: str) -> str:
    """``"int"`` or ``"str"``: the one type of the ids ``values``; empty, mixed or fractional
    ids are a ``DataError`` naming the row."""
    empty = values.isna().to_numpy()
    if empty.any():
        raise DataError(
            f"{where}, row {int(np.argmax(empty)) + 1}: empty {what} id "
            f"({int(empty.sum())} row(s) without one)"
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


def _one_kind(series: Sequence[tuple[pd.Series, str]], what: str) -> pd.Series:
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


def _sorted_ids(values: pd.Series, what: str, where: Mapping[str, str]) -> pd.Index:
    uniques = pd.unique(_one_kind([(values, where["train"])], what))
    return pd.Index(np.sort(uniques))


def _item_index(items, item_id, frames, item, where) -> pd.Index:
    """The catalogue's sorted item ids: the items table's (each once), else every item seen."""
    interaction_ids = [(frame[item], where[split]) for split, frame in frames.items()]
    if items is None:
        return pd.Index(np.sort(pd.unique(_one_kind(interaction_ids, "item"))))
    ids = _one_kind([(items[item_id], where["items"]), *interaction_ids], "item")[: len(items)]
    repeated = ids.duplicated(keep=False).to_numpy()
    if repeated.any():
        first = int(np.argmax(repeated))
        raise DataError(
            f"{where['items']}, row {first + 1}: item id {shown(ids.iloc[first])} listed more than "
            f"once ({int(ids[repeated].nunique())} id(s) repeated); give each item one row"
        )
    return pd.Index(np.sort(ids.to_numpy()))


def _item_codes(values, item_index, missing_items, where, notes) -> np.ndarray:
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
            f"{where}: {count} interaction(s) name {distinct} item id(s) the items table lacks "
            f"(e.g. {shown(values.iloc[first])}, row {first + 1})"
        )
        if missing_items == "error":
            raise DataError(f"{said}; add them to the items table or set missing_items: drop")
        notes.append(f"{said}: dropped (missing_items: drop)")
    return np.asarray(codes, dtype=np.int64)


def _kept_ratings(frame, rating, min_rating, where, notes) -> pd.DataFrame:
    """``frame`` with a numeric rating column checked, and rows below ``min_rating`` dropped."""
    if rating is None or rating not in frame.columns:
        if min_rating is not None and rating is None:
            raise DataError(f"{where}: min_rating needs a rating column; name it (rating: ...)")
        return frame
    values = pd.to_numeric(frame[rating], errors="coerce")
    bad = values.isna().to_numpy()
    if bad.any():
        first = int(np.argmax(bad))
        raise DataError(
            f"{where}, row {first + 1}: rating {frame[rating].iloc[first]!r} is not a number "
            f"({int(bad.sum())} such row(s) in column {rating!r})"
        )
    if min_rating is None:
        return frame
    kept = (values >= min_rating).to_numpy()
    if not kept.all():
        notes.append(f"{where}: {int((~kept).sum())} row(s) rated below {min_rating} dropped")
    return frame[kept]


def _note_duplicates(users, items, num_items, where, notes) -> None:
    pairs = users.astype(np.int64) * num_items + items
    repeated = len(pairs) - len(np.unique(pairs))
    if repeated:
        notes.append(f"{where}: {repeated} repeated (user, item) row(s) counted once")


def _cold_items(matrices, item_index, where, notes) -> np.ndarray:
    """Items without a training interaction; a cold file may name no warm item."""
    warm = np.zeros(len(item_index), dtype=bool)
    warm[matrices["train"].indices] = True
    for split in ("val", "test"):
        if split not in matrices:
            continue
        both = np.unique(matrices[split].indices[warm[matrices[split].indices]])
        if len(both):
            raise DataError(
                f"{where[split]}: {len(both)} item(s) also have training interactions (e.g. "
                f"{shown(item_index[both[0]])}); a cold file may only name items the training file lacks"
            )
    held = np.zeros(len(item_index), dtype=bool)
    for split in ("val", "test"):
        if split in matrices:
            held[matrices[split].indices] = True
    unseen = int((~warm & ~held).sum())
    if unseen:
        notes.append(
            f"{unseen} item(s) have no interactions at all: they are cold, recommended from "
            "their content alone"
        )
    return np.flatnonzero(~warm)


def _aligned(items, item_id, item_index) -> pd.DataFrame | None:
    """The items table's rows in internal item order."""
    if items is None:
        return None
    ids = items[item_id]
    if pd.api.types.is_integer_dtype(item_index.dtype):
        ids = ids.astype(np.int64)
    positions = pd.Index(ids).get_indexer(item_index)
    return items.iloc[positions].reset_index(drop=True)


def _first_seen(frames, codes, timestamp, num_items, where) -> np.ndarray | None:
    """Each item's first interaction time (seconds; NaN for items never seen)."""
    if timestamp is None:
        return None
    seconds = []
    for split, frame in frames.items():
        if timestamp in frame.columns:
            seconds.append(timestamps(frame[timestamp], where[split]))
        else:
            seconds.append(np.full(len(frame), np.nan))
    first = pd.Series(np.concatenate(seconds)).groupby(np.concatenate(list(codes.values()))).min()
    out = np.full(num_items, np.nan)
    out[first.index.to_numpy()] = first.to_numpy()
    return out


def timestamps(values: pd.Series, where: str) -> np.ndarray:
    """Seconds as float64 from numbers (as they are) or dates (since the epoch)."""
    numbers = pd.to_numeric(values, errors="coerce")
    if not numbers.isna().any():
        return numbers.to_numpy(dtype=np.float64)
    if numbers.notna().mean() > 0.5:  # mostly numbers: name the first other
        first = int(np.argmax(numbers.isna().to_numpy()))
        raise DataError(
            f"{where}, row {first + 1}: timestamp {values.iloc[first]!r} is not a number like "
            f"the others ({int(numbers.isna().sum())} such row(s))"
        )
    dates = pd.to_datetime(values, errors="coerce", utc=True, format="mixed")
    bad = dates.isna().to_numpy()
    if bad.any():
        first = int(np.argmax(bad))
        raise DataError(
            f"{where}, row {first + 1}: timestamp {values.iloc[first]!r} is neither a number "
            f"nor a date ({int(bad.sum())} such row(s))"
        )
    return (dates - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=np.float64)


def _source_ids(index: pd.Index) -> np.ndarray:
    values = index.to_numpy()
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    return values.astype(object)
