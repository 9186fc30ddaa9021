"""Content popularity: its objective against hand-computed values, the fitted map as ridge's
closed form on log counts, warm items by their counts and cold ones by their content, new
items as cold ones, and a run end to end."""

from __future__ import annotations

import json
import math

import pytest
import torch

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.models.zoo.popularity import ContentPopularity, build, objective
from coldbrew.training.run import load_run_dataset


def test_objective_hand_computed():
    # log1p(counts) = (log 1, log 2) = (0, 0.6931); predictions x·w + b = (1·0.5 + 0.25,
    # 1·0.5 + 0.25) = (0.75, 0.75); residuals (0.75, 0.0569): 0.5625 + 0.003234 = 0.565734;
    # penalty 2 · (0.5² + 0²) = 0.5; total 1.065734
    value = objective(
        torch.tensor([[1.0, 0.0], [1.0, 0.0]]),
        torch.tensor([0.0, 1.0]),
        torch.tensor([0.5, 0.0]),
        0.25,
        2.0,
    )
    assert value.item() == pytest.approx(0.5625 + (0.75 - math.log(2)) ** 2 + 0.5)


def planted(lam: float = 0.5) -> ContentPopularity:
    # items 0-4 warm with counts 0, 1, 3, 7, 15 (log1p 0, log 2, log 4, log 8, log 16); 5, 6 cold
    generator = torch.Generator().manual_seed(0)
    features = {"content": torch.randn(7, 3, generator=generator, dtype=torch.float64)}
    counts = torch.tensor([0.0, 1.0, 3.0, 7.0, 15.0, 0.0, 0.0])
    return ContentPopularity(features, counts, torch.tensor([5, 6]), 4, ridge_lambda=lam)


def test_the_fitted_map_zeroes_the_gradient_of_the_objective():
    model = planted()
    warm = ~model.cold_mask
    content = model.content[warm].double()
    counts = torch.expm1(model.observed[warm]).double()
    weights = model.weights.double().clone().requires_grad_(True)
    bias = model.bias.double().clone().requires_grad_(True)
    objective(content, counts, weights, bias, 0.5).backward()
    assert weights.grad.abs().max() < 1e-4 and bias.grad.abs().max() < 1e-4


def test_warm_items_by_their_counts_cold_items_by_their_content():
    model = planted()
    scores = model.item_embeddings()[:, 0]
    expected_warm = torch.log(torch.tensor([1.0, 2.0, 4.0, 8.0, 16.0]))
    torch.testing.assert_close(scores[:5], expected_warm)
    torch.testing.assert_close(scores[5:], model.content[5:] @ model.weights + model.bias)
    assert scores[5] != scores[6]  # content tells the cold items apart
    torch.testing.assert_close(model.user_embeddings(), torch.ones(4, 1))
    # every user gets the same ranking
    ranked = model.score_users(torch.arange(4))
    assert torch.equal(ranked, ranked[:1].expand(4, -1))


def test_a_new_item_scores_as_a_cold_item_with_its_content():
    model = planted()
    raw = torch.randn(2, 3) * 4.0  # raw blocks: normalised as the dataset's are
    torch.testing.assert_close(
        model.encode_items(features=raw)[:, 0],
        torch.nn.functional.normalize(raw, dim=1) @ model.weights + model.bias,
    )
    with pytest.raises(ColdbrewError, match="feature vector"):
        model.encode_items(texts=["a film"])


def test_the_builder_counts_training_interactions():
    config = make_config({"model": "popularity", "data": "synthetic:small", "device": "cpu"})
    dataset = load_run_dataset(config)
    model = build(dataset, config)
    warm = torch.from_numpy(dataset.warm_items)
    counts = torch.tensor(dataset.train.sum(0), dtype=torch.float32).flatten()
    torch.testing.assert_close(model.item_embeddings()[warm, 0], torch.log1p(counts[warm]))
    assert model.user_embeddings().shape == (dataset.num_users, 1)


def test_coldbrew_train_runs_popularity_end_to_end(tmp_path):
    from coldbrew.cli import main

    argv = ["train", "--model", "popularity", "--data", "synthetic:small", "--quiet"]
    argv += ["--ridge-lambda", "3", "--device", "cpu", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["popularity"]["ridge_lambda"] == 3.0
    assert results["metrics"]["val"]["cold"]["cold_signal"] == 1.0
    assert 0 < results["metrics"]["val"]["cold"]["recall@20"] <= 1
