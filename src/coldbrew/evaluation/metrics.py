"""Top-K metrics from a ``[users, K]`` hit matrix, every K from one cumulative sum.

``hits[u, r]`` is True when the item ranked ``r`` (0-based) for user ``u`` is one of the user's
held-out positives; ``num_positives[u]`` counts those positives (every user has at least one).
The definitions are the ones of the original CLCRec ``full_accuracy`` (evaluation branch):

* precision@K = hits in the top K / K
* recall@K    = hits in the top K / |positives|
* NDCG@K      = DCG / IDCG with DCG = sum over hits of 1 / log2(rank + 2) and IDCG the same sum
  over the first ``min(|positives|, K)`` ranks (a perfect list)
* hit@K       = 1 when the top K holds at least one positive, else 0

The hit matrix may be narrower than a requested K (a user had fewer candidate items than K):
the missing ranks count as misses, and precision still divides by K, as the original does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from coldbrew.errors import ColdbrewError

METRICS = ("precision", "recall", "ndcg", "hit")


def check_ks(ks: Sequence[int] | int) -> tuple[int, ...]:
    """The cut-offs as a tuple of distinct positive ints, in the order given."""
    if isinstance(ks, int):
        ks = (ks,)
    checked: list[int] = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ColdbrewError(f"every K must be a positive integer, got {k!r} in ks={ks!r}")
        if k not in checked:
            checked.append(k)
    if not checked:
        raise ColdbrewError("ks is empty: give at least one cut-off, e.g. ks=(10, 20)")
    return tuple(checked)


def metric_names(ks: Sequence[int]) -> list[str]:
    """``["precision@10", "recall@10", "ndcg@10", "hit@10", "precision@20", ...]``."""
    return [f"{metric}@{k}" for k in check_ks(ks) for metric in METRICS]


def per_user_metrics(
    hits: torch.Tensor, num_positives: torch.Tensor, ks: Sequence[int]
) -> dict[str, torch.Tensor]:
    """Every metric for every user: ``{"recall@20": (U,) float64, ...}`` on ``hits.device``."""
    ks = check_ks(ks)
    if hits.dim() != 2:
        raise ColdbrewError(f"hits must be a [users, K] matrix, got shape {tuple(hits.shape)}")
    num_users, width = hits.shape
    if num_positives.shape != (num_users,):
        raise ColdbrewError(
            f"num_positives has shape {tuple(num_positives.shape)}; expected ({num_users},)"
        )
    device = hits.device
    longest = max(ks)
    hits = hits[:, :longest].to(torch.float64)  # ranks past the largest K count nowhere
    width = hits.shape[1]
    positives = num_positives.to(device=device, dtype=torch.float64)
    # discount[r] = 1 / log2(r + 2) for ranks r = 0 .. max(ks) - 1
    discount = 1.0 / torch.log2(torch.arange(longest, device=device, dtype=torch.float64) + 2.0)
    ideal_dcg = discount.cumsum(0)  # ideal_dcg[n - 1] = DCG of n hits at the top
    if width == 0:  # no candidate at all: every metric is zero
        hits = torch.zeros(num_users, 1, dtype=torch.float64, device=device)
        width = 1
    cumulative_hits = hits.cumsum(1)  # (U, W)
    cumulative_dcg = (hits * discount[:width]).cumsum(1)  # (U, W)

    out: dict[str, torch.Tensor] = {}
    for k in ks:
        last = min(k, width) - 1
        num_hits = cumulative_hits[:, last]
        ideal_length = positives.clamp(min=1, max=k).long() - 1
        out[f"precision@{k}"] = num_hits / k
        out[f"recall@{k}"] = num_hits / positives
        out[f"ndcg@{k}"] = cumulative_dcg[:, last] / ideal_dcg[ideal_length]
        out[f"hit@{k}"] = (num_hits > 0).to(torch.float64)
    return out


def metric_sums(hits: torch.Tensor, num_positives: torch.Tensor, ks: Sequence[int]) -> torch.Tensor:
    """Per-user metrics summed over users: a ``(len(metric_names(ks)),)`` float64 tensor.

    Stays on the device, so a caller can add chunk after chunk and read it back once.
    """
    values = per_user_metrics(hits, num_positives, ks)
    return torch.stack([column.sum() for column in values.values()])


def mean_metrics(
    hits: torch.Tensor, num_positives: torch.Tensor, ks: Sequence[int]
) -> dict[str, float]:
    """Metrics averaged over the users of the hit matrix (one host transfer)."""
    num_users = hits.shape[0]
    if num_users == 0:
        return {}
    sums = metric_sums(hits, num_positives, ks).tolist()
    return {name: total / num_users for name, total in zip(metric_names(ks), sums, strict=True)}


class MetricSums:
    """Per-user metrics summed over users, for hit matrices over a fixed array of users.

    Everything that does not depend on the hits is computed once: per-rank prefix masks and
    discounted prefix masks (``(W, 2 len(ks))``, so every K's hit count and DCG come from one
    matrix product), ``1 / |positives|`` and ``1 / IDCG@K`` per user. ``num_positives`` is
    ``(..., U)``; a user with none gets weight 1 and, having no hit, adds 0 everywhere. Equal to
    ``per_user_metrics`` summed, up to float64 rounding.
    """

    def __init__(self, num_positives: torch.Tensor, ks: Sequence[int], width: int):
        self.ks = check_ks(ks)
        device = num_positives.device
        cutoffs = torch.tensor(self.ks, device=device)
        width = min(width, max(self.ks))  # ranks past the largest K count nowhere
        ranks = torch.arange(width, device=device, dtype=torch.float64)
        prefix = (ranks[:, None] < cutoffs[None, :]).to(torch.float64)  # (W, len(ks))
        discount = 1.0 / torch.log2(ranks + 2.0)
        self.rank_weights = torch.cat([prefix, discount[:, None] * prefix], dim=1)
        self.width = width
        longest = torch.arange(max(self.ks), device=device, dtype=torch.float64)
        ideal_dcg = (1.0 / torch.log2(longest + 2.0)).cumsum(0)  # [n - 1]: DCG of n top hits
        positives = num_positives.clamp(min=1)
        self.inverse_positives = 1.0 / positives.to(torch.float64)  # (..., U)
        ideal_length = torch.minimum(positives[..., None], cutoffs) - 1  # (..., U, len(ks))
        self.inverse_ideal = 1.0 / ideal_dcg[ideal_length]
        self.inverse_ks = 1.0 / cutoffs.to(torch.float64)

    def __call__(self, hits: torch.Tensor, first: int = 0, last: int | None = None):
        """Sums over users ``[first, last)`` of hits ``(..., last - first, W)``: ``(..., M)``,
        metrics in ``metric_names(ks)`` order."""
        hits = hits[..., : self.width].to(torch.float64)
        width = hits.shape[-1]
        totals = hits @ self.rank_weights[:width]  # (..., B, 2 len(ks)): hit counts, then DCG
        num_hits, dcg = totals.chunk(2, dim=-1)
        inverse_positives = self.inverse_positives[..., first:last, None]  # (..., B, 1)
        sums = torch.stack(
            [
                num_hits.sum(-2) * self.inverse_ks,  # precision
                (num_hits * inverse_positives).sum(-2),  # recall
                (dcg * self.inverse_ideal[..., first:last, :]).sum(-2),  # NDCG
                (num_hits > 0).sum(-2, dtype=torch.float64),  # hit
            ],
            dim=-1,
        )  # (..., len(ks), 4)
        return sums.flatten(-2)  # k-major, as metric_names
