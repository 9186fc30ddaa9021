"""One scoring pass for every split and group == a plain per-user loop per group, ties included."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError, DataError
from coldbrew.evaluation import evaluate_dataset, evaluate_embeddings, evaluate_scores
from coldbrew.evaluation.topk import tie_keys, tie_shifts
from ranking_support import NUM_ITEMS, NUM_USERS, random_dataset


def integer_vectors(seed: int = 1, dim: int = 3, levels: int = 3):
    """Small integer vectors: exact inner products in any summation order, and many equal
    scores, so ties at every cut-off are the norm rather than the exception."""
    generator = torch.Generator().manual_seed(seed)
    users = torch.randint(-levels, levels + 1, (NUM_USERS, dim), generator=generator)
    items = torch.randint(-levels, levels + 1, (NUM_ITEMS, dim), generator=generator)
    return users.to(torch.float64), items.to(torch.float64)


def coldbrew_reference(scores: np.ndarray, train, positives, candidates, ks) -> dict[str, float]:
    """One user at a time: sort the unseen candidates by score, equal scores by their tie key,
    take the top K, average the CLCRec metrics over users with a positive."""
    keys, shifts = tie_keys(scores.shape[1]), tie_shifts(*scores.shape)
    train, positives = train.toarray() > 0, positives.toarray() > 0
    candidates = range(scores.shape[1]) if candidates is None else candidates
    names = [f"{m}@{k}" for k in ks for m in ("precision", "recall", "ndcg", "hit")]
    totals, num_users = dict.fromkeys(names, 0.0), 0
    for user in range(scores.shape[0]):
        positive_items = set(np.flatnonzero(positives[user]).tolist())
        if not positive_items:
            continue
        num_users += 1
        unseen = [item for item in candidates if not train[user, item]]
        ranked = sorted(
            unseen, key=lambda item: (-scores[user, item], (keys[item] + shifts[user]) % len(keys))
        )
        for k in ks:
            top = ranked[:k]
            hits = [rank for rank, item in enumerate(top) if item in positive_items]
            ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(positive_items), k)))
            totals[f"precision@{k}"] += len(hits) / k
            totals[f"recall@{k}"] += len(hits) / len(positive_items)
            totals[f"ndcg@{k}"] += sum(1 / math.log2(rank + 2) for rank in hits) / ideal
            totals[f"hit@{k}"] += float(bool(hits))
    return {name: total / num_users for name, total in totals.items()}


def group_candidates(dataset: Dataset, group: str):
    return {"all": None, "warm": dataset.warm_items, "cold": dataset.cold_items}[group]


def assert_same(left: dict, right: dict) -> None:
    """Equal metrics; only float64 summation order may differ (observed ~1e-17)."""
    assert list(left) == list(right)
    for split in left:
        assert list(left[split]) == list(right[split])
        for group in left[split]:
            assert left[split][group] == pytest.approx(right[split][group], abs=1e-12, rel=0)


CHUNKINGS = [
    {},
    {"user_chunk": 7},
    {"chunk_elements": 64},  # column blocks inside each part
    {"chunk_elements": 1, "user_chunk": 3},
]


@pytest.mark.parametrize("contiguous", [False, True], ids=["interleaved", "warm-first"])
@pytest.mark.parametrize("ks", [(1, 5, 10), (3, 20), (50,)])
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=["one", "users", "blocks", "tiny"])
def test_one_pass_equals_ranking_each_group_with_ties(contiguous, ks, chunking):
    dataset = random_dataset(contiguous=contiguous)
    users, items = integer_vectors()
    scores = (users @ items.T).numpy()
    _, counts = np.unique(scores, return_counts=True)
    assert counts.max() > 100  # ties everywhere: the rule decides most cut-offs
    result = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=ks, **chunking)
    expected = {
        split: {
            group: coldbrew_reference(
                scores, dataset.train, positives, group_candidates(dataset, group), ks
            )
            for group, positives in dataset.groups(split).items()
        }
        for split in ("val", "test")
    }
    assert_same(result, expected)


def test_score_users_source_equals_embeddings_and_scores_the_union_once():
    dataset = random_dataset()
    users, items = integer_vectors(seed=5)
    asked: list[torch.Tensor] = []

    def score_users(batch: torch.Tensor) -> torch.Tensor:
        asked.append(batch.clone())
        return users[batch] @ items.T

    by_scores = evaluate_dataset(dataset, score_users=score_users, ks=(5, 10))
    by_vectors = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=(5, 10))
    assert_same(by_scores, by_vectors)
    # val lacks users 0..5 and test users 4..11: the union is everyone but users 4 and 5,
    # each asked for once although most of them are in both splits and all three groups
    union = [user for user in range(NUM_USERS) if user not in (4, 5)]
    assert len(asked) == 1 and asked[0].tolist() == union
    asked.clear()
    evaluate_dataset(dataset, score_users=score_users, ks=(5,), chunk_elements=NUM_ITEMS * 4)
    assert [len(batch) for batch in asked] == [4] * 10 + [3]  # the budget bounds B × items
    assert torch.cat(asked).tolist() == union


def test_single_split_wrappers_and_split_selection():
    dataset = random_dataset()
    users, items = integer_vectors(seed=2)
    both = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=(10,))
    only_test = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, splits=("test",), ks=(10,)
    )
    assert list(only_test) == ["test"]
    assert_same(only_test, {"test": both["test"]})
    assert_same(
        {"val": evaluate_embeddings(dataset, users, items, "val", ks=(10,))}, {"val": both["val"]}
    )
    scores = evaluate_scores(dataset, lambda batch: users[batch] @ items.T, "test", ks=(10,))
    assert_same({"test": scores}, {"test": both["test"]})
    dataset.splits.pop("test")
    assert evaluate_dataset(dataset, user_vectors=users, item_vectors=items)["test"] == {}
    with pytest.raises(DataError, match="unknown split"):
        evaluate_dataset(dataset, user_vectors=users, item_vectors=items, splits=("train",))


def test_split_with_only_a_cold_group():
    # ml-1m-coldstart's shape: validation has only a cold group; no warm part is scored
    dataset = random_dataset()
    dataset.splits = {"val": {"cold": dataset.splits["val"]["cold"]}}
    users, items = integer_vectors(seed=3)
    result = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=(5, 50))
    expected = coldbrew_reference(
        (users @ items.T).numpy(),
        dataset.train,
        dataset.splits["val"]["cold"],
        dataset.cold_items,
        (5, 50),
    )
    assert result["val"]["cold"] == pytest.approx(expected, abs=1e-12)
    assert result["test"] == {}


@pytest.mark.parametrize("protocol", ["coldbrew", "original"])
def test_a_group_whose_part_is_empty(protocol):
    # no cold item at all, yet a "cold" group (its positives are warm items): coldbrew ranks
    # no candidate for it (every metric 0); the original ranks every item (warm ones at 1e-15)
    dataset = random_dataset()
    positives = dataset.splits["val"]["warm"]
    dataset = Dataset(
        name="no-cold",
        num_users=NUM_USERS,
        num_items=NUM_ITEMS,
        train=dataset.train,
        cold_items=np.array([], dtype=np.int64),
        splits={"val": {"all": dataset.splits["val"]["all"], "cold": positives}},
    )
    users, items = integer_vectors(seed=4)
    result = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, ks=(5,), protocol=protocol
    )["val"]
    if protocol == "coldbrew":
        assert result["cold"] == dict.fromkeys(result["cold"], 0.0)
        expected = coldbrew_reference(
            (users @ items.T).numpy(), dataset.train, dataset.splits["val"]["all"], None, (5,)
        )
        assert result["all"] == pytest.approx(expected, abs=1e-12)
    else:  # every item scores 1e-15 there (all are "other group"): a user's top 5 are the
        # items of its 5 lowest tie keys, whatever their ids
        keys, shifts = tie_keys(NUM_ITEMS), tie_shifts(NUM_USERS, NUM_ITEMS)
        first_five = np.argsort((keys[None, :] + shifts[:, None]) % NUM_ITEMS, axis=1)[:, :5]
        assert sorted(first_five[0].tolist()) != list(range(5))
        assert len({tuple(row) for row in first_five.tolist()}) > 1  # not one list for all
        dense = positives.toarray() > 0
        hits = np.take_along_axis(dense, first_five, axis=1).sum(1)
        with_positive = dense.any(1)
        expected_recall = (hits[with_positive] / dense.sum(1)[with_positive]).mean()
        assert result["cold"]["recall@5"] == pytest.approx(expected_recall, abs=1e-12)
        assert expected_recall > 0


def test_bad_sources_raise_clear_errors():
    dataset = random_dataset()
    users, items = integer_vectors()
    with pytest.raises(ColdbrewError, match="not both"):
        evaluate_dataset(dataset, user_vectors=users, item_vectors=items, score_users=len)
    with pytest.raises(ColdbrewError, match="needs score_users"):
        evaluate_dataset(dataset, user_vectors=users)
    with pytest.raises(ColdbrewError, match="NaN or infinite"):
        evaluate_dataset(
            dataset, score_users=lambda batch: torch.full((len(batch), NUM_ITEMS), float("inf"))
        )
    with pytest.raises(ColdbrewError, match="protocol"):
        evaluate_dataset(dataset, user_vectors=users, item_vectors=items, protocol="paper")


@pytest.mark.parametrize("cold_candidates", ["all", "split"])
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=["one", "users", "blocks", "tiny"])
def test_nine_pairs_in_one_pass_equal_each_split_alone(cold_candidates, chunking):
    """val, report and test × all, warm, cold: 9 (split, group) pairs, more than a byte holds
    (the bits are int16 words); one pass equals each split evaluated alone (a byte each) and
    the plain per-user loop."""
    from coldbrew.data.splits.selection import carve_report
    from coldbrew.evaluation.plan import cold_items_of

    dataset = carve_report(random_dataset(), 0.5, 0)
    assert sum(len(dataset.groups(split)) for split in ("val", "report", "test")) == 9
    users, items = integer_vectors(seed=3)
    scores = (users @ items.T).numpy()
    options = {"ks": (1, 5, 10), "cold_candidates": cold_candidates, **chunking}
    splits = ("val", "report", "test")
    together = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, splits=splits, **options
    )
    alone = {
        split: evaluate_dataset(
            dataset, user_vectors=users, item_vectors=items, splits=(split,), **options
        )[split]
        for split in splits
    }
    assert_same(together, alone)
    expected = {}
    for split in splits:
        cold = cold_items_of(dataset, split, cold_candidates)
        candidates = {"all": np.union1d(dataset.warm_items, cold), "warm": None, "cold": cold}
        candidates["warm"] = dataset.warm_items
        expected[split] = {
            group: coldbrew_reference(
                scores, dataset.train, positives, candidates[group], (1, 5, 10)
            )
            for group, positives in dataset.groups(split).items()
        }
    assert_same(together, expected)


@pytest.mark.parametrize("pairs", [8, 9, 15, 16, 31])
@pytest.mark.parametrize("table_bytes", [0, 1 << 20], ids=["searchsorted", "table"])
def test_pair_positives_bits_of_many_pairs(pairs, table_bytes):
    """Every pair's bit comes back whatever the word width (byte, int16, int32), by the dense
    table and by searchsorted alike; more than 31 pairs is refused."""
    import scipy.sparse as sp

    from coldbrew.evaluation.plan import PairPositives

    rng = np.random.default_rng(pairs)
    matrices = [sp.csr_matrix(rng.random((6, 9)) < 0.3) for _ in range(pairs)]
    users = np.array([0, 2, 3, 5])
    positives = PairPositives(matrices, users, torch.device("cpu"), table_bytes)
    listed = torch.arange(9).expand(len(users), -1)
    bits = positives.lookup(listed, 0, len(users)).to(torch.int64)
    for index, matrix in enumerate(matrices):
        held = torch.as_tensor(matrix.toarray()[users].astype(np.int64))
        assert torch.equal((bits >> index) & 1, held)
    with pytest.raises(ColdbrewError, match="at most 31"):
        PairPositives(matrices * 4, users, torch.device("cpu"))
