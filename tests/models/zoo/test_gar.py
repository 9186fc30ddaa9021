"""GAR's two losses against hand-computed values; its players' gradients stay apart."""

from __future__ import annotations

import torch

from coldbrew.config import make_config
from coldbrew.models.base import Batch
from coldbrew.models.zoo.gar import build, generator_loss, recommender_loss
from coldbrew.training.run import load_run_dataset
from warm_teacher_support import planted_teacher


def test_recommender_loss_hand_computed():
    # α = 0.5, positive 2, negatives (1, 0), generated 1:
    # margins 2 - 0.5·1 - 0.5·1 = 1 and 2 - 0.5·0 - 0.5·1 = 1.5
    # softplus(-1) = ln(1 + e^-1) = 0.313262, softplus(-1.5) = 0.201413; mean 0.257337
    loss = recommender_loss(
        torch.tensor([2.0]), torch.tensor([[1.0, 0.0]]), torch.tensor([1.0]), rank_weight=0.5
    )
    assert torch.isclose(loss, torch.tensor(0.257337), atol=1e-6)


def test_generator_loss_hand_computed():
    # adversarial: generated scores (1, 0) against real (1, 2): softplus(-(1 - 1)) = ln 2 =
    # 0.693147, softplus(-(0 - 2)) = ln(1 + e^2) = 2.126928; mean 1.410038
    # similarity: |(1, 2) - (0, 0)|₁ = 3, |(0, 0) - (1, -1)|₁ = 2; mean 2.5
    adversarial, similarity = generator_loss(
        torch.tensor([1.0, 0.0]),
        torch.tensor([1.0, 2.0]),
        torch.tensor([[1.0, 2.0], [0.0, 0.0]]),
        torch.tensor([[0.0, 0.0], [1.0, -1.0]]),
        similarity_weight=0.1,
    )
    assert torch.isclose(adversarial, torch.tensor(1.410038), atol=1e-6)
    assert torch.isclose(similarity, torch.tensor(2.5))


def small_gar(**options):
    config = make_config(
        {"model": "gar", "data": "synthetic:small", "device": "cpu", "backbone_dim": 8, **options}
    )
    dataset = load_run_dataset(config)
    torch.manual_seed(0)
    return build(dataset, config, planted_teacher(dataset, 8)), dataset


def test_each_player_moves_only_by_its_own_term():
    model, dataset = small_gar(hidden=16, tower_dim=8)
    batch = Batch(torch.arange(16), torch.from_numpy(dataset.warm_items[:48]).view(16, 3))
    terms = model(batch).terms
    generator = list(model.generator.parameters())
    towers = [*model.user_tower.parameters(), *model.item_tower.parameters()]
    # the recommender's term reaches the towers only; the adversarial term the generator only
    assert all(
        g is None for g in torch.autograd.grad(terms["recommender"], generator, allow_unused=True)
    )
    assert all(
        g is not None for g in torch.autograd.grad(terms["recommender"], towers, allow_unused=True)
    )
    assert all(
        g is None for g in torch.autograd.grad(terms["adversarial"], towers, allow_unused=True)
    )
    assert all(g is not None for g in torch.autograd.grad(terms["adversarial"], generator))


def test_warm_items_keep_their_backbone_vector_and_cold_ones_come_from_content():
    model, dataset = small_gar(hidden=16, tower_dim=8)
    with torch.no_grad():
        items = model.item_embeddings()
        warm = torch.from_numpy(dataset.warm_items)
        cold = torch.from_numpy(dataset.cold_items)
        standardized = model.standardized_backbone()[1]
        torch.testing.assert_close(items[warm], model.item_tower(standardized[warm]))
        torch.testing.assert_close(items[cold], model.item_tower(model.generator(cold)))


def test_tower_inputs_are_the_backbone_standardized_on_warm_items():
    model, dataset = small_gar(hidden=16, tower_dim=8)
    warm = torch.from_numpy(dataset.warm_items)
    cold = torch.from_numpy(dataset.cold_items)
    with torch.no_grad():
        model.teacher_items.mul_(0.01)  # ALS-like: item vectors ~100 times smaller than users'
        model.teacher_items[cold] = 1e3  # cold rows hold no trained vector: they must not count
        users, items = model.standardized_backbone()
    # every dimension of the warm items (and of the users) has mean 0 and std 1
    torch.testing.assert_close(items[warm].mean(0), torch.zeros(8), atol=1e-5, rtol=0)
    torch.testing.assert_close(items[warm].std(0, correction=0), torch.ones(8))
    torch.testing.assert_close(users.mean(0), torch.zeros(8), atol=1e-5, rtol=0)
    torch.testing.assert_close(users.std(0, correction=0), torch.ones(8), atol=1e-4, rtol=0)
    # an affine map of each dimension: warm item 0 is (x - mean) / std of its column
    column = model.teacher_items[warm, 0]
    expected = (column[0] - column.mean()) / column.std(correction=0)
    torch.testing.assert_close(items[warm[0], 0], expected)
