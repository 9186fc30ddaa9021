"""Heater's mixture of experts, randomized training and losses by hand."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from coldbrew.models.zoo.heater import Heater
from coldbrew.models.zoo.heater_config import HeaterOptions
from zoo_support import BATCH, CATALOGUE, TEACHER


def model(randomize: float) -> Heater:
    options = HeaterOptions(
        backbone_dim=2, dim=2, hidden=2, experts=2, randomize=randomize, similarity_weight=0.1
    )
    built = Heater(CATALOGUE, TEACHER, options)
    with torch.no_grad():  # experts and gate ignore the content: constant outputs
        built.experts.weight.zero_()
        built.experts.bias.copy_(torch.tensor([2.0, 0.0, 0.0, 4.0]))  # E1 = [2, 0], E2 = [0, 4]
        built.gate.weight.zero_()
        built.gate.bias.copy_(torch.tensor([math.log(3.0), 0.0]))  # softmax: [0.75, 0.25]
    built.user_tower, built.item_tower = nn.Identity(), nn.Identity()
    return built


def test_the_mixture_weighs_the_experts_by_the_gate():
    # 0.75·[2, 0] + 0.25·[0, 4] = [1.5, 1] for every item
    expected = torch.tensor([[1.5, 1.0]] * 3)
    torch.testing.assert_close(model(0.0).content_vectors(), expected)


def test_loss_without_randomization_is_the_similarity_constraint_alone():
    output = model(randomize=0.0)(BATCH)
    # warm items enter as the backbone's vectors, towers are identities: predicted = backbone
    assert output.terms["regression"].item() == pytest.approx(0.0)
    # ‖C − V‖²: i0 (1.5−1)² + (1−2)² = 1.25; i1 1.5² + 0² = 2.25; occurrences i0 i1 i1 i0
    # (1.25 + 2.25 + 2.25 + 1.25) / 4 = 1.75
    assert output.terms["similarity"].item() == pytest.approx(1.75)
    assert output.total.item() == pytest.approx(0.1 * 1.75)


def test_loss_with_every_item_swapped_for_its_content_vector():
    output = model(randomize=1.0)(BATCH)
    # every item is C = [1.5, 1]: u0·C = 1.5, u1·C = 1
    # pairs (u0 i0, u0 i1, u1 i1, u1 i0) against backbone 1, 0, 1, 2:
    # 0.5² + 1.5² + 0² + 1² = 0.25 + 2.25 + 0 + 1 = 3.5, mean 0.875
    assert output.terms["regression"].item() == pytest.approx(0.875)
    assert output.total.item() == pytest.approx(0.875 + 0.1 * 1.75)


def test_warm_items_are_scored_from_the_backbone_and_cold_ones_from_content():
    expected = torch.tensor([[1.0, 2.0], [0.0, 1.0], [1.5, 1.0]])
    torch.testing.assert_close(model(randomize=1.0).item_embeddings(), expected)


def test_a_new_item_is_scored_from_the_content_transformation():
    # the constant mixture [1.5, 1] through the identity item tower, whatever the content
    new = model(randomize=0.0).encode_items(features=torch.tensor([[0.0, 5.0], [1.0, 1.0]]))
    torch.testing.assert_close(new, torch.tensor([[1.5, 1.0], [1.5, 1.0]]))
