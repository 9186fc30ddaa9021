"""What the cold-start zoo's students of a collaborative backbone share (DeepMusic, DropoutNet,
Heater): the backbone's embeddings kept as persistent buffers, the cold mask, the distinct items
of a step, products of sampled pairs, and the score-regression loss.

The backbone (``coldbrew.training.backbone``) is trained on warm interactions only, so its cold
item rows are zero. The buffers are persistent because a saved run is rebuilt without its
teacher (``ModelSpec.build(..., teacher=None)``): its checkpoint then fills them. The training
task draws negatives among warm items only, so every item of a batch has a backbone row.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.models.base import Recommender, Teacher
from coldbrew.models.content import distinct_items, host_syncs_are_free
from coldbrew.models.warm_teacher import register_teacher


class TeacherStudent(Recommender):
    """A ``Recommender`` holding its backbone's ``teacher_users`` ``(num_users, d)`` and
    ``teacher_items`` ``(num_items, d)``; ``teacher`` None: zeros of width ``dim``, which the
    checkpoint overwrites."""

    def __init__(
        self,
        num_users: int,
        num_items: int,
        cold_items: torch.Tensor,
        teacher: Teacher | None,
        dim: int,
    ):
        super().__init__()
        self.num_users, self.num_items = num_users, num_items
        register_teacher(self, teacher, num_users, num_items, dim)
        cold_mask = torch.zeros(num_items, dtype=torch.bool)
        cold_mask[cold_items.long()] = True
        self.register_buffer("cold_mask", cold_mask, persistent=False)

    def step_items(self, items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The distinct items ``(n,)`` of ``items`` ``(B, 1 + K)`` and each entry's row among
        them ``(B, 1 + K)`` (padded to a fixed ``n`` on the GPU path)."""
        trim = host_syncs_are_free(items, self.fixed_shapes)
        distinct, inverse = distinct_items(items.reshape(-1), self.num_items, trim=trim)
        return distinct, inverse.view(items.shape)

    def teacher_scores(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """The backbone's scores ``(B, 1 + K)`` of ``users`` ``(B,)`` for ``items``."""
        return pair_scores(self.teacher_users[users], self.teacher_items, items)


def pair_scores(
    user_vectors: torch.Tensor, item_vectors: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``user_vectors[b] · item_vectors[rows[b, k]]`` ``(B, 1 + K)``: user ``(B, D)``, items
    ``(n, D)``, rows ``(B, 1 + K)`` into the items."""
    picked = F.embedding(rows, item_vectors)  # (B, 1 + K, D)
    return torch.bmm(picked, user_vectors.unsqueeze(2)).squeeze(2)


def score_regression(predicted: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error of predicted scores against the backbone's (same shapes)."""
    return (predicted - target).square().mean()


def squared_distance(predicted: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over rows of ``‖predicted − target‖²`` (rows ``(..., D)``)."""
    return (predicted - target).square().sum(-1).mean()


def tower(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    """``Linear(inputs, hidden)`` → tanh → ``Linear(hidden, outputs)``: DropoutNet's and
    Heater's user and item towers."""
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, outputs))
