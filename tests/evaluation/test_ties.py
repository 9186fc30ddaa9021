"""Equal scores leak no id order: a model that scores every cold item alike ranks them as chance
does, and is flagged as having no cold signal."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.evaluation import evaluate_dataset
from coldbrew.evaluation.engine import COLD_SIGNAL

NUM_USERS, NUM_WARM, NUM_COLD, POSITIVES = 300, 60, 200, 3


def popular_low_ids(relabel: np.ndarray | None = None) -> Dataset:
    """Cold positives drawn with weight exp(-rank / 50) over the cold items in id order (low
    ids popular, as in MovieLens), three per user; ``relabel`` maps cold rank -> cold item."""
    rng = np.random.default_rng(0)
    num_items = NUM_WARM + NUM_COLD
    cold = np.arange(NUM_WARM, num_items)
    order = cold if relabel is None else cold[relabel]
    weights = np.exp(-np.arange(NUM_COLD) / 50)
    rows, columns = [], []
    for user in range(NUM_USERS):
        picked = rng.choice(NUM_COLD, POSITIVES, replace=False, p=weights / weights.sum())
        rows += [user] * POSITIVES
        columns += order[picked].tolist()
    positives = sp.csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(NUM_USERS, num_items))
    train_users = np.repeat(np.arange(NUM_USERS), 2)
    train_items = rng.integers(0, NUM_WARM, len(train_users))
    train = sp.csr_matrix(
        (np.ones(len(train_users)), (train_users, train_items)), shape=(NUM_USERS, num_items)
    )
    return Dataset(
        name="popular-low-ids",
        num_users=NUM_USERS,
        num_items=num_items,
        train=train,
        cold_items=cold,
        splits={"val": {"cold": positives}},
    )


def constant_cold_recall(dataset: Dataset, **options) -> dict:
    def constant(users: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(users), dataset.num_items)

    return evaluate_dataset(
        dataset, score_users=constant, splits=("val",), ks=(20,), cold_signal=True, **options
    )["val"]["cold"]


def test_constant_scores_rank_cold_items_as_chance_does_whatever_the_ids():
    # random ranking: each of a user's 3 positives is among the 20 listed of 200 candidates
    # with probability 20/200, so expected recall@20 = 0.1 for every user. Ranking the ties by
    # id would list the 20 most popular cold items: recall (1 - e^-0.4) / (1 - e^-4) ~ 0.33
    # (0.02 with the ids reversed). With the key rotated per user each user's 20 are another
    # draw: the mean over 300 users is 0.1 +- 0.01 (per-user variance ~ 0.1 * 0.9 / 3 / 300),
    # whatever the labels; the band is 3 standard deviations.
    dataset = popular_low_ids()
    by_id = dataset.cold_items[:20]
    id_order_recall = dataset.splits["val"]["cold"][:, by_id].sum() / (NUM_USERS * POSITIVES)
    assert id_order_recall > 0.28  # what the id order gave: the test can fail
    metrics = constant_cold_recall(dataset)
    relabelled = constant_cold_recall(popular_low_ids(relabel=np.arange(NUM_COLD)[::-1]))
    for recall in (metrics["recall@20"], relabelled["recall@20"]):
        assert 0.07 < recall < 0.13
    assert metrics[COLD_SIGNAL] == relabelled[COLD_SIGNAL] == 0.0


@pytest.mark.parametrize(
    "chunking", [{}, {"user_chunk": 7}, {"chunk_elements": 64, "user_chunk": 5}]
)
def test_cold_signal_is_flagged_on_any_chunking(chunking):
    dataset = popular_low_ids()
    assert constant_cold_recall(dataset, **chunking)[COLD_SIGNAL] == 0.0

    def one_user_sees_a_difference(users: torch.Tensor) -> torch.Tensor:
        scores = torch.ones(len(users), dataset.num_items)  # a per-user constant is no signal
        scores *= users[:, None].to(scores)
        scores[users == 299, NUM_WARM + 150] += 0.5  # one user, one cold item apart
        return scores

    metrics = evaluate_dataset(
        dataset,
        score_users=one_user_sees_a_difference,
        splits=("val",),
        ks=(20,),
        cold_signal=True,
        **chunking,
    )["val"]["cold"]
    assert metrics[COLD_SIGNAL] == 1.0

    def warm_signal_only(users: torch.Tensor) -> torch.Tensor:
        scores = torch.zeros(len(users), dataset.num_items)
        scores[:, :NUM_WARM] = torch.rand(len(users), NUM_WARM)  # warm items apart: no matter
        return scores

    metrics = evaluate_dataset(
        dataset,
        score_users=warm_signal_only,
        splits=("val",),
        ks=(20,),
        cold_signal=True,
        **chunking,
    )["val"]["cold"]
    assert metrics[COLD_SIGNAL] == 0.0


def test_the_flag_is_only_added_when_asked():
    dataset = popular_low_ids()
    metrics = evaluate_dataset(
        dataset,
        user_vectors=torch.ones(NUM_USERS, 2),
        item_vectors=torch.ones(dataset.num_items, 2),
        splits=("val",),
        ks=(20,),
    )["val"]["cold"]
    assert COLD_SIGNAL not in metrics
