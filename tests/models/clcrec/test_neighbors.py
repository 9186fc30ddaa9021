"""Neighbor graph and its loss against plain Python references (sets, sorted(), exp/sum/log)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.data.dataset import interactions_to_csr
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch
from coldbrew.models.clcrec import neighbor_info_nce as neighbor_info_nce_module
from coldbrew.models.clcrec.model import CLCRec
from coldbrew.models.clcrec.neighbors import (
    NeighborGraph,
    PaddedLists,
    common_items,
    distinct_ids,
    top_neighbors,
)
from coldbrew.registry import build_model
from coldbrew.training.run import train


def random_graph(seed: int = 0, num_users: int = 60, num_items: int = 40) -> sp.csr_matrix:
    """Sparse random interactions; users 0 and 1 have none, user 2 has an item nobody else has."""
    rng = np.random.default_rng(seed)
    users, items = np.nonzero(rng.random((num_users, num_items - 1)) < 0.08)
    keep = users >= 3
    users = np.concatenate([users[keep], [2]])
    items = np.concatenate([items[keep], [num_items - 1]])
    return interactions_to_csr(users, items, (num_users, num_items))


def reference_lists(train: sp.csr_matrix, keep: int, use: int, keep_common: int):
    """The rules, written plainly: sets of items, sorted() by (-count, id)."""
    items = [set(train[user].indices.tolist()) for user in range(train.shape[0])]
    neighbors, common = [], []
    for user, own in enumerate(items):
        shared = {other: len(own & items[other]) for other in range(len(items)) if other != user}
        ranked = sorted(
            (other for other, count in shared.items() if count > 0), key=lambda v: (-shared[v], v)
        )
        neighbors.append(ranked[:keep])
        used = ranked[:keep][:use]  # the first ``use`` of the kept neighbors
        counts = Counter(item for other in used for item in items[other] if item not in own)
        common.append(sorted(counts, key=lambda item: (-counts[item], item))[:keep_common])
    return neighbors, common


@pytest.mark.parametrize(
    ("keep", "use", "keep_common", "chunk_users", "dense_items"),
    [(5, 3, 4, 7, 3), (50, 10, 20, None, 256), (8, 8, 6, 1, 0), (4, 10, 3, 13, 40)],
)
def test_lists_equal_the_plain_python_reference(keep, use, keep_common, chunk_users, dense_items):
    train = random_graph(seed=keep)
    neighbors = top_neighbors(
        train, keep, chunk_users=chunk_users, dense_items=dense_items, progress=False
    )
    common = common_items(
        train, neighbors, use, keep_common, chunk_users=chunk_users, progress=False
    )
    expected_neighbors, expected_common = reference_lists(train, keep, use, keep_common)
    assert neighbors.to_lists() == expected_neighbors
    assert common.to_lists() == expected_common
    assert neighbors.ids.shape == (60, keep) and common.ids.shape == (60, keep_common)
    # users 0 and 1 have no items, so no neighbors and no common items
    assert neighbors.lengths[:2].tolist() == [0, 0] and common.lengths[:2].tolist() == [0, 0]


def test_ties_break_by_smaller_id():
    # user 0 shares one item with each of users 1..4; user 3 shares two
    train = interactions_to_csr(
        np.array([0, 0, 1, 2, 3, 3, 4]), np.array([0, 1, 0, 1, 0, 1, 0]), (5, 3)
    )
    neighbors = top_neighbors(train, 3, progress=False)
    assert neighbors.to_lists()[0] == [3, 1, 2]


def reference_loss(users, user_embedding, content, graph: NeighborGraph, temperature: float):
    """Per-user loops: distinct users, means with fallbacks, exp / sum / log."""
    distinct = list(dict.fromkeys(users.tolist()))
    anchor, positive = {}, {}
    for user in distinct:
        friends = graph.neighbors[user, : graph.neighbor_counts[user]].tolist()
        anchor[user] = (
            sum(user_embedding[f] for f in friends) / len(friends)
            if friends
            else user_embedding[user]
        )
        shared = graph.common_items[user, : graph.common_counts[user]].tolist()
        positive[user] = sum(content[i] for i in shared) / len(shared) if shared else anchor[user]
    total = 0.0
    for user in distinct:
        unit = anchor[user] / anchor[user].norm()
        scores = {
            other: torch.exp(unit @ (positive[other] / positive[other].norm()) / temperature)
            for other in distinct
        }
        total = total - torch.log(scores[user] / sum(scores.values()))
    return total / len(distinct)


def small_graph(num_users: int = 6) -> NeighborGraph:
    # user 0: no neighbors; user 1: neighbors but no common items; user 5: padding past its lengths
    neighbors = PaddedLists(
        np.array([[0, 0, 0], [2, 0, 0], [1, 3, 4], [2, 5, 0], [0, 1, 2], [4, 0, 0]]),
        np.array([0, 1, 3, 2, 3, 1]),
    )
    common = PaddedLists(
        np.array([[0, 0], [0, 0], [3, 1], [4, 0], [2, 5], [6, 0]]), np.array([0, 0, 2, 1, 2, 1])
    )
    return NeighborGraph(neighbors, common, use_neighbors=3)


def term(graph: NeighborGraph, users, user_embedding, content, temperature: float):
    """The term as a model computes it: distinct users, their common items' content, loss."""
    distinct, valid, common = graph.step(users, trim=True)
    return graph.loss(distinct, valid, user_embedding, content, common, temperature)


def test_loss_matches_plain_reference_value_and_gradients():
    torch.manual_seed(0)
    graph = small_graph()
    user_embedding = torch.randn(6, 4, requires_grad=True)
    content = torch.randn(7, 4, requires_grad=True)
    users = torch.tensor([2, 0, 5, 2, 1, 3, 4, 0])  # repeats: 2 and 0
    fast = term(graph, users, user_embedding, content, temperature=0.7)
    slow = reference_loss(users, user_embedding, content, graph, temperature=0.7)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)
    fast_grads = torch.autograd.grad(fast, [user_embedding, content])
    slow_grads = torch.autograd.grad(slow, [user_embedding, content])
    for a, b in zip(fast_grads, slow_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_padded_distinct_users_give_the_trimmed_loss():
    # the GPU path (fixed size, padding marked invalid) and the CPU path (torch.unique) agree
    torch.manual_seed(1)
    graph = small_graph()
    user_embedding, content = torch.randn(6, 4), torch.randn(7, 4)
    users = torch.tensor([3, 2, 3, 4, 2, 2])
    trimmed, all_valid = distinct_ids(users, 6, trim=True)
    padded, valid = distinct_ids(users, 6, trim=False)
    assert trimmed.tolist() == [2, 3, 4] and all_valid.all()
    assert padded.tolist() == [2, 3, 4, 0, 0, 0] and valid.tolist() == [True] * 3 + [False] * 3
    common_trimmed, common_padded = graph.common_items[trimmed], graph.common_items[padded]
    loss_trimmed = graph.loss(trimmed, all_valid, user_embedding, content, common_trimmed, 2.0)
    loss_padded = graph.loss(padded, valid, user_embedding, content, common_padded, 2.0)
    torch.testing.assert_close(loss_padded, loss_trimmed)


def test_fallbacks_for_no_neighbors_and_no_common_items():
    torch.manual_seed(2)
    graph = small_graph()
    user_embedding, content = torch.randn(6, 4), torch.randn(7, 4)
    users = torch.tensor([0, 1, 2])
    neighbor, common = graph.vectors(users, user_embedding, content, graph.common_items[users])
    torch.testing.assert_close(neighbor[0], user_embedding[0])  # no neighbors: own embedding
    torch.testing.assert_close(common[0], user_embedding[0])  # ... and no common items either
    torch.testing.assert_close(neighbor[1], user_embedding[2])  # one neighbor, user 2
    torch.testing.assert_close(common[1], user_embedding[2])  # no common items: neighbor vector
    torch.testing.assert_close(neighbor[2], user_embedding[[1, 3, 4]].mean(0))
    torch.testing.assert_close(common[2], content[[3, 1]].mean(0))


def test_clcrec_term_uses_the_same_encoder_in_one_call():
    torch.manual_seed(3)
    graph = small_graph()
    features = {"visual": torch.rand(7, 5)}
    model = CLCRec(
        6,
        7,
        features,
        torch.tensor([6]),
        dim=4,
        hidden=8,
        neighbors=graph,
        neighbor_weight=0.3,
        neighbor_temp=0.25,
    )
    calls = []
    model.encoder.register_forward_hook(lambda module, inputs, output: calls.append(inputs))
    users = torch.tensor([2, 4, 2, 0])
    items = torch.tensor([[0, 1, 3], [2, 5, 1], [4, 0, 1], [5, 3, 2]])
    output = model(Batch(users, items))
    assert len(calls) == 1  # batch items and common items encoded together
    expected = term(graph, users, model.user_embedding, model.encoder(), 0.25)
    torch.testing.assert_close(output.terms["neighbor"], expected)  # its own temperature
    shared = term(graph, users, model.user_embedding, model.encoder(), model.temp_value)
    assert not torch.allclose(output.terms["neighbor"], shared)
    terms = output.terms
    rest = model.lr_lambda * terms["item_content"] + (1 - model.lr_lambda) * terms["user_item"]
    rest = rest + model.reg_weight * terms["reg"]
    torch.testing.assert_close(output.total, rest + 0.3 * terms["neighbor"])
    model.neighbors = None  # the other terms do not change (user_item draws a random mask)
    base = model(Batch(users, items)).terms
    torch.testing.assert_close(base["item_content"], terms["item_content"])
    torch.testing.assert_close(base["reg"], terms["reg"])


def test_training_with_the_term_reports_it(tmp_path):
    dataset = load_dataset("synthetic:small", seed=3, num_users=200, num_items=120)
    config = make_config(
        {
            "data": "synthetic:small",
            "batch_size": 256,
            "num_neg": 8,
            "quiet": True,
            "epochs": 1,
            "neighbor_loss": True,
        }
    )
    results = train(config, tmp_path / "run", dataset=dataset)
    losses = results["history"][0]["losses"]
    assert "neighbor" in losses and math.isfinite(losses["neighbor"]) and losses["neighbor"] > 0


def test_config_rejects_a_negative_weight():
    with pytest.raises(ColdbrewError, match="option 'neighbor_weight' must be >= 0"):
        make_config({"neighbor_weight": -1.0})


def test_the_term_temperature_is_an_option_of_its_own():
    config = make_config({"neighbor_loss": True, "neighbor_temp": 0.2, "temp_value": 1.5})
    assert config.model_options.neighbor_temp == 0.2 and config.model_options.temp_value == 1.5
    dataset = load_dataset("synthetic:small", seed=3, num_users=50, num_items=30)
    model = build_model("clcrec", dataset, config)
    assert model.neighbor_temp == 0.2 and model.temp_value == 1.5
    with pytest.raises(ColdbrewError, match="option 'neighbor_temp' must be > 0"):
        make_config({"neighbor_temp": 0.0})


def test_the_term_samples_its_negatives_when_told(monkeypatch):
    # --neighbor-negatives K reaches the term: users shuffled into groups of K + 1
    config = make_config({"neighbor_loss": True, "neighbor_negatives": 3})
    dataset = load_dataset("synthetic:small", seed=3, num_users=50, num_items=30)
    model = build_model("clcrec", dataset, config)
    assert model.neighbor_negatives == 3
    groups = []
    original = neighbor_info_nce_module.grouped_per_row
    monkeypatch.setattr(
        neighbor_info_nce_module,
        "grouped_per_row",
        lambda *args: groups.append(args[-1]) or original(*args),
    )
    users = torch.arange(12)
    items = torch.randint(30, (12, 3), generator=torch.Generator().manual_seed(0))
    model(Batch(users, items))
    assert groups == [4]
    model.neighbor_negatives = 0  # every other user: the full product
    model(Batch(users, items))
    assert groups == [4]


@pytest.mark.gpu
def test_a_step_with_the_term_never_syncs_on_gpu():
    device = torch.device("cuda")
    train_matrix = random_graph(seed=4, num_users=300, num_items=80)
    graph = NeighborGraph.from_interactions(train_matrix, progress=False)
    features = {"visual": torch.rand(80, 16)}
    model = CLCRec(300, 80, features, torch.tensor([79]), dim=8, hidden=16, neighbors=graph).to(
        device
    )
    users = torch.randint(0, 300, (256,), device=device)
    items = torch.randint(0, 79, (256, 9), device=device)
    model(Batch(users, items)).total.backward()  # warm-up outside the check
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        output = model(Batch(users, items))
        output.total.backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(output.terms["neighbor"]).item()
