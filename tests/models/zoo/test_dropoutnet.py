"""DropoutNet's score regression by hand: towers replaced by known linear maps."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from coldbrew.models.zoo.dropoutnet import DropoutNet
from coldbrew.models.zoo.dropoutnet_config import DropoutNetOptions
from zoo_support import BATCH, CATALOGUE, TEACHER, identity_encoder, linear


def model(dropout: float) -> DropoutNet:
    built = DropoutNet(CATALOGUE, TEACHER, DropoutNetOptions(backbone_dim=2, dim=2, hidden=2))
    built.dropout = dropout
    identity_encoder(built.content)  # content branch = content
    built.user_tower = nn.Identity()  # f_U(u) = U_u
    # f_V(i) = keep_i · V_i + content_i: [pref (2), content (2)] -> their sum
    built.item_tower = linear([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    return built


def test_loss_with_preferences_kept():
    output = model(dropout=0.0)(BATCH)
    # f_V: i0 = [1, 2] + [1, 0] = [2, 2]; i1 = [0, 1] + [0, 1] = [0, 2]
    # predicted: u0·i0 = 2, u0·i1 = 0, u1·i1 = 2, u1·i0 = 2
    # backbone:  u0·i0 = 1, u0·i1 = 0, u1·i1 = 1, u1·i0 = 2
    # squared errors 1, 0, 1, 0: mean 0.5
    assert output.total.item() == pytest.approx(0.5)


def test_loss_with_every_preference_dropped():
    output = model(dropout=1.0)(BATCH)
    # f_V from content alone: i0 = [1, 0], i1 = [0, 1]
    # predicted: u0·i0 = 1, u0·i1 = 0, u1·i1 = 1, u1·i0 = 0; backbone 1, 0, 1, 2
    # squared errors 0, 0, 0, 4: mean 1
    assert output.terms["regression"].item() == pytest.approx(1.0)


def test_cold_items_are_scored_from_content_alone():
    # i0 = [2, 2], i1 = [0, 2] as above; i2 cold: [0, 0] + [1, 0] = [1, 0]
    expected = torch.tensor([[2.0, 2.0], [0.0, 2.0], [1.0, 0.0]])
    torch.testing.assert_close(model(dropout=0.5).item_embeddings(), expected)


def test_a_new_item_is_scored_from_content_alone():
    # raw [0, 2] normalised to [0, 1]; no preference: f_V = [0, 0] + [0, 1]
    new = model(dropout=0.0).encode_items(features=torch.tensor([[0.0, 2.0]]))
    torch.testing.assert_close(new, torch.tensor([[0.0, 1.0]]))


class Recording(nn.Module):
    """The item tower, noting which rows came with their preference part zeroed."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner, self.dropped = inner, []

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        self.dropped.append(inputs[:, :2].abs().sum(1) == 0)  # (n,) preference part all zero
        return self.inner(inputs)


def test_each_step_drops_about_that_fraction_of_warm_preferences():
    built = model(dropout=0.25)
    built.item_tower = Recording(built.item_tower)
    torch.manual_seed(0)
    for _ in range(400):
        built(BATCH)  # 2 warm items a step
    dropped = torch.cat(built.item_tower.dropped).float()
    # 800 draws of p = 0.25: standard deviation of the mean sqrt(0.25·0.75/800) ≈ 0.015
    assert len(dropped) == 800 and abs(dropped.mean().item() - 0.25) < 0.06
