"""Content KNN's vectors against a hand-computed case and a plain per-item loop, classic and
around the ridge map (``residual``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Catalogue
from coldbrew.models.zoo import content_knn
from coldbrew.models.zoo.content_knn import build, neighbor_vectors
from coldbrew.models.zoo.knn_config import KNNOptions
from coldbrew.models.zoo.ridge import fit_map
from coldbrew.training.run import load_run_dataset
from warm_teacher_support import planted_teacher


def test_neighbor_vectors_hand_computed():
    # query (1, 0); candidates (1, 0), (0, 1), (0.6, 0.8): cosines 1, 0, 0.6; k = 2 keeps 1, 0.6
    # softmax((1, 0.6) / 1) = (1 / (1 + e^-0.4), ·) = (0.598688, 0.401312)
    # 0.598688·(1, 0) + 0.401312·(2, 2) = (1.401312, 0.802625)
    vectors = neighbor_vectors(
        torch.tensor([[1.0, 0.0]]),
        torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]),
        torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]]),
        neighbors=2,
        temperature=1.0,
    )
    assert torch.allclose(vectors, torch.tensor([[1.401312, 0.802625]]), atol=1e-6)


def loop_reference(queries, candidates, vectors, neighbors, temperature):
    rows = []
    for query in queries:
        similarities = [float(query @ candidate) for candidate in candidates]
        nearest = sorted(range(len(candidates)), key=lambda j: -similarities[j])[:neighbors]
        weights = torch.softmax(torch.tensor([similarities[j] for j in nearest]) / temperature, 0)
        rows.append(sum(w * vectors[j] for w, j in zip(weights, nearest, strict=True)))
    return torch.stack(rows)


def test_neighbor_vectors_equal_a_plain_loop(monkeypatch):
    monkeypatch.setattr(content_knn, "CHUNK", 7)  # several chunks and a ragged last one
    generator = torch.Generator().manual_seed(3)
    queries = F.normalize(torch.randn(30, 6, generator=generator), dim=1)
    candidates = F.normalize(torch.randn(40, 6, generator=generator), dim=1)
    vectors = torch.randn(40, 5, generator=generator)
    expected = loop_reference(queries, candidates, vectors, 4, 0.2)
    actual = neighbor_vectors(queries, candidates, vectors, neighbors=4, temperature=0.2)
    torch.testing.assert_close(actual, expected)


def small_knn(**options):
    config = make_config(
        {"model": "knn", "data": "synthetic:small", "device": "cpu", "backbone_dim": 8, **options}
    )
    dataset = load_run_dataset(config)
    teacher = planted_teacher(dataset, 8)
    return build(dataset, config, teacher), dataset, teacher


def test_model_vectors_warm_from_the_backbone_cold_from_warm_neighbours():
    model, dataset, teacher = small_knn()
    warm, cold = torch.from_numpy(dataset.warm_items), torch.from_numpy(dataset.cold_items)
    content = F.normalize(F.normalize(dataset.features["content"].float(), dim=1), dim=1)
    items = model.item_embeddings()
    torch.testing.assert_close(items[warm], teacher.items[warm])
    expected = loop_reference(content[cold], content[warm], teacher.items[warm], 100, 0.05)
    torch.testing.assert_close(items[cold], expected)
    torch.testing.assert_close(model.user_embeddings(), teacher.users)


def test_residual_borrows_the_neighbours_residuals_around_the_ridge_map():
    # r(x) = xW + b fitted on the warm items; cold: r(x_c) + ρ · (the neighbours' residuals'
    # softmax average), every piece computed apart from the model
    model, dataset, teacher = small_knn(residual=0.7, ridge_lambda=2.0, neighbors=5)
    warm, cold = torch.from_numpy(dataset.warm_items), torch.from_numpy(dataset.cold_items)
    joined = F.normalize(dataset.features["content"].float(), dim=1)  # one block
    weights, bias = fit_map(joined[warm], teacher.items[warm], 2.0)
    residuals = teacher.items[warm] - (joined[warm] @ weights + bias)
    unit = F.normalize(joined, dim=1)
    borrowed = loop_reference(unit[cold], unit[warm], residuals, 5, 0.05)
    items = model.item_embeddings()
    torch.testing.assert_close(items[cold], joined[cold] @ weights + bias + 0.7 * borrowed)
    torch.testing.assert_close(items[warm], teacher.items[warm])
    assert not torch.allclose(items[cold], small_knn(neighbors=5)[0].item_embeddings()[cold])


def test_a_vanishing_residual_is_ridge():
    from coldbrew.models.zoo import ridge

    model, dataset, teacher = small_knn(residual=1e-12, ridge_lambda=3.0)
    ridge_config = make_config(
        {"model": "ridge", "data": "synthetic:small", "device": "cpu", "backbone_dim": 8}
    )
    ridge_config.model_options.ridge_lambda = 3.0
    expected = ridge.build(dataset, ridge_config, teacher).item_embeddings()
    torch.testing.assert_close(model.item_embeddings(), expected)


@pytest.mark.parametrize("residual", [0.0, 0.5])
def test_new_items_from_raw_features_match_the_catalogue(residual):
    model, dataset, _ = small_knn(residual=residual)
    cold = torch.from_numpy(dataset.cold_items[:5])
    raw = dataset.features["content"][cold].float() * 3.0  # the scale is normalised away
    torch.testing.assert_close(model.encode_items(features=raw), model.item_embeddings()[cold])


def test_no_dense_block_is_an_error():
    from coldbrew.data.dataset import WordIds

    words = WordIds(torch.tensor([0]), torch.tensor([0]), num_words=1)
    with pytest.raises(ColdbrewError, match="dense item feature blocks"):
        content_knn.ContentKNN(
            Catalogue(3, 2, {"text": words}, torch.tensor([1])), None, KNNOptions(backbone_dim=4)
        )
