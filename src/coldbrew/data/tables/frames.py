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
(``int64``, or an object array of ``str``). Messages name a file's lines (the header is line
1) and a frame's rows (from 1); every row problem of one file comes in one error.
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
from coldbrew.data.tables.content import check_columns, item_content, row_name, shown
from coldbrew.data.tables.core import apply_k_core
from coldbrew.data.tables.dates import timestamps
from coldbrew.data.tables.ids import (
    id_kind,
    item_codes,
    item_index_of,
    sorted_ids,
    source_ids,
    unique_items,
)
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
    k_core: int | None = None,
    date_format: str | None = None,
    features: Sequence[str] | None = None,
    text_vectors: bool = True,
    name: str = "frames",
    sources: Mapping[str, str] | None = None,
    notes: list[str] | None = None,
    **options,
) -> dict:
    """The fields of a ``Dataset`` (``Dataset.from_frames`` makes it) from pandas frames with
    named columns (see the module's docstring). ``items`` has the id column ``item_id`` (default: ``item``) and the content columns named
    by ``text``, ``categories`` and ``numeric``; ``vectors`` is a frame of precomputed item
    vectors keyed by the same id column. ``missing_items="drop"`` drops interactions whose item
    the items table lacks (with a note) instead of refusing them. ``text_mode="per_column"``
    encodes each text column apart, the text block their vectors side by side (``joined``:
    one text). ``k_core``: keep users and items with that many training interactions
    (``tables.core``); ``date_format``: how dates are written (``tables.dates``). ``features``
    picks blocks by name (default: all); ``text_vectors=False`` leaves the text block out.
    ``sources`` names each frame's file for messages. ``options``: the text encoder's.
    """
    _check_settings(name, missing_items, text_mode, (user, item, rating, timestamp))
    notes, where = list(notes or []), _frame_names(sources)
    item_id = item_id or item
    read = _read_interactions(
        {"train": interactions, "val": val, "test": test},
        items,
        (user, item, rating, timestamp, item_id),
        min_rating=min_rating,
        missing_items=missing_items,
        k_core=k_core,
        content_columns=[*text, *categories, *numeric],
        date_format=date_format,
        where=where,
        notes=notes,
    )
    content = item_content(
        read.items,
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
        **read.fields(timestamp, where, notes),
    )


def _check_settings(name, missing_items, text_mode, columns) -> None:
    """The choices known, and each role (user, item, rating, timestamp) its own column."""
    _check_choice("missing_items", missing_items, MISSING_ITEMS)
    _check_choice("text_mode", text_mode, TEXT_MODES)
    roles = dict(zip(("user", "item", "rating", "timestamp"), columns, strict=True))
    check_roles({key: column for key, column in roles.items() if column}, name)


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
    items: pd.DataFrame | None  # the items table's rows kept (each item once)

    def fields(self, timestamp, where: Mapping[str, str], notes) -> dict:
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
    frames,
    items,
    columns,
    *,
    min_rating,
    missing_items,
    k_core,
    content_columns,
    date_format,
    where,
    notes,
) -> _Interactions:
    """Every split's rows checked, rated high enough, with an item the items table has (or
    dropped, with ``missing_items="drop"``), as binary matrices over the same ids."""
    user, item, rating, timestamp, item_id = columns
    frames = {split: frame for split, frame in frames.items() if frame is not None}
    _check_frames(frames, items, columns, where, notes)
    frames = {
        split: _rows_checked(frame, columns, date_format, where[split], notes)
        for split, frame in frames.items()
    }
    frames = {
        split: _kept_ratings(frame, rating, min_rating, where[split], notes)
        for split, frame in frames.items()
    }
    if items is not None:
        items = unique_items(items, [item_id, *content_columns], where["items"], notes)
    if k_core is not None:
        frames, items = apply_k_core(
            frames, items, (user, item, item_id), k_core, where, notes, missing_items == "drop"
        )
    item_index = item_index_of(items, item_id, frames, item, where)
    codes = {
        split: item_codes(frame[item], item_index, missing_items, where[split], notes)
        for split, frame in frames.items()
    }
    frames = {split: frame[codes[split] >= 0] for split, frame in frames.items()}
    codes = {split: code[code >= 0] for split, code in codes.items()}
    user_index, matrices = _matrices(frames, user, codes, len(item_index), where, notes)
    cold_items = _cold_items(matrices, item_index, where, notes)
    return _Interactions(frames, codes, user_index, item_index, matrices, cold_items, items)


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


def _rows_checked(frame, columns, date_format, where, notes) -> pd.DataFrame:
    """``frame`` with every row problem refused at once (empty or mixed ids, ratings that are
    not numbers, bad timestamps: each named by its rows), its timestamps made seconds."""
    user, item, rating, timestamp, _ = columns
    problems: list[DataError] = []
    for column, what in ((user, "user"), (item, "item")):
        _collect(problems, id_kind, frame[column], what, where)
    if rating in frame.columns:
        _collect(problems, _kept_ratings, frame, rating, None, where, [])
    if timestamp in frame.columns:
        seconds = _collect(
            problems, timestamps, frame[timestamp], where, _refuse_bad_rows, notes, date_format
        )
        if seconds is not None:
            frame = frame.assign(**{timestamp: seconds})
    if len(problems) == 1:
        raise problems[0]
    if problems:
        said = [
            str(problem).removeprefix(f"{where}, ").removeprefix(f"{where}: ")
            for problem in problems
        ]
        raise DataError(f"{where}: {len(problems)} problems: {'; '.join(said)}")
    return frame


def _collect(problems: list[DataError], check, *arguments):
    """``check(*arguments)``, its ``DataError`` kept in ``problems`` (then ``None``)."""
    try:
        return check(*arguments)
    except DataError as problem:
        problems.append(problem)
        return None


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
    """Each item's first interaction time (seconds, as ``_rows_checked`` made them; NaN for
    items never seen)."""
    if timestamp is None:
        return None
    seconds = []
    for split, frame in frames.items():
        if timestamp in frame.columns:
            seconds.append(timestamps(frame[timestamp], where[split], _refuse_bad_rows))
        else:
            seconds.append(np.full(len(frame), np.nan))
    first = pd.Series(np.concatenate(seconds)).groupby(np.concatenate(list(codes.values()))).min()
    out = np.full(num_items, np.nan)
    out[first.index.to_numpy()] = first.to_numpy()
    return out


def _refuse_bad_rows(
    bad: np.ndarray, values: pd.Series, where: str, problem: str, column: str | None = None
) -> None:
    """Refuse, in one error, every row where ``bad`` holds: up to five named (a file's line,
    the header being line 1; a frame's row, from 1) with their values, and how many there are
    (in ``column``, where named)."""
    if not bad.any():
        return
    positions = np.flatnonzero(bad)
    place = f" in column {column!r}" if column is not None else ""
    named = [f"{row_name(values, p, where)} ({values.iloc[p]!r})" for p in positions[1:5]]
    also = f"; also {', '.join(named)}" if named else ""
    more = f" and {len(positions) - 5} more" if len(positions) > 5 else ""
    raise DataError(
        f"{where}, {row_name(values, positions[0], where)}: "
        f"{problem.format(repr(values.iloc[positions[0]]))}{also}{more} "
        f"({len(positions)} such row(s){place})"
    )
