"""Neighbor-graph contrastive loss: a user's neighbors ↔ the items those neighbors share.

Definitions (the seed system's, made deterministic):

* **Neighbors** of user ``u``: the other users who share at least one training item with ``u``,
  ranked by the number of items in common (most first), ties by the smaller user id; at most
  ``keep_neighbors`` (50) are kept, and the first ``use_neighbors`` (10) are used per step.
* **Common items** of ``u``: items that at least one of the ``use_neighbors`` *used* neighbors
  interacted with and ``u`` did not, ranked by how many of those used neighbors have the item
  (most first), ties by the smaller item id; at most ``keep_common`` (20) are kept. Counting
  over the used neighbors (not all 50 kept) keeps the items consistent with the neighbor
  embedding they are contrasted with.
* **Loss**, over the batch's *distinct* users: neighbor embedding = mean ID embedding of the
  used neighbors (the user's own ID embedding when it has none); common embedding = mean
  content embedding of its common items (the neighbor embedding when it has none); InfoNCE
  between the two, L2-normalised, row ``i``'s positive in column ``i``, the other distinct
  users as negatives (or ``K`` of them at random: ``--neighbor-negatives``), temperature
  ``τ``, with log-sum-exp.

The lists are precomputed once (``coldbrew.models.clcrec.neighbor_lists``) and live on the device as
padded index tensors. A step gathers them for its distinct users: no Python loop over users,
no host sync on a GPU (distinct users come padded to a fixed size there, trimmed on a CPU).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.models.clcrec.neighbor_info_nce import neighbor_info_nce
from coldbrew.models.clcrec.neighbor_lists import (
    KEEP_COMMON,
    KEEP_NEIGHBORS,
    USE_NEIGHBORS,
    PaddedLists,
    common_items,
    top_neighbors,
)

__all__ = ["NeighborGraph", "PaddedLists", "common_items", "neighbor_info_nce", "top_neighbors"]


def mean_weights(lists: PaddedLists, width: int) -> torch.Tensor:
    """``(rows, width)`` float32: ``1 / length`` on a row's first ``length`` slots, else 0."""
    lengths = np.minimum(lists.lengths, width)
    valid = np.arange(width) < lengths[:, None]
    return torch.from_numpy(valid / np.maximum(lengths, 1)[:, None]).float()


def weighted_rows(weights: torch.Tensor, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """``Σ_l weights[n, l] · table[index[n, l]]``: ``(N, L), (N, L), (n, D) -> (N, D)``, fused."""
    return F.embedding_bag(index, table, per_sample_weights=weights.to(table.dtype), mode="sum")


def distinct_ids(ids: torch.Tensor, num_ids: int, trim: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted distinct ``ids`` and a validity mask, without a host sync unless ``trim``.

    Untrimmed (GPU), the result has the fixed length ``min(num_ids, len(ids))``, padded with id
    0 marked invalid — the same trick as ``content.distinct_items``. Trimmed (CPU, where a read
    is free) it is ``torch.unique`` and every entry is valid.
    """
    if trim:
        distinct = torch.unique(ids)
        return distinct, torch.ones_like(distinct, dtype=torch.bool)
    present = torch.zeros(num_ids, dtype=torch.bool, device=ids.device)
    present.index_fill_(0, ids, True)  # not `present[ids] = True`: a host→device copy
    capacity = min(num_ids, len(ids))
    slot = torch.where(present, torch.cumsum(present, 0) - 1, capacity)  # (num_ids,)
    distinct = torch.zeros(capacity + 1, dtype=torch.long, device=ids.device)
    distinct.scatter_(0, slot, torch.arange(num_ids, device=ids.device))
    valid = torch.arange(capacity, device=ids.device) < present.sum()
    return distinct[:capacity], valid


class NeighborGraph(nn.Module):
    """Device-resident neighbor and common-item lists; ``step`` + ``loss`` make the term.

    Means are weighted sums with precomputed ``1 / length`` weights. A user without neighbors
    gets itself as its one neighbor, so its neighbor embedding is its own ID embedding; a user
    without common items gets its neighbor embedding (``has_common``). The true list lengths
    are in ``neighbor_counts`` and ``common_counts``. Buffers are not saved in checkpoints
    (``persistent=False``): they are recomputed from the training data, and a checkpoint loads
    into a model built with or without the term.
    """

    def __init__(
        self, neighbors: PaddedLists, common: PaddedLists, use_neighbors: int = USE_NEIGHBORS
    ):
        super().__init__()
        used = neighbors.ids[:, :use_neighbors].copy()  # (U, use)
        counts = np.minimum(neighbors.lengths, use_neighbors)
        lonely = counts == 0
        used[lonely, 0] = np.flatnonzero(lonely)  # no neighbors: the user itself
        buffers = {
            "neighbors": torch.from_numpy(used),  # (U, use)
            "neighbor_weights": mean_weights(
                PaddedLists(used, np.where(lonely, 1, counts)), used.shape[1]
            ),
            "neighbor_counts": torch.from_numpy(counts),  # (U,)
            "common_items": torch.from_numpy(common.ids.copy()),  # (U, C)
            "common_weights": mean_weights(common, common.ids.shape[1]),  # (U, C)
            "common_counts": torch.from_numpy(common.lengths.copy()),  # (U,)
            "has_common": torch.from_numpy(common.lengths > 0),  # (U,)
        }
        for name, tensor in buffers.items():
            self.register_buffer(name, tensor, persistent=False)

    @classmethod
    def from_interactions(
        cls,
        train: sp.spmatrix,
        *,
        keep_neighbors: int = KEEP_NEIGHBORS,
        use_neighbors: int = USE_NEIGHBORS,
        keep_common: int = KEEP_COMMON,
        progress: bool = True,
    ) -> NeighborGraph:
        neighbors = top_neighbors(train, keep_neighbors, progress=progress)
        common = common_items(train, neighbors, use_neighbors, keep_common, progress=progress)
        return cls(neighbors, common, use_neighbors)

    def step(
        self, users: torch.Tensor, trim: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(distinct users (N,), valid (N,), their common items (N, C))`` for one batch;
        ``trim`` cuts the padding of the distinct users (one host read: the CPU's choice).

        The caller encodes the common items (with the batch's other items, in one call) and
        passes their content embeddings to ``loss``.
        """
        distinct, valid = distinct_ids(users, self.neighbors.shape[0], trim=trim)
        return distinct, valid, self.common_items[distinct]

    def vectors(
        self,
        users: torch.Tensor,
        user_embedding: torch.Tensor,
        item_content: torch.Tensor,
        common_index: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(neighbor, common)`` embeddings ``(N, D)`` each, with the fallbacks.

        ``users (N,)``; ``user_embedding (U, D)``; ``item_content (n, D)`` content embeddings
        and ``common_index (N, C)`` the rows of it that hold ``self.common_items[users]``
        (padding slots get weight 0). Weighted means are ``embedding_bag`` sums: no
        ``(N, L, D)`` gather, forward or backward.
        """
        neighbor = weighted_rows(
            self.neighbor_weights[users], self.neighbors[users], user_embedding
        )  # (N, D)
        common = weighted_rows(self.common_weights[users], common_index, item_content)  # (N, D)
        return neighbor, torch.where(self.has_common[users].unsqueeze(1), common, neighbor)

    def loss(
        self,
        users: torch.Tensor,
        valid: torch.Tensor,
        user_embedding: torch.Tensor,
        item_content: torch.Tensor,
        common_index: torch.Tensor,
        temperature: float,
        negatives: int | None = None,
    ) -> torch.Tensor:
        """The term for ``step``'s distinct ``users`` and ``valid`` (others as in ``vectors``);
        ``negatives``: how many of the other users each user is contrasted with (all: None)."""
        neighbor, common = self.vectors(users, user_embedding, item_content, common_index)
        return neighbor_info_nce(neighbor, common, valid, temperature, negatives)
