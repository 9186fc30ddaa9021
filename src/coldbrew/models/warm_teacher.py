"""Pieces the models that learn from a collaborative backbone share (GAR, ALDI, content KNN):
the backbone's vectors kept as checkpointed buffers, and the small tanh MLP their papers use.

A teacher model is built with the backbone's ``Teacher`` on a fresh run and with ``None`` when a
saved run is rebuilt; the vectors are then zeros of the options' width until the checkpoint
fills them, so they are persistent buffers (learned state, not data).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Teacher


def catalogue(dataset) -> tuple:
    """What every teacher model's constructor takes first from its data: ``(num_users,
    num_items, features, cold_items)``, so each builder passes ``*catalogue(dataset)``."""
    return (
        dataset.num_users,
        dataset.num_items,
        dataset.features,
        torch.from_numpy(dataset.cold_items),
    )


def register_teacher(
    module: nn.Module, teacher: Teacher | None, num_users: int, num_items: int, dim: int
) -> None:
    """``module.teacher_users`` ``(num_users, dim)`` and ``module.teacher_items``
    ``(num_items, dim)``: the backbone's vectors, or zeros a checkpoint will fill."""
    if teacher is None:
        teacher = Teacher(torch.zeros(num_users, dim), torch.zeros(num_items, dim))
    expected = {"users": (num_users, dim), "items": (num_items, dim)}
    for side, shape in expected.items():
        found = tuple(getattr(teacher, side).shape)
        if found != shape:
            raise ColdbrewError(
                f"the backbone's {side} are {found}; expected {shape} (option backbone_dim={dim})"
            )
    module.register_buffer("teacher_users", teacher.users.float().clone())
    module.register_buffer("teacher_items", teacher.items.float().clone())


class TanhTower(nn.Module):
    """``Linear(hidden) → tanh → Linear(out)``; ``frozen=True`` runs it with its weights
    detached, so a loss sees the tower's output without moving the tower (an adversary's
    turn)."""

    def __init__(self, width: int, hidden: int, out: int):
        super().__init__()
        self.layer1 = nn.Linear(width, hidden)
        self.layer2 = nn.Linear(hidden, out)

    def forward(self, inputs: torch.Tensor, frozen: bool = False) -> torch.Tensor:
        layers = [self.layer1, self.layer2]
        weights = [(layer.weight, layer.bias) for layer in layers]
        if frozen:
            weights = [(weight.detach(), bias.detach()) for weight, bias in weights]
        hidden = torch.tanh(F.linear(inputs, *weights[0]))
        return F.linear(hidden, *weights[1])
