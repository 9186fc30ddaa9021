"""Tiny hand-checkable inputs for the zoo's loss tests: 2 users, 3 items (item 2 cold), 2-d
backbone vectors and one-hot content, and a content encoder made the identity."""

from __future__ import annotations

import torch
from torch import nn

from coldbrew.models.base import Batch, Catalogue, Teacher

# backbone: users u0 = [1, 0], u1 = [0, 1]; items i0 = [1, 2], i1 = [0, 1], i2 cold = [0, 0]
TEACHER = Teacher(
    torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[1.0, 2.0], [0.0, 1.0], [0.0, 0.0]])
)
# content: i0 = [1, 0], i1 = [0, 1], i2 = [1, 0] (already unit rows: normalising keeps them)
FEATURES = {"genre": torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])}
COLD = torch.tensor([2])
CATALOGUE = Catalogue(2, 3, FEATURES, COLD)
# u0 with positive i0 and negative i1; u1 with positive i1 and negative i0
BATCH = Batch(torch.tensor([0, 1]), torch.tensor([[0, 1], [1, 0]]))


def identity_encoder(encoder) -> None:
    """``encoder`` (a 2 → 2 → 2 ``ContentEncoder``) maps a non-negative row to itself:
    both layers the identity, no bias (LeakyReLU keeps non-negative values)."""
    with torch.no_grad():
        for layer in (encoder.layer1, encoder.layer2):
            layer.weight.copy_(torch.eye(2))
            layer.bias.zero_()


def linear(weight: list[list[float]]) -> nn.Linear:
    """A bias-free ``nn.Linear`` with ``weight`` (out × in)."""
    layer = nn.Linear(len(weight[0]), len(weight), bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
    return layer
