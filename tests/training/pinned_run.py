"""A short CLCRec run whose metrics are pinned against the previous engine.

The dataset is built here from NumPy alone (not from ``coldbrew.data.loaders.synthetic``, whose
generator may change), so the numbers stay comparable across engine rewrites. The numbers in
``test_engine_pin.py`` were made by ``benchmarks/pins/pin_previous_engine.py``, which runs this same
configuration on the engine of an older commit.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

SETTINGS = {
    "data": "pinned",
    "batch_size": 512,
    "num_neg": 16,
    "lr": 0.01,
    # the model settings that were the defaults when the numbers were pinned
    "reg_weight": 0.1,
    "lr_lambda": 0.5,
    "temp_value": 2.0,
    "quiet": True,
    "epochs": 3,
    "seed": 5,
    "report_share": 0.0,  # validation whole, as when the numbers were pinned
}


def pinned_dataset():
    """200 users, 120 items (24 cold), a 16-d feature that predicts who likes what."""
    from coldbrew.data.dataset import Dataset

    rng = np.random.default_rng(2024)
    num_users, num_items, dim = 200, 120, 8
    users, items = rng.normal(size=(num_users, dim)), rng.normal(size=(num_items, dim))
    scores = users @ items.T + rng.gumbel(size=(num_users, num_items))
    chosen = np.argsort(-scores, axis=1)[:, :15]  # (U, 15) each user's 15 best items
    cold = np.arange(num_items - 24, num_items)
    is_cold = np.isin(chosen, cold)
    row = np.repeat(np.arange(num_users), 15)
    flat, flat_cold = chosen.reshape(-1), is_cold.reshape(-1)
    held_out = rng.random(flat.shape) < 0.2
    val = flat_cold | held_out
    shape = (num_users, num_items)

    def csr(mask):
        matrix = sp.csr_matrix((np.ones(mask.sum(), np.float32), (row[mask], flat[mask])), shape)
        matrix.sum_duplicates()
        matrix.sort_indices()
        return matrix

    warm_val = val & ~flat_cold
    splits = {"val": {"all": csr(val), "warm": csr(warm_val), "cold": csr(val & flat_cold)}}
    projection = rng.normal(size=(dim, 16))
    content = items @ projection + 0.1 * rng.normal(size=(num_items, 16))
    return Dataset(
        name="pinned",
        num_users=num_users,
        num_items=num_items,
        train=csr(~val),
        cold_items=cold,
        splits=splits,
        features={"content": torch.from_numpy(content).float()},
    )
