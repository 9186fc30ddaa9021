"""``cold_candidates``: every cold item ("all", CLCRec) or a split's own ("split", ColdRec)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.evaluation import evaluate_dataset, evaluate_embeddings
from coldbrew.evaluation.plan import cold_items_of
from coldbrew.evaluation.topk import tie_keys, tie_shifts


def matrix(num_users: int, num_items: int, items_of: dict[int, list[int]]) -> sp.csr_matrix:
    dense = np.zeros((num_users, num_items), dtype=np.float32)
    for user, items in items_of.items():
        dense[user, items] = 1
    return sp.csr_matrix(dense)


def hand_made() -> tuple[Dataset, torch.Tensor, torch.Tensor]:
    """Items 0..4: warm 0, 1; cold 2 (val's), 3 and 4 (test's). Both users score item j as
    ``ITEM_SCORES[j]``. User 0 trained on item 0, holds val positive 2; user 1 trained on
    item 1, holds test positives 3 and 4."""
    item_scores = [0.0, 0.5, 0.2, 0.9, 0.8]
    val = {0: [2]}
    test = {1: [3, 4]}
    dataset = Dataset(
        name="two-splits",
        num_users=2,
        num_items=5,
        train=matrix(2, 5, {0: [0], 1: [1]}),
        cold_items=np.array([2, 3, 4]),
        splits={
            "val": {"all": matrix(2, 5, val), "cold": matrix(2, 5, val)},
            "test": {"all": matrix(2, 5, test), "cold": matrix(2, 5, test)},
        },
    )
    return dataset, torch.ones(2, 1, dtype=torch.float64), torch.tensor(item_scores)[:, None]


def test_hand_made_conventions_differ_on_val():
    dataset, users, items = hand_made()
    assert cold_items_of(dataset, "val", "split").tolist() == [2]
    assert cold_items_of(dataset, "test", "split").tolist() == [3, 4]
    assert cold_items_of(dataset, "val", "all").tolist() == [2, 3, 4]
    every = evaluate_embeddings(dataset, users, items, "val", ks=(1, 3))
    own = evaluate_embeddings(dataset, users, items, "val", ks=(1, 3), cold_candidates="split")
    # val cold, "all": cold items ranked 3 (0.9), 4 (0.8), 2 (0.2): positive 2 at rank 3
    #   recall@1 = 0, recall@3 = 1, NDCG@3 = (1 / log2(4)) / 1 = 0.5
    # val cold, "split": only item 2: rank 1, recall@1 = 1, NDCG@1 = 1
    assert every["cold"]["recall@1"] == 0.0 and every["cold"]["recall@3"] == 1.0
    assert every["cold"]["ndcg@3"] == pytest.approx(0.5)
    assert own["cold"]["recall@1"] == 1.0 and own["cold"]["ndcg@1"] == 1.0
    # val all, "all": unseen 1..4 ranked 3, 4, 1, 2: item 2 at rank 4, recall@3 = 0
    # val all, "split": items 3 and 4 are test's, no candidate: 1 (0.5), 2 (0.2)
    #   recall@1 = 0, recall@3 = 1, NDCG@3 = 1 / log2(3) = 0.6309, precision@3 = 1 / 3
    assert every["all"]["recall@3"] == 0.0
    assert own["all"]["recall@1"] == 0.0 and own["all"]["recall@3"] == 1.0
    assert own["all"]["ndcg@3"] == pytest.approx(1 / math.log2(3))
    assert own["all"]["precision@3"] == pytest.approx(1 / 3)


def test_a_splits_padding_joins_its_own_cold_items():
    dataset, users, items = hand_made()
    dataset.split_padding = {"val": np.array([3])}  # as a fold's val drawn to test's size
    assert cold_items_of(dataset, "val", "split").tolist() == [2, 3]
    assert cold_items_of(dataset, "test", "split").tolist() == [3, 4]  # no padding of its own
    own = evaluate_embeddings(dataset, users, items, "val", ks=(1, 3), cold_candidates="split")
    # val cold, "split" with item 3 beside 2: 3 (0.9), 2 (0.2): positive 2 at rank 2
    #   recall@1 = 0, recall@3 = 1, NDCG@3 = 1 / log2(3)
    assert own["cold"]["recall@1"] == 0.0 and own["cold"]["recall@3"] == 1.0
    assert own["cold"]["ndcg@3"] == pytest.approx(1 / math.log2(3))


def test_hand_made_test_split_keeps_its_own_cold_items():
    dataset, users, items = hand_made()
    every = evaluate_embeddings(dataset, users, items, "test", ks=(1, 2))
    own = evaluate_embeddings(dataset, users, items, "test", ks=(1, 2), cold_candidates="split")
    # test cold: 3 (0.9), 4 (0.8) lead both rankings (item 2, val's, scores 0.2 below them):
    #   recall@1 = 1 / 2, recall@2 = 2 / 2
    for result in (every, own):
        assert result["cold"]["recall@1"] == 0.5 and result["cold"]["recall@2"] == 1.0
    assert own == every


def reference(scores, train, positives, candidates, masked, protocol, ks) -> dict[str, float]:
    """One user at a time. coldbrew: rank the unseen ``candidates``; original: rank
    ``candidates`` and ``masked``, training and ``masked`` items at 1e-15. Equal scores rank
    by the items' tie keys. Averaged over users with a positive."""
    keys, shifts = tie_keys(scores.shape[1]), tie_shifts(*scores.shape)
    train, positives = train.toarray() > 0, positives.toarray() > 0
    names = [f"{m}@{k}" for k in ks for m in ("precision", "recall", "ndcg", "hit")]
    totals, num_users = dict.fromkeys(names, 0.0), 0
    for user in range(scores.shape[0]):
        positive_items = set(np.flatnonzero(positives[user]).tolist())
        if not positive_items:
            continue
        num_users += 1
        if protocol == "coldbrew":
            row = {item: scores[user, item] for item in candidates if not train[user, item]}
        else:
            row = {item: scores[user, item] for item in candidates}
            row |= {item: 1e-15 for item in candidates if train[user, item]}
            row |= dict.fromkeys(masked, 1e-15)
        ranked = sorted(row, key=lambda item: (-row[item], (keys[item] + shifts[user]) % len(keys)))
        for k in ks:
            hits = [rank for rank, item in enumerate(ranked[:k]) if item in positive_items]
            ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(positive_items), k)))
            totals[f"precision@{k}"] += len(hits) / k
            totals[f"recall@{k}"] += len(hits) / len(positive_items)
            totals[f"ndcg@{k}"] += sum(1 / math.log2(rank + 2) for rank in hits) / ideal
            totals[f"hit@{k}"] += float(bool(hits))
    return {name: total / num_users for name, total in totals.items()}


def two_split_dataset(seed: int = 0) -> Dataset:
    """CLCRec's shape: val and test each hold positives on their own cold items (and on warm
    ones); two cold items belong to no split."""
    rng = np.random.default_rng(seed)
    num_users, num_items = 36, 50
    order = rng.permutation(num_items)
    cold_of = {"val": order[:8], "test": order[8:18]}
    cold = np.zeros(num_items, dtype=bool)
    cold[order[:20]] = True
    train = (rng.random((num_users, num_items)) < 0.25) & ~cold
    splits = {}
    for split, own in cold_of.items():
        allowed = ~cold
        allowed[own] = True
        held_out = (rng.random((num_users, num_items)) < 0.15) & ~train & allowed
        held_out[rng.choice(num_users, 4, replace=False)] = False
        groups = {"all": held_out, "warm": held_out & ~cold, "cold": held_out & cold}
        splits[split] = {g: sp.csr_matrix(m.astype(np.float32)) for g, m in groups.items()}
    return Dataset(
        name="two-splits",
        num_users=num_users,
        num_items=num_items,
        train=sp.csr_matrix(train.astype(np.float32)),
        cold_items=order[:20],
        splits=splits,
    )


@pytest.mark.parametrize("protocol", ["coldbrew", "original"])
@pytest.mark.parametrize("cold_candidates", ["all", "split"])
@pytest.mark.parametrize("chunking", [{}, {"chunk_elements": 16, "user_chunk": 5}])
def test_engine_equals_a_per_user_loop(protocol, cold_candidates, chunking):
    dataset = two_split_dataset()
    generator = torch.Generator().manual_seed(3)  # integer vectors: many equal scores
    users = torch.randint(-2, 3, (dataset.num_users, 3), generator=generator).double()
    items = torch.randint(-2, 3, (dataset.num_items, 3), generator=generator).double()
    scores = (users @ items.T).numpy()
    ks = (1, 5, 20)
    result = evaluate_dataset(
        dataset,
        user_vectors=users,
        item_vectors=items,
        ks=ks,
        protocol=protocol,
        cold_candidates=cold_candidates,
        **chunking,
    )
    warm = dataset.warm_items.tolist()
    for split in ("val", "test"):
        cold = cold_items_of(dataset, split, cold_candidates).tolist()
        assert len(cold) == (20 if cold_candidates == "all" else 8 if split == "val" else 10)
        ranked = {"all": (warm + cold, []), "warm": (warm, cold), "cold": (cold, warm)}
        for group, positives in dataset.groups(split).items():
            candidates, others = ranked[group]
            masked = others if protocol == "original" else []
            expected = reference(scores, dataset.train, positives, candidates, masked, protocol, ks)
            assert result[split][group] == pytest.approx(expected, abs=1e-12)
