"""ALDI's loss terms against hand-computed values; scoring splits warm (teacher) from cold."""

from __future__ import annotations

import torch

from coldbrew.config import make_config
from coldbrew.models.zoo.aldi import (
    bpr,
    build,
    identification_alignment,
    item_weights,
    ranking_alignment,
    rating_alignment,
)
from coldbrew.training.run import load_run_dataset
from warm_teacher_support import planted_teacher


def test_item_weights_hand_computed():
    # a = 0.01, M = 3: tanh(min(0, 3)) = 0, tanh(min(1, 3)) = 0.761594, tanh(min(10, 3)) = 0.995055
    weights = item_weights(torch.tensor([0, 100, 1000]), slope=0.01, cap=3.0)
    assert torch.allclose(weights, torch.tensor([0.0, 0.761594, 0.995055]), atol=1e-6)


def test_bpr_hand_computed():
    # scores (2 | 1, 3): softplus(-(2 - 1)) = 0.313262, softplus(-(2 - 3)) = 1.313262; mean 0.813262
    assert torch.isclose(bpr(torch.tensor([[2.0, 1.0, 3.0]])), torch.tensor(0.813262), atol=1e-6)


def test_rating_alignment_hand_computed():
    # row 1: |2 - 1| + mean(|1 - 1|, |3 - 1|) = 1 + 1 = 2; row 2: |0 - 0| + mean(1, 1) = 1; mean 1.5
    teacher = torch.tensor([[2.0, 1.0, 3.0], [0.0, 0.0, 0.0]])
    student = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, -1.0]])
    assert torch.isclose(rating_alignment(teacher, student), torch.tensor(1.5))


def test_ranking_alignment_hand_computed():
    # teacher (1 | 1, 0): targets σ(0) = 0.5 and σ(1) = 0.731059; student (2 | 0, 2): logits 2, 0
    # BCE(x, t) = softplus(x) - t·x: BCE(2, 0.5) = 2.126928 - 1 = 1.126928; BCE(0, ·) = ln 2
    # = 0.693147; weight 0.5: 0.5 · (1.126928 + 0.693147) / 2 = 0.455019
    loss = ranking_alignment(
        torch.tensor([[1.0, 1.0, 0.0]]), torch.tensor([[2.0, 0.0, 2.0]]), torch.tensor([0.5])
    )
    assert torch.isclose(loss, torch.tensor(0.455019), atol=1e-6)


def test_identification_alignment_hand_computed():
    # teacher items (1, 0) | (1, 0), (0, 1): 1 - mean(1, 0) = 0.5, target σ(0.5) = 0.622459
    # student items (2, 0) | (0, 1), (1, 0): 4 - mean(0, 2) = 3
    # BCE(3, 0.622459) = softplus(3) - 0.622459·3 = 3.048587 - 1.867378 = 1.181209; weight 2
    teacher = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
    student = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]]])
    loss = identification_alignment(teacher, student, torch.tensor([2.0]))
    assert torch.isclose(loss, torch.tensor(2.362419), atol=1e-5)


def test_warm_items_scored_by_the_teacher_and_cold_by_the_student():
    config = make_config(
        {
            "model": "aldi",
            "data": "synthetic:small",
            "device": "cpu",
            "backbone_dim": 8,
            "hidden": 16,
        }
    )
    dataset = load_run_dataset(config)
    teacher = planted_teacher(dataset, 8)
    model = build(dataset, config, teacher)
    warm, cold = torch.from_numpy(dataset.warm_items), torch.from_numpy(dataset.cold_items)
    with torch.no_grad():
        scores = model.score_users(torch.arange(4))
        torch.testing.assert_close(scores[:, warm], teacher.users[:4] @ teacher.items[warm].T)
        student_users = model.user_student(teacher.users[:4])
        torch.testing.assert_close(scores[:, cold], student_users @ model.item_student(cold).T)


def test_item_weighting_off_weighs_every_item_one():
    config = make_config(
        {"model": "aldi", "data": "synthetic:small", "device": "cpu", "backbone_dim": 8}
    )
    dataset = load_run_dataset(config)
    config.model_options.item_weighting = False
    model = build(dataset, config, planted_teacher(dataset, 8))
    assert torch.equal(model.item_weights, torch.ones(dataset.num_items))
