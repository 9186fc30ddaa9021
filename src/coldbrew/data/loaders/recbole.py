"""RecBole's atomic files read as they are: ``NAME.inter`` and ``NAME.item``, a preset of the
general reader (``coldbrew.data.tables.frames``).

Both are tab-separated with typed headers (``user_id:token``, ``rating:float``,
``title:token_seq``). In ``NAME.inter`` the user is ``user_id`` (else the first ``token``
field), the item ``item_id`` (else the second), ``rating`` and ``timestamp`` are used where
present. In ``NAME.item`` the ``item_id`` field keys the rows and each other field becomes:

- ``float``, or a ``token`` whose every value is a number (``release_year``): numeric;
- ``token_seq`` or ``token`` named like free text (title, name, description, plot, review,
  summary, abstract, overview): text;
- other ``token_seq`` (space-separated) and ``token`` fields: categories (multi-hot, one-hot);
- ``float_seq`` (space-separated numbers): a precomputed vector.

Interactions naming an item ``NAME.item`` lacks are dropped, with a note; ``NAME.user`` is not
read (no model here reads user features). What was guessed is a note, shown by ``coldbrew data
info``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from coldbrew.data.dataset import Dataset
from coldbrew.data.tables.reader import integer_like, read_table
from coldbrew.errors import DataError

TYPES = ("token", "token_seq", "float", "float_seq")
FREE_TEXT = re.compile(r"title|name|desc|plot|review|summary|abstract|overview|text|content", re.I)


def detect(path: Path) -> bool:
    return any(path.glob("*.inter"))


def load(path: Path, *, features=None, seed: int = 1, text_vectors: bool = True, **options):
    """The RecBole dataset in ``path`` (``seed``: checked, draws nothing)."""
    from coldbrew.data.dataset import check_seed
    from coldbrew.data.features import TEXT_OPTIONS, check_options

    check_seed(seed)
    check_options(path.name, options, TEXT_OPTIONS)
    names = sorted(file.stem for file in path.glob("*.inter"))
    if len(names) != 1:
        raise DataError(
            f"{path}: {len(names)} .inter files ({', '.join(names)}); keep one NAME.inter"
        )
    name = names[0]
    notes: list[str] = []
    inter, inter_types = read_atomic(path / f"{name}.inter")
    tokens = [c for c, kind in inter_types.items() if kind == "token"]
    user = "user_id" if "user_id" in inter_types else _nth(tokens, 0, path / f"{name}.inter")
    item = "item_id" if "item_id" in inter_types else _nth(tokens, 1, path / f"{name}.inter")
    settings: dict = {"user": user, "item": item}
    for field in ("rating", "timestamp"):
        if inter_types.get(field) == "float":
            settings[field] = field
    items = vectors = None
    if (path / f"{name}.item").is_file():
        items, item_types = read_atomic(path / f"{name}.item")
        if item not in item_types:
            raise DataError(f"{path / f'{name}.item'}: no {item!r} field to key the items by")
        vectors = _content_settings(items, item_types, item, settings, notes)
    if (path / f"{name}.user").is_file():
        notes.append(f"{name}.user not read: no model here reads user features")
    _one_id_type(inter, items, vectors, user, item)
    notes.append(
        f"RecBole atomic files {name}: "
        + "; ".join(f"{key} {value}" for key, value in settings.items())
    )
    return Dataset.from_frames(
        inter,
        items,
        **settings,
        vectors=vectors,
        category_separator=" ",
        missing_items="drop",
        features=features,
        text_vectors=text_vectors,
        name=path.name,
        sources={"train": f"{name}.inter", "items": f"{name}.item", "vectors": f"{name}.item"},
        notes=notes,
        **options,
    )


def read_atomic(path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """An atomic file, its header's ``name:type`` fields renamed to their names, every value
    read as text, and ``{name: type}``."""
    frame = read_table(path, [], separator="\t", text=True)
    types = {}
    for column in frame.columns:
        field, colon, kind = column.rpartition(":")
        if not colon or kind not in TYPES:
            raise DataError(
                f"{path}, line 1: field {column!r} is not NAME:TYPE ({', '.join(TYPES)})"
            )
        types[field] = kind
    frame.columns = list(types)
    return frame, types


def _nth(tokens: list[str], position: int, path: Path) -> str:
    if len(tokens) <= position:
        raise DataError(f"{path}, line 1: expected user and item fields of type token")
    return tokens[position]


def _content_settings(items, types, item, settings, notes) -> pd.DataFrame | None:
    """Sort the item fields into the reader's settings; the ``float_seq`` ones as a vector frame."""
    kinds: dict[str, list[str]] = {"text": [], "categories": [], "numeric": []}
    vector_fields = []
    for field, kind in types.items():
        if field == item:
            continue
        values = items[field].dropna()
        if kind == "float_seq":
            vector_fields.append(field)
        elif kind == "float" or (kind == "token" and _all_numbers(values)):
            kinds["numeric"].append(field)
        elif FREE_TEXT.search(field):
            kinds["text"].append(field)
        else:
            kinds["categories"].append(field)
    settings.update({kind: fields for kind, fields in kinds.items() if fields})
    if not vector_fields:
        return None
    parts = [items[[item]]]
    for field in vector_fields:
        numbers = items[field].fillna("").str.split(" ", expand=True)
        try:
            numbers = numbers.replace("", np.nan).astype(float).fillna(0.0)
        except ValueError:
            raise DataError(
                f"{field}: a float_seq field holds something other than numbers"
            ) from None
        numbers.columns = [f"{field}_{i}" for i in range(numbers.shape[1])]
        parts.append(numbers)
    notes.append(f"float_seq field(s) {', '.join(vector_fields)}: the vectors block")
    return pd.concat(parts, axis=1)


def _all_numbers(values: pd.Series) -> bool:
    return not values.empty and bool(pd.to_numeric(values, errors="coerce").notna().all())


def _one_id_type(inter, items, vectors, user, item) -> None:
    """Ids are tokens (text); integers where every token of the kind is a plain integer."""
    if integer_like(inter[user]):
        inter[user] = inter[user].astype(np.int64)
    frames = [frame for frame in (inter, items, vectors) if frame is not None]
    if all(integer_like(frame[item]) for frame in frames):
        for frame in frames:
            frame[item] = frame[item].astype(np.int64)
