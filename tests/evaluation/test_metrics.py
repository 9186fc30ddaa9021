"""Metrics from a hit matrix, against values worked out by hand (arithmetic in the comments)."""

from __future__ import annotations

import math

import pytest
import torch

from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.metrics import (
    MetricSums,
    check_ks,
    mean_metrics,
    metric_names,
    metric_sums,
    per_user_metrics,
)


def metrics_of(hits: list[list[int]], num_positives: list[int], ks) -> dict[str, float]:
    return mean_metrics(torch.tensor(hits, dtype=torch.bool), torch.tensor(num_positives), ks)


def test_hits_at_ranks_one_and_three_of_three():
    # 2 positives, hits at ranks 1 and 3 of K = 3:
    # precision = 2/3, recall = 2/2 = 1
    # DCG  = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5
    # IDCG = 1/log2(2) + 1/log2(3) = 1 + 0.6309 = 1.6309  (min(2 positives, K=3) = 2 ranks)
    # NDCG = 1.5 / 1.6309 = 0.9197
    result = metrics_of([[1, 0, 1]], [2], ks=(3,))
    assert result["precision@3"] == pytest.approx(2 / 3)
    assert result["recall@3"] == pytest.approx(1.0)
    assert result["ndcg@3"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert result["ndcg@3"] == pytest.approx(0.9197, abs=1e-4)
    assert result["hit@3"] == 1.0


def test_k_larger_than_number_of_positives():
    # 1 positive, found at rank 2 of K = 5:
    # precision = 1/5 = 0.2, recall = 1/1 = 1
    # DCG = 1/log2(3) = 0.6309; IDCG over min(1, 5) = 1 rank = 1/log2(2) = 1; NDCG = 0.6309
    result = metrics_of([[0, 1, 0, 0, 0]], [1], ks=(5,))
    assert result["precision@5"] == pytest.approx(0.2)
    assert result["recall@5"] == pytest.approx(1.0)
    assert result["ndcg@5"] == pytest.approx(1 / math.log2(3))
    assert result["hit@5"] == 1.0


def test_zero_hits_gives_zero_everywhere():
    result = metrics_of([[0, 0, 0, 0]], [3], ks=(2, 4))
    assert all(value == 0.0 for value in result.values())
    assert list(result) == metric_names((2, 4))


def test_every_k_from_one_matrix():
    # 3 positives, one hit at rank 3 of a width-4 list:
    # K=1, K=2: no hit -> 0 everywhere
    # K=3: precision 1/3, recall 1/3, DCG = 1/log2(4) = 0.5,
    #      IDCG = 1 + 1/log2(3) + 1/log2(4) = 2.1309, NDCG = 0.5 / 2.1309 = 0.2346, hit 1
    # K=4: precision 1/4, recall 1/3, same DCG and IDCG (min(3, 4) = 3 ranks), hit 1
    result = metrics_of([[0, 0, 1, 0]], [3], ks=(1, 2, 3, 4))
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert result["hit@1"] == result["hit@2"] == 0.0
    assert result["ndcg@2"] == 0.0
    assert result["hit@3"] == result["hit@4"] == 1.0
    assert result["precision@3"] == pytest.approx(1 / 3)
    assert result["precision@4"] == pytest.approx(1 / 4)
    assert result["recall@3"] == result["recall@4"] == pytest.approx(1 / 3)
    assert result["ndcg@3"] == result["ndcg@4"] == pytest.approx(0.5 / ideal)
    assert result["ndcg@3"] == pytest.approx(0.2346, abs=1e-4)


def test_k_wider_than_hit_matrix_counts_missing_ranks_as_misses():
    # only 2 candidates were ranked (width 2), both hits; 3 positives; K = 5:
    # precision = 2/5 = 0.4 (divides by K, as the original), recall = 2/3
    # DCG = 1 + 1/log2(3) = 1.6309; IDCG over min(3, 5) = 3 ranks = 2.1309; NDCG = 0.7654
    result = metrics_of([[1, 1]], [3], ks=(5,))
    assert result["precision@5"] == pytest.approx(0.4)
    assert result["recall@5"] == pytest.approx(2 / 3)
    assert result["ndcg@5"] == pytest.approx((1 + 1 / math.log2(3)) / (1.5 + 1 / math.log2(3)))
    assert result["ndcg@5"] == pytest.approx(0.7654, abs=1e-4)


def test_empty_hit_matrix_width_means_no_candidates():
    result = mean_metrics(torch.zeros(2, 0, dtype=torch.bool), torch.tensor([1, 2]), ks=(5,))
    assert result == dict.fromkeys(metric_names((5,)), 0.0)


def test_mean_and_sum_over_users():
    # user 0: hit at rank 1 of 1 positive -> recall@2 1, ndcg@2 1, precision@2 1/2
    # user 1: no hit of 2 positives      -> 0, 0, 0
    # means: recall 0.5, ndcg 0.5, precision 0.25, hit 0.5
    hits = torch.tensor([[1, 0], [0, 0]], dtype=torch.bool)
    positives = torch.tensor([1, 2])
    means = mean_metrics(hits, positives, ks=(2,))
    assert means == pytest.approx(
        {"precision@2": 0.25, "recall@2": 0.5, "ndcg@2": 0.5, "hit@2": 0.5}
    )
    sums = metric_sums(hits, positives, ks=(2,))
    assert sums.dtype == torch.float64
    assert sums.tolist() == pytest.approx([0.5, 1.0, 1.0, 1.0])
    per_user = per_user_metrics(hits, positives, ks=(2,))
    assert per_user["recall@2"].tolist() == [1.0, 0.0]


def test_ks_are_checked_and_deduplicated():
    assert check_ks(20) == (20,)
    assert check_ks((10, 20, 10)) == (10, 20)
    for bad in [(), (0,), (5, -1), (2.5,), (True,)]:
        with pytest.raises(ColdbrewError):
            check_ks(bad)


def test_shapes_are_checked():
    with pytest.raises(ColdbrewError, match="users, K"):
        mean_metrics(torch.zeros(3, dtype=torch.bool), torch.tensor([1, 1, 1]), ks=(1,))
    with pytest.raises(ColdbrewError, match="num_positives"):
        mean_metrics(torch.zeros(3, 2, dtype=torch.bool), torch.tensor([1, 1]), ks=(1,))


@pytest.mark.parametrize("width", [0, 3, 8, 25])
def test_block_sums_equal_per_user_metrics_summed(width):
    # 3 hit matrices over the same 40 users; K = 20 is wider than some of them
    generator = torch.Generator().manual_seed(width)
    hits = torch.rand(3, 40, width, generator=generator) < 0.3
    positives = torch.randint(1, 12, (3, 40), generator=generator)
    ks = (1, 5, 20)
    blocks = MetricSums(positives, ks, hits.shape[-1])(hits)
    assert blocks.shape == (3, len(metric_names(ks)))
    for index in range(3):
        expected = metric_sums(hits[index], positives[index], ks)
        assert torch.allclose(blocks[index], expected, rtol=0, atol=1e-12)


def test_block_sums_by_hand():
    # one user, 2 positives, hits at ranks 1 and 3 of 3 (the first test above), K = 3:
    # precision 2/3, recall 1, NDCG 1.5 / 1.6309, hit 1
    hits = torch.tensor([[[True, False, True]]])
    sums = MetricSums(torch.tensor([[2]]), (3,), hits.shape[-1])(hits)
    assert sums[0].tolist() == pytest.approx([2 / 3, 1.0, 1.5 / (1 + 1 / math.log2(3)), 1.0])
