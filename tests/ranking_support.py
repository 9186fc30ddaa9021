"""The random dataset the ranking engine's tests compare against per-user loops and the
original protocol's transcription."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from coldbrew.data.dataset import Dataset

NUM_USERS, NUM_ITEMS, NUM_COLD = 45, 70, 18


def random_dataset(
    seed: int = 0, contiguous: bool = False, positives_may_be_seen: bool = False
) -> Dataset:
    """Training on warm items; val/test positives on unseen items (warm and cold); users 0–5
    have no val positive and 4–11 no test positive, so some users are in one split only and
    4 and 5 in neither. ``contiguous``: warm items first, then cold (the CLCRec layout);
    ``positives_may_be_seen``: held-out positives may be training items too (the original
    CLCRec's data allows it)."""
    rng = np.random.default_rng(seed)
    if contiguous:
        cold_items = np.arange(NUM_ITEMS - NUM_COLD, NUM_ITEMS)
    else:
        cold_items = rng.choice(NUM_ITEMS, NUM_COLD, replace=False)
    cold = np.zeros(NUM_ITEMS, dtype=bool)
    cold[cold_items] = True
    train = (rng.random((NUM_USERS, NUM_ITEMS)) < 0.25) & ~cold
    splits = {}
    for split, absent in (("val", range(0, 6)), ("test", range(4, 12))):
        held_out = rng.random((NUM_USERS, NUM_ITEMS)) < 0.12
        if not positives_may_be_seen:
            held_out &= ~train
        held_out[list(absent)] = False  # users without a positive in this split
        splits[split] = {
            "all": sp.csr_matrix(held_out.astype(np.float32)),
            "warm": sp.csr_matrix((held_out & ~cold).astype(np.float32)),
            "cold": sp.csr_matrix((held_out & cold).astype(np.float32)),
        }
    return Dataset(
        name="random",
        num_users=NUM_USERS,
        num_items=NUM_ITEMS,
        train=sp.csr_matrix(train.astype(np.float32)),
        cold_items=cold_items,
        splits=splits,
    )
