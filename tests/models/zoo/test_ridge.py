"""Ridge: its objective against hand-computed values, the closed form against its normal
equations and a plain solve, cold items mapped from their content, and a run end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Catalogue
from coldbrew.models.zoo.ridge import Ridge, build, fit_map, objective
from coldbrew.models.zoo.ridge_config import RidgeOptions
from coldbrew.training.run import load_run_dataset
from warm_teacher_support import planted_teacher


def test_objective_hand_computed():
    # residual (1·1 + 0·1 + 0.5 − 1, 0·1 + 1·1 + 0.5 − 2) = (0.5, −0.5): 0.25 + 0.25 = 0.5;
    # penalty 0.1 · (1² + 1²) = 0.2; total 0.7
    value = objective(
        torch.tensor([[1.0, 0.0], [0.0, 1.0]]),
        torch.tensor([[1.0], [2.0]]),
        torch.tensor([[1.0], [1.0]]),
        torch.tensor([0.5]),
        0.1,
    )
    assert value.item() == pytest.approx(0.7)


def test_fit_map_hand_computed():
    # x = (0, 1, 2), v = (1, 3, 5): centred (−1, 0, 1) and (−2, 0, 2); x̃ᵀx̃ = 2, x̃ᵀṽ = 4;
    # λ = 2: W = 4 / (2 + 2) = 1; b = mean(v) − mean(x)·W = 3 − 1 = 2
    weights, bias = fit_map(
        torch.tensor([[0.0], [1.0], [2.0]]), torch.tensor([[1.0], [3.0], [5.0]]), 2.0
    )
    assert weights.item() == pytest.approx(1.0) and bias.item() == pytest.approx(2.0)


def random_problem(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    content = torch.randn(40, 6, generator=generator, dtype=torch.float64)
    targets = torch.randn(40, 3, generator=generator, dtype=torch.float64) + 2.0
    return content, targets


def test_the_closed_form_zeroes_the_gradient():
    content, targets = random_problem()
    weights, bias = fit_map(content, targets, 0.7)
    weights.requires_grad_(True)
    bias.requires_grad_(True)
    objective(content, targets, weights, bias, 0.7).backward()
    assert weights.grad.abs().max() < 1e-9 and bias.grad.abs().max() < 1e-9


def test_the_closed_form_equals_a_plain_solve_with_an_unpenalised_intercept():
    content, targets = random_problem(1)
    lam = 0.7
    design = np.hstack([content.numpy(), np.ones((40, 1))])
    penalty = np.diag([lam] * 6 + [0.0])
    solution = np.linalg.solve(design.T @ design + penalty, design.T @ targets.numpy())
    weights, bias = fit_map(content, targets, lam)
    np.testing.assert_allclose(weights.numpy(), solution[:6], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bias.numpy(), solution[6], rtol=1e-9, atol=1e-12)


def small_ridge(**options):
    config = make_config(
        {"model": "ridge", "data": "synthetic:small", "device": "cpu", "backbone_dim": 8, **options}
    )
    dataset = load_run_dataset(config)
    teacher = planted_teacher(dataset, 8)
    return build(dataset, config, teacher), dataset, teacher


@pytest.mark.parametrize("map_warm", [False, True])
def test_cold_items_are_mapped_from_content_warm_items_keep_the_backbone(map_warm):
    model, dataset, teacher = small_ridge(ridge_lambda=3.0, map_warm=map_warm)
    warm, cold = torch.from_numpy(dataset.warm_items), torch.from_numpy(dataset.cold_items)
    content = torch.nn.functional.normalize(dataset.features["content"].float(), dim=1)
    weights, bias = fit_map(content[warm], teacher.items[warm], 3.0)
    items = model.item_embeddings()
    torch.testing.assert_close(items[cold], content[cold] @ weights + bias)
    expected_warm = content[warm] @ weights + bias if map_warm else teacher.items[warm]
    torch.testing.assert_close(items[warm], expected_warm)
    torch.testing.assert_close(model.user_embeddings(), teacher.users)
    assert items[cold].abs().sum() > 0


def test_no_dense_block_is_an_error():
    from coldbrew.data.dataset import WordIds

    words = WordIds(torch.tensor([0]), torch.tensor([0]), num_words=1)
    with pytest.raises(ColdbrewError, match="ridge maps dense item feature blocks"):
        Ridge(
            Catalogue(3, 2, {"text": words}, torch.tensor([1])), None, RidgeOptions(backbone_dim=4)
        )


def test_coldbrew_train_runs_ridge_end_to_end(tmp_path, monkeypatch):
    from coldbrew.cli import main

    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    argv = ["train", "--model", "ridge", "--data", "synthetic:small", "--backbone-dim", "8"]
    argv += ["--backbone-epochs", "2", "--ridge-lambda", "5", "--quiet", "--device", "cpu"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["ridge"]["ridge_lambda"] == 5.0
    assert 0 < results["metrics"]["val"]["cold"]["recall@20"] <= 1
    # the backbone it fitted on was trained for this run: its seconds are the run's too
    assert results["timing"]["backbone_seconds"] > 0
