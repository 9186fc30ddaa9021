"""MARec (EASE backbone, closed form): its objective against hand-computed values, the closed
form against its normal equations and a plain per-column solve, MARec's block weights against a
plain weighted regression, cold columns from content, and a run end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.models.zoo.marec import (
    MARec,
    alignment_smoother,
    block_weights,
    build,
    ease_weights,
    keep_nearest,
    objective,
    sharpened_similarity,
)
from coldbrew.training.run import load_run_dataset


def test_objective_hand_computed():
    # X = [[1, 1, 0], [0, 1, 0]] (item 2 cold); B: b_01 = b_10 = 0.5, b_12 = 1; G: g_02 = 1
    # XB = [[0.5, 0.5, 1], [0.5, 0, 1]]; X − XB = [[0.5, 0.5, −1], [−0.5, 1, −1]]:
    #   0.25 + 0.25 + 1 + 0.25 + 1 + 1 = 3.75
    # λ‖B‖² = 0.1 · (0.25 + 0.25 + 1) = 0.15
    # cold column 2: XB = (1, 1), XG = (1, 0): β · (0² + 1²) = 2 · 1 = 2;  total 5.9
    interactions = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    weights = torch.zeros(3, 3)
    weights[0, 1] = weights[1, 0] = 0.5
    weights[1, 2] = 1.0
    similarity = torch.zeros(3, 3)
    similarity[0, 2] = 1.0
    cold = torch.tensor([False, False, True])
    value = objective(interactions, weights, similarity, cold, lam=0.1, beta=2.0)
    assert value.item() == pytest.approx(5.9)


def test_ease_weights_hand_computed():
    # XᵀX = [[2, 1], [1, 1]], λ = 1: P = [[3, 1], [1, 2]]⁻¹ = [[2, −1], [−1, 3]] / 5
    # b_01 = −P_01 / P_11 = (1/5) / (3/5) = 1/3; b_10 = −P_10 / P_00 = (1/5) / (2/5) = 1/2
    weights = ease_weights(torch.tensor([[2.0, 1.0], [1.0, 1.0]], dtype=torch.float64), 1.0)
    torch.testing.assert_close(weights, torch.tensor([[0.0, 1 / 3], [1 / 2, 0.0]]).double())


def random_problem(seed: int = 0):
    """Binary clicks on 8 warm items of 11 (items 3, 7 and 10 cold), a content similarity."""
    generator = torch.Generator().manual_seed(seed)
    clicks = (torch.rand(30, 11, generator=generator) < 0.35).double()
    cold = torch.zeros(11, dtype=torch.bool)
    cold[[3, 7, 10]] = True
    clicks[:, cold] = 0
    similarity = torch.rand(11, 11, generator=generator, dtype=torch.float64)
    return clicks, cold, similarity


def closed_form(clicks, cold, similarity, lam, beta):
    """The model's solution assembled as the model assembles it: EASE on warm columns, the
    smoother times ``G`` on cold ones, zero rows for cold items."""
    warm = torch.nonzero(~cold).flatten()
    gram = clicks[:, warm].T @ clicks[:, warm]
    weights = torch.zeros(11, 11, dtype=torch.float64)
    weights[warm[:, None], warm[None, :]] = ease_weights(gram, lam)
    cold_index = torch.nonzero(cold).flatten()
    smoother = alignment_smoother(gram, lam, beta)
    weights[warm[:, None], cold_index[None, :]] = smoother @ similarity[warm][:, cold_index]
    return weights


def test_the_closed_form_zeroes_the_gradient_off_the_diagonal():
    clicks, cold, similarity = random_problem()
    weights = closed_form(clicks, cold, similarity, 2.0, 3.0).requires_grad_(True)
    objective(clicks, weights, similarity, cold, 2.0, 3.0).backward()
    off_diagonal = ~torch.eye(11, dtype=torch.bool)
    assert weights.grad[off_diagonal].abs().max() < 1e-9
    assert torch.equal(weights.diagonal().detach(), torch.zeros(11, dtype=torch.float64))


def test_the_closed_form_equals_a_plain_per_column_solve():
    clicks, cold, similarity = random_problem(1)
    lam, beta = 2.0, 3.0
    expected = np.zeros((11, 11))
    x, g = clicks.numpy(), similarity.numpy()
    for j in range(11):
        others = [i for i in range(11) if i != j]  # b_jj = 0: solve for the rest
        rest = x[:, others]
        weight = beta if cold[j] else 0.0  # the alignment term pulls cold columns only
        system = (1 + weight) * rest.T @ rest + lam * np.eye(10)
        target = rest.T @ (x[:, j] + weight * (x @ g[:, j]))
        expected[others, j] = np.linalg.solve(system, target)
    actual = closed_form(clicks, cold, similarity, lam, beta)
    np.testing.assert_allclose(actual.numpy(), expected, atol=1e-10)


def test_block_weights_equal_a_plain_weighted_regression():
    clicks, _, similarity = random_problem(2)
    other = similarity.T.clone()
    mu = block_weights(clicks, [similarity, other], negative_weight=0.3)
    columns = []
    for block in (similarity, other):
        off = block.clone()
        off.fill_diagonal_(0)
        columns.append((clicks @ off).numpy().ravel())
    design = np.stack([*columns, np.ones(clicks.numel())], axis=1)
    target = clicks.numpy().ravel()
    root = np.sqrt(0.3 + 0.7 * target)  # weight 1 on clicks, 0.3 elsewhere
    solution = np.linalg.lstsq(design * root[:, None], target * root, rcond=None)[0]
    np.testing.assert_allclose(mu.numpy(), solution[:2], rtol=1e-5)


def test_keep_nearest_hand_computed():
    # column 0 keeps 0.9 and 0.5 (rows 0, 2); column 1 keeps 0.8 and 0.7 (rows 1, 2)
    similarity = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.5, 0.7]])
    expected = torch.tensor([[0.9, 0.0], [0.0, 0.8], [0.5, 0.7]])
    torch.testing.assert_close(keep_nearest(similarity, 2), expected)
    assert torch.equal(keep_nearest(similarity, 0), similarity)


def test_sharpened_similarity_hand_computed():
    # column 0 keeps rows 0 and 2 (0.9, 0.5): softmax((0.9, 0.5) / 0.2) = (e², 1) / (e² + 1)
    #   = (0.880797, 0.119203); column 1 keeps rows 1 and 2 (0.8, 0.7): (e^0.5, 1) / (e^0.5 + 1)
    #   = (0.622459, 0.377541)
    similarity = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.5, 0.7]])
    expected = torch.tensor([[0.880797, 0.0], [0.0, 0.622459], [0.119203, 0.377541]])
    torch.testing.assert_close(sharpened_similarity(similarity, 2, 0.2), expected)
    every = sharpened_similarity(similarity, 0, 0.2)  # 0: all rows
    assert (every > 0).all() and torch.allclose(every.sum(0), torch.ones(2))


def small_marec(**options):
    config = make_config({"model": "marec", "data": "synthetic:small", "device": "cpu", **options})
    dataset = load_run_dataset(config)
    return build(dataset, config), dataset


def test_model_scores_are_ease_on_warm_columns_and_content_on_cold_ones():
    model, dataset = small_marec(ease_lambda=5.0, alignment=2.0, neighbors=4)
    warm, cold = torch.from_numpy(dataset.warm_items), torch.from_numpy(dataset.cold_items)
    clicks = torch.from_numpy(np.asarray(dataset.train.todense(), dtype=np.float64))
    content = torch.nn.functional.normalize(dataset.features["content"].double(), dim=1)
    gram = clicks[:, warm].T @ clicks[:, warm]
    similarity = model.block_weights.double()[0] * (content[warm] @ content[cold].T)
    similarity = keep_nearest(similarity, 4)
    assert (similarity != 0).sum(0).eq(4).all()  # four warm neighbours per cold item
    scores = model.score_users(torch.arange(dataset.num_users)).double()
    torch.testing.assert_close(
        scores[:, warm], clicks[:, warm] @ ease_weights(gram, 5.0), atol=1e-4, rtol=1e-4
    )
    cold_scores = clicks[:, warm] @ alignment_smoother(gram, 5.0, 2.0) @ similarity
    torch.testing.assert_close(scores[:, cold], cold_scores, atol=1e-4, rtol=1e-4)
    assert scores[:, cold].abs().sum() > 0


def test_a_similarity_temperature_sharpens_the_cold_columns():
    model, dataset = small_marec(
        ease_lambda=5.0, alignment=2.0, neighbors=4, similarity_temperature=0.1
    )
    warm, cold = torch.from_numpy(dataset.warm_items), torch.from_numpy(dataset.cold_items)
    clicks = torch.from_numpy(np.asarray(dataset.train.todense(), dtype=np.float64))
    content = torch.nn.functional.normalize(dataset.features["content"].double(), dim=1)
    gram = clicks[:, warm].T @ clicks[:, warm]
    sign = model.block_weights.double()[0].sign()  # one block: μ scaled to ±1
    similarity = sharpened_similarity(sign * (content[warm] @ content[cold].T), 4, 0.1)
    scores = model.score_users(torch.arange(dataset.num_users)).double()
    cold_scores = clicks[:, warm] @ alignment_smoother(gram, 5.0, 2.0) @ similarity
    torch.testing.assert_close(scores[:, cold], cold_scores, atol=1e-4, rtol=1e-4)
    linear = small_marec(ease_lambda=5.0, alignment=2.0, neighbors=4)[0]
    assert not torch.allclose(
        scores[:, cold].float(), linear.score_users(torch.arange(dataset.num_users))[:, cold]
    )


def test_no_dense_block_or_a_huge_catalogue_is_an_error():
    from coldbrew.data.dataset import WordIds

    words = WordIds(torch.tensor([0]), torch.tensor([0]), num_words=1)
    with pytest.raises(ColdbrewError, match="marec compares dense item feature blocks"):
        MARec({"text": words}, torch.zeros(3, 2), torch.tensor([1]))
    with pytest.raises(ColdbrewError, match="30001 items is more than 30000"):
        MARec({}, torch.zeros(1, 30_001), torch.tensor([1]))


def test_coldbrew_train_runs_marec_end_to_end(tmp_path):
    from coldbrew.cli import main

    argv = ["train", "--model", "marec", "--data", "synthetic:small", "--ease-lambda", "20"]
    assert main([*argv, "--quiet", "--device", "cpu", "--out", str(tmp_path / "run")]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["marec"]["ease_lambda"] == 20.0
    assert 0 < results["metrics"]["val"]["cold"]["recall@20"] <= 1
