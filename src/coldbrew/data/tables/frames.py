"""Your data as it comes: interactions and an items table with named columns, as pandas frames.

``dataset_fields`` (behind ``Dataset.from_frames``) is the one general reader;
``coldbrew.data.tables.reader`` reads the frames from CSV/TSV, JSON Lines or Parquet files named
in a ``coldbrew.yaml`` and ``coldbrew.data.loaders.recbole`` from RecBole's atomic files, both through it.

- Interactions: one row per (user, item), optional ``rating`` (checked numeric; ``min_rating``
  keeps the rows at or above it: coldbrew learns from implicit feedback, so every kept row is
  one interaction) and optional ``timestamp`` (numbers or dates: each item's first interaction,
  which ``cold_split: time:FRACTION`` reads).
- Items: one id column and content columns (``coldbrew.data.tables.content``).
- ``val`` and ``test``: the user's own cold interactions, on items without training
  interactions (optional: without them the dataset has no validation at all).

Ids of any one type (integers, or text such as SKUs and UUIDs) are mapped once, here
(``coldbrew.data.tables.ids``), with pandas (no Python loop over rows): internal ids follow the
sorted source ids, and ``Dataset.user_ids`` / ``item_ids`` give the source ids back unchanged
(``int64``, or an object array of ``str``). Rows are counted from 1 after the header in
messages (``row 3``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from coldbrew.data.matrices import interactions_to_csr
from coldbrew.data.tables.content import check_columns, item_content, shown
from coldbrew.data.tables.ids import item_codes, item_index_of, sorted_ids, source_ids
from coldbrew.data.tables.settings import check_roles
from coldbrew.errors import DataError

MISSING_ITEMS = ("error", "drop")
TEXT_MODES = ("joined", "per_column")
INTERACTION_SPLITS = ("train", "val", "test")


def dataset_fields(
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
    text_mode: str = "joined",
    features: Sequence[str] | None = None,
    text_vectors: bool = True,
    name: str = "frames",
    sources: Mapping[str, str] | None = None,
    notes: list[str] | None = None,
    **options,
) -> dict:
    """The fields of a ``Dataset`` (``Dataset.from_frames`` makes it) from pandas frames with
    named columns (see the module's docstring).

    ``items`` has the id column ``item_id`` (default: ``item``) and the content columns named
    by ``text``, ``categories`` and ``numeric``; ``vectors`` is a frame of precomputed item
    vectors keyed by the same id column. ``missing_items="drop"`` drops interactions whose item
    the items table lacks (with a note) instead of refusing them. ``text_mode="per_column"``
    encodes each text column apart, the text block their vectors side by side (``joined``:
    one text). ``features`` picks content
    blocks by name (default: all); ``text_vectors=False`` leaves the text block out. ``sources``
    names the file of each frame (``train``, ``val``, ``test``, ``items``, ``vectors``) for
    messages. ``options``: the text encoder's (``text_encoder``, ``progress``,
    ``text_batch_size``).
    """
    _check_choice("missing_items", missing_items, MISSING_ITEMS)
    _check_choice("text_mode", text_mode, TEXT_MODES)
    roles = {"user": user, "item": item, "rating": rating, "timestamp": timestamp}
    check_roles({key: column for key, column in roles.items() if column}, name)
    notes = list(notes or [])
    where = _frame_names(sources)
    item_id = item_id or item
    read = _read_interactions(
        {"train": interactions, "val": val, "test": test},
        items,
        (user, item, rating, timestamp, item_id),
        min_rating=min_rating,
        missing_items=missing_items,
        where=where,
        notes=notes,
    )
    content = item_content(
        items,
        item_id,
        read.item_index,
        text=text,
        categories=categories,
        numeric=numeric,
        vectors=vectors,
        separator=category_separator,
        per_column=text_mode == "per_column",
        where=where,
        notes=notes,
    )
    blocks = content.select(features, text_vectors=text_vectors, options=options, notes=notes)
    per_column = content.column_texts is not None and "text" in blocks
    return dict(
        name=name,
        features=blocks,
        notes=notes,
        item_text=content.texts,
        item_titles=content.titles,
        text_fields=list(text) if per_column else None,  # the text block's columns, in order
        feature_columns=content.columns,
        **read.fields(timestamp, where),
    )


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise DataError(f"{name} must be {' or '.join(allowed)}, not {value!r}")


def _frame_names(sources: Mapping[str, str] | None) -> dict[str, str]:
    """How messages name each frame: ``interactions``, ``val`` ..., or its file where
    ``sources`` names one."""
    where = {split: split for split in ("val", "test", "items", "vectors")}
    where.update({"train": "interactions", **(sources or {})})
    return where


@dataclass
class _Interactions:
    """The interaction frames as read: the rows kept, their internal ids and matrices."""

    frames: dict[str, pd.DataFrame]  # each split's kept rows
    codes: dict[str, np.ndarray]  # their internal item ids
    user_index: pd.Index  # source user ids, sorted: internal id = position
    item_index: pd.Index  # source item ids, likewise
    matrices: dict[str, sp.csr_matrix]  # each split's binary (users, items) interactions
    cold_items: np.ndarray

    def fields(self, timestamp: str | None, where: Mapping[str, str]) -> dict:
        """A ``Dataset``'s fields that come from the interactions (the first-seen times last:
        a bad timestamp is refused after everything else is read)."""
        shape = (len(self.user_index), len(self.item_index))
        every = [self.matrices[split] for split in INTERACTION_SPLITS if split in self.matrices]
        cold_splits = [split for split in ("val", "test") if split in self.matrices]
        return dict(
            num_users=shape[0],
            num_items=shape[1],
            train=self.matrices["train"],
            cold_items=self.cold_items,
            splits={split: {"cold": self.matrices[split]} for split in cold_splits},
            user_ids=source_ids(self.user_index),
            item_ids=source_ids(self.item_index),
            known=interactions_to_csr(*functools.reduce(operator.add, every).nonzero(), shape),
            item_first_seen=_first_seen(self.frames, self.codes, timestamp, shape[1], where),
        )


def _read_interactions(
    frames, items, columns, *, min_rating, missing_items, where, notes
) -> _Interactions:
    """Every split's rows checked, rated high enough, with an item the items table has (or
    dropped, with ``missing_items="drop"``), as binary matrices over the same ids."""
    user, item, rating, timestamp, item_id = columns
    frames = {split: frame for split, frame in frames.items() if frame is not None}
    _check_frames(frames, items, columns, where, notes)
    frames = {
        split: _kept_ratings(frame, rating, min_rating, where[split], notes)
        for split, frame in frames.items()
    }
    item_index = item_index_of(items, item_id, frames, item, where)
    codes = {
        split: item_codes(frame[item], item_index, missing_items, where[split], notes)
        for split, frame in frames.items()
    }
    frames = {split: frame[codes[split] >= 0] for split, frame in frames.items()}
    codes = {split: code[code >= 0] for split, code in codes.items()}
    user_index, matrices = _matrices(frames, user, codes, len(item_index), where, notes)
    cold_items = _cold_items(matrices, item_index, where, notes)
    return _Interactions(frames, codes, user_index, item_index, matrices, cold_items)


def _check_frames(frames, items, columns, where, notes) -> None:
    """The named columns present (a cold file may lack the rating and the time); notes of
    what was read."""
    user, item, rating, timestamp, item_id = columns
    for split, frame in frames.items():
        check_columns(frame, [user, item], where[split])
        notes.append(f"{where[split]}: {len(frame):,} row(s) read")
    check_columns(frames["train"], [c for c in (rating, timestamp) if c], where["train"])
    if items is not None:
        check_columns(items, [item_id], where["items"])
        notes.append(f"{where['items']}: {len(items):,} item(s) read")


def _matrices(frames, user, codes, num_items, where, notes) -> tuple[pd.Index, dict]:
    """The sorted user ids over every interaction frame and each frame's binary CSR."""
    user_index = sorted_ids(
        pd.concat([frame[user] for frame in frames.values()], ignore_index=True), "user", where
    )
    if len(user_index) == 0:
        raise DataError(f"{where['train']}: no interactions")
    shape = (len(user_index), num_items)
    matrices = {}
    for split, frame in frames.items():
        users = user_index.get_indexer(frame[user])
        _note_duplicates(users, codes[split], num_items, where[split], notes)
        matrices[split] = interactions_to_csr(users, codes[split], shape)
    return user_index, matrices


def _kept_ratings(frame, rating, min_rating, where, notes) -> pd.DataFrame:
    """``frame`` with a numeric rating column checked, and rows below ``min_rating`` dropped."""
    if rating is None or rating not in frame.columns:
        if min_rating is not None and rating is None:
            raise DataError(f"{where}: min_rating needs a rating column; name it (rating: ...)")
        return frame
    values = pd.to_numeric(frame[rating], errors="coerce")
    _refuse_bad_rows(
        values.isna().to_numpy(), frame[rating], where, "rating {} is not a number", rating
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
        bad = numbers.isna().to_numpy()
        _refuse_bad_rows(bad, values, where, "timestamp {} is not a number like the others")
    dates = pd.to_datetime(values, errors="coerce", utc=True, format="mixed")
    bad = dates.isna().to_numpy()
    _refuse_bad_rows(bad, values, where, "timestamp {} is neither a number nor a date")
    return (dates - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=np.float64)


def _refuse_bad_rows(
    bad: np.ndarray, values: pd.Series, where: str, problem: str, column: str | None = None
) -> None:
    """Refuse, in one line, the rows where ``bad`` holds: the first (counted from 1), its value
    in ``problem``'s ``{}`` and how many there are (in ``column``, where named)."""
    if not bad.any():
        return
    first = int(np.argmax(bad))
    place = f" in column {column!r}" if column is not None else ""
    raise DataError(
        f"{where}, row {first + 1}: {problem.format(repr(values.iloc[first]))} "
        f"({int(bad.sum())} such row(s){place})"
    )
