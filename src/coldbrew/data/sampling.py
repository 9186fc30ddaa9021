"""Negative sampling on the device, exact and without rejection loops.

For each user, negatives are drawn uniformly *with replacement* from the warm items the user has
no known interaction with (the original CLCRec excludes every known item and every cold item;
it samples the K negatives of one positive without replacement, a difference that vanishes when
K is small against the candidate pool and is documented here).

How: items are relabelled by their rank among warm items. For user ``u`` with sorted known warm
ranks ``k_0 < k_1 < ... < k_{m-1}``, draw ``r`` uniform in ``[0, W - m)``; the ``r``-th free rank
is ``r + #{j : k_j - j <= r}``, because ``k_j - j`` counts the free ranks below ``k_j``. The
count is one ``searchsorted`` over all users' shifted keys ``u * (W + 1) + (k_j - j)``, which
are globally sorted. No Python loop, no host sync, no rejection.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.errors import DataError


class NegativeSampler:
    """Draws ``num_neg`` negatives per row for a batch of users, on ``device``."""

    def __init__(
        self, exclude: sp.csr_matrix, warm_items: np.ndarray, device: torch.device | str = "cpu"
    ):
        num_users, num_items = exclude.shape
        warm_items = np.asarray(warm_items, dtype=np.int64)
        warm_rank = np.full(num_items, -1, dtype=np.int64)
        warm_rank[warm_items] = np.arange(len(warm_items))
        self.num_warm = len(warm_items)
        # Known warm ranks per user, sorted (relabelling by rank keeps CSR order).
        rows = np.repeat(np.arange(num_users, dtype=np.int64), np.diff(exclude.indptr))
        ranks = warm_rank[exclude.indices]
        keep = ranks >= 0
        rows, ranks = rows[keep], ranks[keep]
        order = np.lexsort((ranks, rows))
        rows, ranks = rows[order], ranks[order]
        counts = np.bincount(rows, minlength=num_users)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        shifted = ranks - (np.arange(len(ranks)) - starts[rows])  # k_j - j within each row
        free = self.num_warm - counts
        self.users_without_negatives = np.flatnonzero(free <= 0)
        self.device = torch.device(device)
        self.keys = torch.from_numpy(rows * (self.num_warm + 1) + shifted).to(self.device)
        self.row_starts = torch.from_numpy(starts).to(self.device)
        self.free = torch.from_numpy(free).to(self.device)
        self.warm_items = torch.from_numpy(warm_items).to(self.device)

    def check_users(self, users: np.ndarray) -> None:
        """Raise if any of ``users`` has no warm item left to be a negative."""
        bad = np.intersect1d(np.asarray(users), self.users_without_negatives)
        if len(bad):
            raise DataError(
                f"{len(bad)} training user(s) know every warm item (e.g. user {int(bad[0])}); "
                "no negative can be drawn for them"
            )

    def sample(
        self, users: torch.Tensor, num_neg: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """``(len(users), num_neg)`` internal item ids, none known to its user, all warm."""
        free = self.free[users].unsqueeze(1)  # (B, 1)
        draws = torch.randint(
            0, 2**62, (users.shape[0], num_neg), device=users.device, generator=generator
        )
        free_rank = draws % free.clamp_min(1)  # (B, K) uniform in [0, free)
        queries = users.unsqueeze(1) * (self.num_warm + 1) + free_rank
        below = torch.searchsorted(self.keys, queries, right=True) - self.row_starts[
            users
        ].unsqueeze(1)
        return self.warm_items[free_rank + below]
