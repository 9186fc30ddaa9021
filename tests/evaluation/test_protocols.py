"""protocol="original" == a plain transcription of the original CLCRec Metric.py, and where the
two protocols part ways, worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.evaluation import evaluate_dataset, original_improved
from coldbrew.evaluation.protocols import ORIGINAL_MASK_VALUE, check_protocol, mask_value
from coldbrew.evaluation.topk import tie_keys, tie_shifts
from coldbrew.tasks.base import Monitor
from coldbrew.tasks.recommendation import original_monitor
from ranking_support import NUM_ITEMS, NUM_USERS, random_dataset


def original_metric_py(
    scores: np.ndarray,
    train_items_of: dict[int, set[int]],
    held_out_rows: list[list[int]],
    mask_items: list[int] | None,
    topk: int,
) -> tuple[float, float, float]:
    """The original ``Metric.rank`` then ``full_accuracy`` (evaluation branch), one user at a time.

    Ids are internal here (the original offsets items by the number of users). ``rank`` scores
    every item, sets the user's training items and every ``mask_items`` column to 1e-15 and keeps
    the top ``topk`` of all items; ``torch.topk`` picks among equal scores in no stated order,
    coldbrew picks the lowest tie keys (``tie_keys``, its documented rule); where the equal items
    are not positives, as in the hand-made cases below, any order gives the same metrics.
    """
    keys, shifts = tie_keys(scores.shape[1]), tie_shifts(*scores.shape)
    top_items = {}
    for user in range(scores.shape[0]):
        row = scores[user].copy()  # same dtype as the scores: 1e-15 is rounded as in torch
        row[sorted(train_items_of.get(user, ()))] = 1e-15
        if mask_items is not None:
            row[mask_items] = 1e-15
        top_items[user] = sorted(
            range(len(row)), key=lambda item: (-row[item], (keys[item] + shifts[user]) % len(keys))
        )[:topk]
    length = 0
    precision = recall = ndcg = 0.0
    for data in held_out_rows:
        user, positives = data[0], set(data[1:])
        if not positives:
            continue
        length += 1
        items_list = top_items[user]
        num_hit = len(positives.intersection(items_list))
        precision += num_hit / topk
        recall += num_hit / len(positives)
        max_ndcg = sum(1 / math.log2(i + 2) for i in range(min(len(positives), topk)))
        ndcg += sum(
            1 / math.log2(i + 2) for i, item in enumerate(items_list) if item in positives
        ) / max(max_ndcg, 1e-300)
    return precision / length, recall / length, ndcg / length


def rows_of(matrix: sp.csr_matrix) -> list[list[int]]:
    """A held-out matrix in the original's form: one ``[user, item, item, ...]`` row per user."""
    return [[user, *matrix[user].indices.tolist()] for user in range(matrix.shape[0])]


def train_dict(matrix: sp.csr_matrix) -> dict[int, set[int]]:
    return {user: set(matrix[user].indices.tolist()) for user in range(matrix.shape[0])}


def dataset_of(scores: list[list[float]], train: dict, groups: dict, cold_items) -> Dataset:
    """Users with exactly the given item scores: identity user vectors, items = scores.T."""
    num_users, num_items = len(scores), len(scores[0])

    def matrix(items_of: dict[int, list[int]]) -> sp.csr_matrix:
        dense = np.zeros((num_users, num_items), dtype=np.float32)
        for user, items in items_of.items():
            dense[user, items] = 1
        return sp.csr_matrix(dense)

    return Dataset(
        name="hand-made",
        num_users=num_users,
        num_items=num_items,
        train=matrix(train),
        cold_items=np.array(cold_items),
        splits={"val": {group: matrix(items_of) for group, items_of in groups.items()}},
    )


# Items 0..5: warm 0, 1, 2, 3 and cold 4, 5. One user per case, scores exactly as written.
SCORES = [
    [0.9, 0.8, 0.7, 0.6, -0.1, -0.2],  # user 0: warm items positive, cold items negative
    [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],  # user 1: every score negative
    [-0.5, -0.1, -0.3, -0.2, 0.4, 0.3],  # user 2: warm items negative, cold items positive
]
TRAIN = {0: [0], 1: [1, 2], 2: [1]}
GROUPS = {"cold": {0: [5]}, "all": {1: [3]}, "warm": {2: [3]}}


def hand_made() -> tuple[Dataset, torch.Tensor, torch.Tensor]:
    dataset = dataset_of(SCORES, TRAIN, GROUPS, cold_items=[4, 5])
    users = torch.eye(3, dtype=torch.float64)
    items = torch.tensor(SCORES, dtype=torch.float64).T.contiguous()  # (6, 3)
    return dataset, users, items


def test_cold_group_warm_items_at_1e15_push_cold_items_out():
    # user 0, cold positive item 5, trained on item 0.
    # coldbrew ranks only cold items: 4 (-0.1), 5 (-0.2) -> top 2 = [4, 5], a hit at rank 2:
    #   precision@2 = 1/2, recall@2 = 1/1, NDCG@2 = (1/log2(3)) / 1 = 0.6309
    # original: items 0..3 (warm, and 0 also trained) -> 1e-15, above both cold items:
    #   top 2 = two warm items -> no hit: precision = recall = NDCG = 0
    # with K = 6 the original lists all items: 0, 1, 2, 3 (at 1e-15), 4, 5 -> item 5 at rank 6:
    #   precision@6 = 1/6, recall = 1, NDCG@6 = 1/log2(7) = 0.3562
    #   coldbrew: [4, 5], item 5 at rank 2: precision@6 = 1/6, NDCG@6 = 0.6309
    dataset, users, items = hand_made()
    ours = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=(2, 6))["val"]
    original = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, ks=(2, 6), protocol="original"
    )["val"]
    assert ours["cold"]["recall@2"] == 1.0 and ours["cold"]["precision@2"] == 0.5
    assert ours["cold"]["ndcg@2"] == pytest.approx(1 / math.log2(3))
    assert original["cold"]["recall@2"] == original["cold"]["ndcg@2"] == 0.0
    assert original["cold"]["precision@6"] == pytest.approx(1 / 6)
    assert original["cold"]["ndcg@6"] == pytest.approx(1 / math.log2(7))
    assert original["cold"]["ndcg@6"] == pytest.approx(0.3562, abs=1e-4)
    assert ours["cold"]["ndcg@6"] == pytest.approx(0.6309, abs=1e-4)


def test_all_group_training_items_at_1e15_outrank_negative_scores():
    # user 1, every score negative (item j scores -(j + 1)), trained on 1 and 2, positive 3.
    # coldbrew: unseen 0 (-1), 3 (-4), 4 (-5), 5 (-6) -> top 3 = [0, 3, 4]: hit at rank 2,
    #   precision@3 = 1/3, recall@3 = 1, NDCG@3 = 1/log2(3) = 0.6309
    # original: items 1, 2 -> 1e-15 -> top 3 = [1, 2, 0]: no hit, everything 0
    dataset, users, items = hand_made()
    ours = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=(3,))["val"]
    original = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, ks=(3,), protocol="original"
    )["val"]
    assert ours["all"]["precision@3"] == pytest.approx(1 / 3)
    assert ours["all"]["ndcg@3"] == pytest.approx(0.6309, abs=1e-4)
    assert original["all"] == dict.fromkeys(original["all"], 0.0)


def test_warm_group_cold_items_at_1e15_outrank_negative_warm_scores():
    # user 2, warm scores -0.5, -0.1, -0.3, -0.2 (items 0..3), trained on 1, positive 3.
    # coldbrew ranks unseen warm items: 3 (-0.2), 2 (-0.3), 0 (-0.5) -> top 2 = [3, 2]:
    #   hit at rank 1: precision@2 = 1/2, recall = 1, NDCG = 1, hit = 1
    # original: item 1 (trained) and cold items 4, 5 -> 1e-15: top 2 are two of {1, 4, 5}
    #   (which two does not matter: none is a positive) -> everything 0
    dataset, users, items = hand_made()
    ours = evaluate_dataset(dataset, user_vectors=users, item_vectors=items, ks=(2,))["val"]
    original = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, ks=(2,), protocol="original"
    )["val"]
    assert ours["warm"] == {"precision@2": 0.5, "recall@2": 1.0, "ndcg@2": 1.0, "hit@2": 1.0}
    assert original["warm"] == dict.fromkeys(original["warm"], 0.0)


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_hand_made_cases_equal_the_transcription(k):
    dataset, users, items = hand_made()
    result = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, ks=(k,), protocol="original"
    )["val"]
    scores = np.array(SCORES)
    masks = {"all": None, "warm": [4, 5], "cold": [0, 1, 2, 3]}
    for group, positives in dataset.splits["val"].items():
        expected = original_metric_py(
            scores, train_dict(dataset.train), rows_of(positives), masks[group], k
        )
        got = result[group]
        assert (got[f"precision@{k}"], got[f"recall@{k}"], got[f"ndcg@{k}"]) == pytest.approx(
            expected, abs=1e-12
        )


@pytest.mark.parametrize("positives_may_be_seen", [False, True], ids=["unseen", "seen-too"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("chunking", [{}, {"chunk_elements": 16}], ids=["one", "blocks"])
def test_random_data_equals_the_transcription(positives_may_be_seen, dtype, chunking):
    # Integer vectors: many equal scores, and every masked item ties at 1e-15. With positives
    # among the training items ("seen-too") a masked item can be a hit, as in the original.
    dataset = random_dataset(seed=4, positives_may_be_seen=positives_may_be_seen)
    generator = torch.Generator().manual_seed(9)
    users = torch.randint(-2, 3, (NUM_USERS, 3), generator=generator).to(dtype)
    items = torch.randint(-2, 3, (NUM_ITEMS, 3), generator=generator).to(dtype)
    scores = (users @ items.T).numpy()
    masks = {"all": None, "warm": dataset.cold_items.tolist(), "cold": dataset.warm_items.tolist()}
    for k in (1, 5, 12):
        result = evaluate_dataset(
            dataset,
            user_vectors=users,
            item_vectors=items,
            ks=(k,),
            protocol="original",
            **chunking,
        )["val"]
        for group, positives in dataset.splits["val"].items():
            expected = original_metric_py(
                scores, train_dict(dataset.train), rows_of(positives), masks[group], k
            )
            got = result[group]
            assert (got[f"precision@{k}"], got[f"recall@{k}"], got[f"ndcg@{k}"]) == (
                pytest.approx(expected, abs=1e-12)
            )


def test_original_protocol_through_score_users_and_wrappers():
    dataset = random_dataset(seed=6, positives_may_be_seen=False)
    generator = torch.Generator().manual_seed(2)
    users = torch.randn(NUM_USERS, 4, generator=generator)
    items = torch.randn(NUM_ITEMS, 4, generator=generator)
    by_vectors = evaluate_dataset(
        dataset, user_vectors=users, item_vectors=items, protocol="original"
    )
    by_scores = evaluate_dataset(
        dataset, score_users=lambda batch: users[batch] @ items.T, protocol="original"
    )
    for group in by_vectors["val"]:
        assert by_scores["val"][group] == pytest.approx(by_vectors["val"][group], abs=1e-12)


def test_mask_values_and_protocol_names():
    assert mask_value("coldbrew") == float("-inf")
    assert mask_value("original") == ORIGINAL_MASK_VALUE == 1e-15
    assert check_protocol("original") == "original"


def test_original_selection_rule():
    monitor = original_monitor()
    assert monitor == Monitor("all", "recall@10", "max", start=0.0)
    metrics = {"all": {"recall@10": 0.2}, "cold": {"recall@10": 0.9}}
    assert monitor.value(metrics) == 0.2  # validation all-items, not the cold group
    assert not monitor.improved(0.2, 0.2)  # strict: a tie keeps the earlier epoch
    assert monitor.improved(0.2000001, 0.2)
    # per-epoch validation recalls -> the epoch each rule keeps
    history = [0.0, 0.05, 0.05, 0.07, 0.07, 0.06]
    best, best_epoch = None, None
    for epoch, value in enumerate(history):
        if original_improved(value, best):
            best, best_epoch = value, epoch
    assert best_epoch == 3  # first epoch reaching 0.07; the tie at epoch 4 does not replace it
    # the best starts at 0.0, as the original's: a 0.0 first epoch is never selected
    assert not monitor.improved(0.0, monitor.worst) and not original_improved(0.0, None)
    assert Monitor("all", "recall@10").improved(0.0, Monitor("all", "recall@10").worst)
    assert not original_improved(float("nan"), None)
