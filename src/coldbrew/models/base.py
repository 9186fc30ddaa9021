"""The contract every coldbrew model keeps; the trainer and evaluator know only this."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Batch:
    """One training step's samples: ``users[b]`` with ``items[b, 0]`` positive, the rest negatives."""

    users: torch.Tensor  # (B,) int64
    items: torch.Tensor  # (B, 1 + K) int64


@dataclass
class LossOutput:
    """The total loss to minimise and its named terms (device tensors, never read in the step)."""

    total: torch.Tensor
    terms: dict[str, torch.Tensor]


class Recommender(nn.Module):
    """Base class: ``loss(batch)``, ``user_embeddings()``, ``item_embeddings()``, ``score_users``.

    ``item_embeddings`` must score cold items from their content (that is the point of a
    cold-start model); ``score_users`` defaults to the inner product of the two.
    """

    def loss(self, batch: Batch) -> LossOutput:  # pragma: no cover - abstract
        raise NotImplementedError

    def user_embeddings(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def item_embeddings(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    @torch.no_grad()
    def score_users(self, users: torch.Tensor) -> torch.Tensor:
        """Scores ``(len(users), num_items)`` for ranking."""
        return self.user_embeddings()[users] @ self.item_embeddings().T
