"""Negative sampling on the device, exact: a sync-free rank method, and a faster CPU one.

For each user, negatives are drawn uniformly from the warm items the user has no known
interaction with, *with replacement* by default. The original CLCRec draws the K negatives of
one positive *without* replacement (``random.sample`` over the set difference), which
``replace=False`` reproduces exactly; with 128 negatives among ml-1m-coldstart's 1,811 warm
items, sampling with replacement repeats about 4.5 of them per row.

How: items are relabelled by their rank among warm items. For user ``u`` with sorted known warm
ranks ``k_0 < k_1 < ... < k_{m-1}``, draw ``r`` uniform in ``[0, W - m)``; the ``r``-th free rank
is ``r + #{j : k_j - j <= r}``, because ``k_j - j`` counts the free ranks below ``k_j``. The
count is one ``searchsorted`` over all users' shifted keys ``u * (W + 1) + (k_j - j)``, which
are globally sorted. No Python loop, no host sync, no rejection.

On the CPU, where a host sync costs nothing, ``method="rejection"`` (the CPU default while the
bitset fits in ``BITSET_BUDGET_BYTES``) is faster: draw warm ranks uniformly, look each up in a
users × warm-items bitset, redraw the known ones; positions still known after ``MAX_ROUNDS``
redraws (users who know most warm items) are drawn by the rank method. Each accepted draw is
uniform over the user's free items either way, so both methods sample the same distribution.

Without replacement (``replace=False``), both methods give ``random.sample``'s distribution
(uniform over ordered tuples of distinct free items):

* ``"rank"`` (no host sync): draw ``r_i`` uniform in ``[0, free - i)`` for ``i = 0 .. K-1``
  (one ``randint``), the i-th pick being the ``r_i``-th free rank not yet picked. Decoding runs
  backwards over positions: putting position ``i`` back moves every later pick at or above it
  up by one (``K - 1`` vectorised steps, ``O(B K^2)`` work); then the rank formula above.
* ``"rejection"`` (CPU): draw with replacement, then redraw each repeated position until the
  row has none (``_distinct_ranks_by_redrawing`` says why that is exactly uniform).

Asking for more distinct negatives than a user has free warm items is an error
(``check_users``; on the CPU also at every ``sample`` call, where checking costs no sync). With
replacement it is legal (the draws repeat), so that path does not check.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.errors import DataError

BITSET_BUDGET_BYTES = 512 << 20  # users × warm items bits; above it the CPU uses ranks too
MAX_ROUNDS = 8  # rejection redraws before the rank method takes the remaining positions


class NegativeSampler:
    """Draws ``num_neg`` negatives per row for a batch of users, on ``device``."""

    def __init__(
        self,
        exclude: sp.csr_matrix,
        warm_items: np.ndarray,
        device: torch.device | str = "cpu",
        method: str = "auto",
        replace: bool = True,
    ):
        num_users, num_items = exclude.shape
        warm_items = np.ascontiguousarray(warm_items, dtype=np.int64)
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
        self.free_on_host = free
        self.replace = bool(replace)
        self.device = torch.device(device)
        self.keys = torch.from_numpy(rows * (self.num_warm + 1) + shifted).to(self.device)
        self.row_starts = torch.from_numpy(starts).to(self.device)
        self.free = torch.from_numpy(free).to(self.device)
        self.warm_items = torch.from_numpy(warm_items).to(self.device)
        # Warm items 0..W-1 (the CLCRec layout's order): a rank is its item, no gather needed.
        self.ranks_are_items = bool(np.array_equal(warm_items, np.arange(self.num_warm)))
        self.words_per_user = (self.num_warm + 63) // 64
        self.method = self._choose_method(method, num_users)
        self.known_bits = None
        if self.method == "rejection":
            self.known_bits = known_bitset(rows, ranks, num_users, self.words_per_user)

    def _choose_method(self, method: str, num_users: int) -> str:
        if method not in ("auto", "rank", "rejection"):
            raise ValueError(f"method must be auto, rank or rejection, not {method!r}")
        if method != "auto":
            return method
        fits = num_users * self.words_per_user * 8 <= BITSET_BUDGET_BYTES
        return "rejection" if self.device.type == "cpu" and fits else "rank"

    def check_users(self, users: np.ndarray, num_neg: int | None = None) -> None:
        """Raise if any of ``users`` has no warm item left to be a negative, or, without
        replacement, fewer than ``num_neg`` of them."""
        users = np.asarray(users)
        bad = np.intersect1d(users, self.users_without_negatives)
        if len(bad):
            raise DataError(
                f"{len(bad)} training user(s) know every warm item (e.g. user {int(bad[0])}); "
                "no negative can be drawn for them"
            )
        if not self.replace and num_neg is not None:
            short = users[self.free_on_host[users] < num_neg]
            if len(short):
                user = int(short[0])
                raise DataError(
                    f"{len(short)} training user(s) have fewer free warm items than num_neg = "
                    f"{num_neg} (e.g. user {user}: {int(self.free_on_host[user])}); sampling "
                    "without replacement cannot draw that many distinct negatives"
                )

    def sample(
        self, users: torch.Tensor, num_neg: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """``(len(users), num_neg)`` internal item ids, none known to its user, all warm
        (distinct within a row when the sampler was made with ``replace=False``)."""
        if not self.replace:
            self._check_without_replacement(users, num_neg)
            if self.method == "rank":
                ranks = self._distinct_ranks_by_decoding(users, num_neg, generator)
            else:
                ranks = self._distinct_ranks_by_redrawing(users, num_neg, generator)
        elif self.method == "rank":
            ranks = self._ranks_by_rank(users, num_neg, generator)
        else:
            ranks = self._ranks_by_rejection(users, num_neg, generator)
        return ranks if self.ranks_are_items else self.warm_items[ranks]

    def _ranks_by_rank(self, users: torch.Tensor, num_neg: int, generator) -> torch.Tensor:
        """Free warm ranks, ``(B, num_neg)``, by the r-th free rank formula; no host sync."""
        free = self.free[users].unsqueeze(1)  # (B, 1)
        draws = torch.randint(
            0, 2**62, (users.shape[0], num_neg), device=users.device, generator=generator
        )
        return self._warm_ranks(users, draws % free.clamp_min(1))  # uniform in [0, free)

    def _warm_ranks(self, users: torch.Tensor, free_rank: torch.Tensor) -> torch.Tensor:
        """The ``free_rank``-th free warm rank of each row's user, ``(B, K)``."""
        queries = users.unsqueeze(1) * (self.num_warm + 1) + free_rank
        below = torch.searchsorted(self.keys, queries, right=True) - self.row_starts[
            users
        ].unsqueeze(1)
        return free_rank + below

    def _check_without_replacement(self, users: torch.Tensor, num_neg: int) -> None:
        if num_neg > self.num_warm:
            raise DataError(
                f"num_neg = {num_neg} distinct negatives asked for, but there are only "
                f"{self.num_warm} warm items"
            )
        if users.device.type == "cpu" and bool((self.free[users] < num_neg).any()):
            self.check_users(users.numpy(), num_neg)  # on the CPU checking costs no sync

    def _distinct_ranks_by_decoding(
        self, users: torch.Tensor, num_neg: int, generator
    ) -> torch.Tensor:
        """``num_neg`` distinct free warm ranks per row, as ``random.sample`` draws; no sync."""
        free = self.free[users].unsqueeze(1)  # (B, 1)
        draws = torch.randint(
            0, 2**62, (users.shape[0], num_neg), device=users.device, generator=generator
        )
        left = (free - torch.arange(num_neg, device=users.device)).clamp_min(1)  # (B, K)
        # (K, B) int32: each position's picks are one contiguous row (4x faster than int64)
        picks = (draws % left).T.to(torch.int32).contiguous()  # [i] uniform in [0, free - i)
        for position in range(num_neg - 2, -1, -1):  # put position back: later picks move up
            later = picks[position + 1 :]
            later += later >= picks[position : position + 1]
        picks = picks.T.contiguous().long()  # (B, K) distinct free ranks
        # An unchecked user with fewer free items than num_neg (possible off the CPU only) gets
        # repeats rather than a known item.
        return self._warm_ranks(users, torch.minimum(picks, (free - 1).clamp_min(0)))

    def _distinct_ranks_by_redrawing(
        self, users: torch.Tensor, num_neg: int, generator
    ) -> torch.Tensor:
        """Distinct free warm ranks (CPU): draw with replacement, then redraw every repeat.

        A repeat is a position whose rank an earlier position of its row holds; it is redrawn
        uniformly over the user's free items until no two positions of the row agree. The rule
        looks at ranks only through equality, so relabelling the free items cannot change the
        outcome's distribution: it is uniform over ordered distinct tuples, ``random.sample``'s.
        Rows still repeating after ``MAX_ROUNDS`` (users with barely more free items than
        ``num_neg``) are decoded instead, which keeps the mixture uniform.
        """
        ranks = self._ranks_by_rejection(users, num_neg, generator)  # (B, K)
        # key = rank * K + position: unique, so any sort puts equal ranks in position order
        small = self.num_warm * num_neg < 2**31
        positions = torch.arange(num_neg, device=users.device)
        keys = (ranks * num_neg + positions).to(torch.int32 if small else torch.int64)
        keys = keys.sort(dim=1).values  # (B, K)
        repeat = keys[:, 1:] // num_neg == keys[:, :-1] // num_neg  # (B, K - 1)
        rows, sorted_columns = repeat.nonzero(as_tuple=True)  # every position but a rank's first
        columns = (keys[rows, sorted_columns + 1] % num_neg).long()
        for _ in range(MAX_ROUNDS):
            if rows.numel() == 0:
                return ranks
            ranks[rows, columns] = self._ranks_by_rejection(users[rows], 1, generator)[:, 0]
            clashes = (ranks[rows] == ranks[rows, columns].unsqueeze(1)).sum(1) > 1  # (R,)
            rows, columns = rows[clashes], columns[clashes]
        if rows.numel():
            stubborn = rows.unique()
            ranks[stubborn] = self._distinct_ranks_by_decoding(users[stubborn], num_neg, generator)
        return ranks

    def _known(self, word_starts: torch.Tensor, ranks: torch.Tensor) -> torch.Tensor:
        """Whether warm rank ``ranks`` is known to the user whose bitset starts at ``word_starts``."""
        words = torch.take(self.known_bits, word_starts + (ranks >> 6))
        return (words >> (ranks & 63)) & 1 == 1

    def _ranks_by_rejection(self, users: torch.Tensor, num_neg: int, generator) -> torch.Tensor:
        """Free warm ranks, ``(B, num_neg)``: uniform draws, known ones redrawn (CPU)."""
        shape = (users.shape[0], num_neg)
        ranks = torch.randint(0, self.num_warm, shape, device=users.device, generator=generator)
        word_starts = users * self.words_per_user  # (B,)
        flat = ranks.view(-1)
        pending = self._known(word_starts.unsqueeze(1), ranks).view(-1).nonzero().squeeze(1)
        for _ in range(MAX_ROUNDS):
            if pending.numel() == 0:
                return ranks
            redraw = torch.randint(
                0, self.num_warm, pending.shape, device=users.device, generator=generator
            )
            known = self._known(word_starts[pending // num_neg], redraw)
            accepted = ~known
            flat[pending[accepted]] = redraw[accepted]
            pending = pending[known]
        if pending.numel():
            flat[pending] = self._ranks_by_rank(users[pending // num_neg], 1, generator)[:, 0]
        return ranks


def known_bitset(rows: np.ndarray, ranks: np.ndarray, num_users: int, words: int) -> torch.Tensor:
    """``(num_users * words,)`` int64 words; bit ``r % 64`` of word ``u * words + r // 64`` is
    set when user ``u`` knows warm rank ``r``."""
    bits = np.zeros(num_users * words, dtype=np.uint64)
    values = np.left_shift(np.uint64(1), (ranks % 64).astype(np.uint64))
    np.bitwise_or.at(bits, rows * words + ranks // 64, values)
    return torch.from_numpy(bits.view(np.int64))
