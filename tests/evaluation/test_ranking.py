"""Vectorized full ranking == a plain per-user loop, plus masking, edge and error cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.evaluation import evaluate_dataset, evaluate_embeddings, evaluate_scores
from coldbrew.evaluation.engine import block_columns, chunk_rows
from coldbrew.evaluation.plan import make_part
from coldbrew.evaluation.sources import EmbeddingScores
from coldbrew.evaluation.topk import tie_keys, tie_shifts
from ranking_support import NUM_ITEMS, NUM_USERS, random_dataset


def reference_metrics(scores: np.ndarray, train, positives, candidates, ks) -> dict[str, float]:
    """The original full_accuracy, one user at a time: rank the unseen candidates (equal
    scores by tie key), take top K."""
    keys, shifts = tie_keys(scores.shape[1]), tie_shifts(*scores.shape)
    train, positives = train.toarray() > 0, positives.toarray() > 0
    candidates = np.arange(scores.shape[1]) if candidates is None else candidates
    totals = dict.fromkeys(
        [f"{m}@{k}" for k in ks for m in ("precision", "recall", "ndcg", "hit")], 0.0
    )
    num_users = 0
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
            num_hits = len(positive_items.intersection(top))
            dcg = sum(
                1 / math.log2(rank + 2) for rank, item in enumerate(top) if item in positive_items
            )
            ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(positive_items), k)))
            totals[f"precision@{k}"] += num_hits / k
            totals[f"recall@{k}"] += num_hits / len(positive_items)
            totals[f"ndcg@{k}"] += dcg / ideal
            totals[f"hit@{k}"] += float(num_hits > 0)
    return {name: total / num_users for name, total in totals.items()}


def random_vectors(seed: int = 1, dim: int = 8):
    generator = torch.Generator().manual_seed(seed)
    users = torch.randn(NUM_USERS, dim, generator=generator, dtype=torch.float64)
    items = torch.randn(NUM_ITEMS, dim, generator=generator, dtype=torch.float64)
    return users, items


def candidates_of(dataset: Dataset, group: str):
    return {"all": None, "warm": dataset.warm_items, "cold": dataset.cold_items}[group]


@pytest.mark.parametrize("group", ["all", "warm", "cold"])
@pytest.mark.parametrize("ks", [(1, 5, 10), (3, 20)])
@pytest.mark.parametrize(
    "chunking",
    [{}, {"user_chunk": 7}, {"chunk_elements": 64}, {"chunk_elements": 1, "user_chunk": 3}],
    ids=["one-chunk", "user-chunks", "column-blocks", "tiny-blocks"],
)
def test_vectorized_matches_per_user_loop(group, ks, chunking):
    dataset = random_dataset()
    users, items = random_vectors()
    positives = dataset.splits["val"][group]
    candidates = candidates_of(dataset, group)
    expected = reference_metrics(
        (users @ items.T).numpy(), dataset.train, positives, candidates, ks
    )
    result = evaluate_embeddings(dataset, users, items, "val", ks, **chunking)[group]
    assert result == pytest.approx(expected, abs=1e-9)


def test_small_budget_really_cuts_columns():
    dataset = random_dataset()
    users, items = random_vectors()
    evaluated = np.arange(NUM_USERS - 5)
    items = np.arange(NUM_ITEMS)
    part = make_part(dataset.train, evaluated, items, tie_keys(NUM_ITEMS), torch.device("cpu"))
    source = EmbeddingScores(users, items)
    rows = chunk_rows(source, len(evaluated), NUM_ITEMS, chunk_elements=64, user_chunk=None)
    columns = block_columns(source, part, rows, top=10, chunk_elements=64)
    assert rows == len(evaluated) and columns == 10 < NUM_ITEMS


def test_score_users_matches_embeddings_on_every_group():
    dataset = random_dataset()
    users, items = random_vectors()
    by_vectors = evaluate_embeddings(dataset, users, items, split="test", ks=(5, 10))
    by_scores = evaluate_scores(
        dataset, lambda batch: users[batch] @ items.T, split="test", ks=(5, 10), chunk_elements=200
    )
    assert set(by_vectors) == {"all", "warm", "cold"}
    for group in by_vectors:
        assert by_scores[group] == pytest.approx(by_vectors[group], abs=1e-9)
        expected = reference_metrics(
            (users @ items.T).numpy(),
            dataset.train,
            dataset.splits["test"][group],
            candidates_of(dataset, group),
            (5, 10),
        )
        assert by_vectors[group] == pytest.approx(expected, abs=1e-9)


def test_progress_bar_over_users_only_when_labelled(capsys):
    dataset = random_dataset()
    users, items = random_vectors()
    quiet = evaluate_embeddings(dataset, users, items, "test", user_chunk=4)
    assert capsys.readouterr().err == ""
    shown = evaluate_embeddings(dataset, users, items, "test", user_chunk=4, progress=True)
    assert "evaluate test" in capsys.readouterr().err
    assert shown == quiet
    evaluate_embeddings(dataset, users, items, split="test", progress=True)
    assert capsys.readouterr().err == ""  # one chunk: nothing to show


def test_score_users_method_of_a_module_gets_users_on_its_device():
    dataset = random_dataset()
    users, items = random_vectors()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.users = torch.nn.Parameter(users.clone())
            self.items = torch.nn.Parameter(items.clone())

        def score_users(self, batch: torch.Tensor) -> torch.Tensor:
            assert batch.dtype == torch.int64 and batch.device == self.users.device
            return (
                self.users[batch] @ self.items.T
            )  # still attached to autograd: evaluator detaches

    result = evaluate_scores(dataset, Model().score_users, ks=(10,))
    expected = evaluate_embeddings(dataset, users, items, ks=(10,))
    for group in expected:
        assert result[group] == pytest.approx(expected[group], abs=1e-9)


def one_user_dataset(scores_of_items: list[float], train_items, positive_items, cold_items=(4, 5)):
    num_items = len(scores_of_items)
    train = np.zeros((1, num_items), dtype=np.float32)
    train[0, list(train_items)] = 1
    positives = np.zeros((1, num_items), dtype=np.float32)
    positives[0, list(positive_items)] = 1
    dataset = Dataset(
        name="one-user",
        num_users=1,
        num_items=num_items,
        train=sp.csr_matrix(train),
        cold_items=np.array(cold_items),
        splits={"val": {"all": sp.csr_matrix(positives)}},
    )
    # score = user (1-d, value 1) x item value: the item's score is exactly scores_of_items
    return dataset, torch.ones(1, 1), torch.tensor(scores_of_items).reshape(-1, 1)


def test_negative_scores_training_items_never_ranked():
    # every score is negative: item j scores -(j + 1). Training items 5, 6, 7; positive item 2.
    # -inf mask: unseen ranking is 0, 1, 2, 3, 4, 8, 9 -> item 2 at rank 3 -> recall@3 = 1.
    # the original's 1e-15 mask lifts 5, 6, 7 above every negative score: top 3 = 5, 6, 7 and
    # recall@3 = 0, with seen items recommended.
    item_scores = [-(j + 1.0) for j in range(10)]
    dataset, users, items = one_user_dataset(
        item_scores, train_items=(5, 6, 7), positive_items=(2,), cold_items=(8, 9)
    )
    result = evaluate_embeddings(dataset, users, items, ks=(3,))["all"]
    assert result["recall@3"] == 1.0
    assert result["ndcg@3"] == pytest.approx(1 / math.log2(4))  # rank 3: 1/log2(4) over IDCG 1

    tiny_mask_scores = torch.tensor(item_scores)
    tiny_mask_scores[[5, 6, 7]] = 1e-15
    assert set(torch.topk(tiny_mask_scores, 3).indices.tolist()) == {5, 6, 7}


def test_user_with_fewer_candidates_than_k():
    # 6 items, user trained on 0, 1, 2, positives 3 and 5; unseen items score 5 > 4 > 3.
    # top 10 of 6 candidates: 5, 4, 3 and three -inf (seen) items that must not count.
    # precision@10 = 2/10, recall = 1, DCG = 1 + 1/log2(4) = 1.5, IDCG = 1 + 1/log2(3) = 1.6309
    dataset, users, items = one_user_dataset(
        [9.0, 8.0, 7.0, 1.0, 2.0, 3.0], train_items=(0, 1, 2), positive_items=(3, 5)
    )
    result = evaluate_embeddings(dataset, users, items, ks=(10,))["all"]
    assert result["precision@10"] == pytest.approx(0.2)
    assert result["recall@10"] == 1.0
    assert result["ndcg@10"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)))


def test_positive_seen_in_training_is_never_hit():
    # item 0 is both a training item and a held-out positive: masked, so never a hit, but it
    # still counts in recall's denominator (as in the original): recall@2 = 1 hit / 2 = 0.5
    dataset, users, items = one_user_dataset(
        [9.0, 8.0, 7.0, 1.0, 2.0, 3.0], train_items=(0,), positive_items=(0, 1)
    )
    result = evaluate_embeddings(dataset, users, items, ks=(2,))["all"]
    assert result["recall@2"] == 0.5


def test_cold_group_with_fewer_cold_items_than_k():
    dataset = random_dataset()
    users, items = random_vectors()
    positives = dataset.splits["val"]["cold"]
    result = evaluate_embeddings(dataset, users, items, "val", ks=(50,))["cold"]
    expected = reference_metrics(
        (users @ items.T).numpy(), dataset.train, positives, dataset.cold_items, (50,)
    )
    assert result == pytest.approx(expected, abs=1e-9)
    assert result["recall@50"] == pytest.approx(1.0)  # all 18 cold items fit in the top 50


def test_split_without_groups_gives_empty_result():
    dataset = random_dataset()
    dataset.splits.pop("test")
    users, items = random_vectors()
    assert evaluate_embeddings(dataset, users, items, split="test") == {}


def test_bad_inputs_raise_clear_errors():
    dataset = random_dataset()
    users, items = random_vectors()
    with pytest.raises(ColdbrewError, match="user_vectors has shape"):
        evaluate_embeddings(dataset, users[:-1], items)
    with pytest.raises(ColdbrewError, match="item_vectors has shape"):
        evaluate_embeddings(dataset, users, items[:, :, None])
    with pytest.raises(ColdbrewError, match="share one dimension"):
        evaluate_embeddings(dataset, users, items[:, :4])
    broken = users.clone()
    broken[3, 2] = float("nan")
    with pytest.raises(ColdbrewError, match="NaN"):
        evaluate_embeddings(dataset, broken, items)
    with pytest.raises(ColdbrewError, match="unknown split"):
        evaluate_embeddings(dataset, users, items, split="train")
    with pytest.raises(ColdbrewError, match="positive integer"):
        evaluate_embeddings(dataset, users, items, ks=(0,))
    with pytest.raises(ColdbrewError, match="expected"):
        evaluate_scores(dataset, lambda batch: torch.zeros(len(batch), NUM_ITEMS - 1))
    with pytest.raises(ColdbrewError, match="NaN or infinite"):
        evaluate_scores(dataset, lambda batch: torch.full((len(batch), NUM_ITEMS), float("nan")))
    with pytest.raises(ColdbrewError, match="not both"):
        evaluate_dataset(dataset, user_vectors=users, item_vectors=items, score_users=len)
    with pytest.raises(ColdbrewError, match="'cold_candidates' is 'own'; expected all or split"):
        evaluate_embeddings(dataset, users, items, cold_candidates="own")


@pytest.mark.gpu
def test_cuda_matches_cpu():
    dataset = random_dataset()
    users, items = random_vectors()
    for chunk_elements in (None, 64):
        on_cpu = evaluate_embeddings(
            dataset, users, items, ks=(1, 5, 20), chunk_elements=chunk_elements
        )
        on_gpu = evaluate_embeddings(
            dataset, users.cuda(), items.cuda(), ks=(1, 5, 20), chunk_elements=chunk_elements
        )
        for group in on_cpu:
            assert on_gpu[group] == pytest.approx(on_cpu[group], abs=1e-9)
    cuda_users, cuda_items = users.cuda(), items.cuda()
    by_scores = evaluate_scores(
        dataset, lambda batch: cuda_users[batch] @ cuda_items.T, ks=(1, 5, 20), device="cuda"
    )
    for group in by_scores:
        assert by_scores[group] == pytest.approx(on_cpu[group], abs=1e-9)
