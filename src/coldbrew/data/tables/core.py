"""``k_core: K``: keep the users and items with at least K training interactions, repeated
until every one left has K (dropping an item can take a user below K, and back).

The items table keeps only the core's items (and the cold files' items): an item dropped from
the core leaves the catalogue, so it is neither trained on nor scored as cold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from coldbrew.errors import DataError


def k_core(frame: pd.DataFrame, user: str, item: str, k: int) -> np.ndarray:
    """Which rows of ``frame`` are in its ``k``-core (repeated (user, item) rows count once)."""
    users, _ = pd.factorize(frame[user])
    items, _ = pd.factorize(frame[item])
    pairs = pd.unique(users.astype(np.int64) * (items.max() + 1) + items)
    pair_users, pair_items = pairs // (items.max() + 1), pairs % (items.max() + 1)
    kept_users = np.ones(users.max() + 1, dtype=bool)
    kept_items = np.ones(items.max() + 1, dtype=bool)
    while True:
        alive = kept_users[pair_users] & kept_items[pair_items]
        user_counts = np.bincount(pair_users[alive], minlength=len(kept_users))
        item_counts = np.bincount(pair_items[alive], minlength=len(kept_items))
        new_users, new_items = user_counts >= k, item_counts >= k
        if (new_users == kept_users).all() and (new_items == kept_items).all():
            break
        kept_users, kept_items = new_users, new_items
    return kept_users[users] & kept_items[items]


def apply_k_core(frames, items, columns, k, where, notes, drop_missing: bool = False):
    """``(frames, items)`` with the training interactions cut to their ``k``-core and the
    items table to the core's items and the cold files' items; a note of the counts. With
    ``drop_missing`` (``missing_items: drop``) the rows naming items the table lacks are
    dropped first, so every user and item left has ``k`` interactions that are kept."""
    user, item, item_id = columns
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DataError(f"k_core must be a whole number of interactions, 1 or more, not {k!r}")
    train = frames["train"]
    counted = np.ones(len(train), dtype=bool)
    if drop_missing and items is not None:
        counted = train[item].isin(items[item_id]).to_numpy()
    kept = np.zeros(len(train), dtype=bool)
    kept[counted] = k_core(train[counted], user, item, k)
    core = train[kept]
    before = (train[user].nunique(), train[item].nunique(), len(train))
    after = (core[user].nunique(), core[item].nunique(), len(core))
    if after[2] == 0:
        raise DataError(f"{where['train']}: no user and item have {k} interactions (k_core: {k})")
    missing = int((~counted).sum())
    dropped = f" ({missing:,} naming items the table lacks dropped first)" if missing else ""
    notes.append(
        f"{where['train']}: k_core {k}: {before[0]:,} users, {before[1]:,} items, {before[2]:,} "
        f"interactions -> {after[0]:,}, {after[1]:,}, {after[2]:,}{dropped}"
    )
    frames = {**frames, "train": core}
    if items is not None:
        wanted = pd.concat([frame[item] for frame in frames.values()], ignore_index=True)
        in_catalogue = items[item_id].isin(pd.unique(wanted)).to_numpy()
        if not in_catalogue.all():
            notes.append(
                f"{where['items']}: {int((~in_catalogue).sum()):,} item(s) outside the "
                f"{k}-core left out of the catalogue"
            )
        items = items[in_catalogue]
    return frames, items
