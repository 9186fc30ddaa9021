"""Top K under the (score descending, id ascending) order == a stable sort, ties included."""

from __future__ import annotations

import pytest
import torch

from coldbrew.evaluation.topk import merge_top_k, rank_order, top_k


def reference_top(row: list[float], k: int) -> list[int]:
    """A stable sort on -score keeps equal scores in id order: the rule top_k must follow."""
    return sorted(range(len(row)), key=lambda column: -row[column])[:k]


def tie_heavy_scores(rows: int, width: int, levels: int, seed: int) -> torch.Tensor:
    """Integer scores in [0, levels): with few levels almost every cut-off is tied."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, levels, (rows, width), generator=generator).to(torch.float32)


@pytest.mark.parametrize("levels", [2, 5, 1000])
@pytest.mark.parametrize("k", [1, 3, 7, 30, 40])
def test_top_k_equals_a_stable_sort(levels, k):
    scores = tie_heavy_scores(50, 30, levels, seed=levels + k)
    scores[3] = float("-inf")  # a row with nothing rankable
    scores[4, ::2] = float("-inf")
    values, columns = top_k(scores, k)
    assert columns.shape == (50, min(k, 30))
    for row in range(50):
        expected = reference_top(scores[row].tolist(), k)
        assert columns[row].tolist() == expected
        assert values[row].tolist() == scores[row, expected].tolist()


def test_hand_made_tie_at_the_cut_off():
    # scores 5, 3, 3, 3, 1 (items 0..4): the top 2 are item 0 and, of the three items at 3,
    # the lowest id (item 1); the top 3 add item 2; item 3 only enters at K = 4.
    scores = torch.tensor([[5.0, 3.0, 3.0, 3.0, 1.0], [3.0, 3.0, 5.0, 3.0, 3.0]])
    assert top_k(scores, 2)[1].tolist() == [[0, 1], [2, 0]]
    assert top_k(scores, 3)[1].tolist() == [[0, 1, 2], [2, 0, 1]]
    assert top_k(scores, 4)[1].tolist() == [[0, 1, 2, 3], [2, 0, 1, 3]]


@pytest.mark.parametrize("levels", [3, 1000])
def test_merge_of_part_tops_equals_top_of_the_union(levels):
    scores = tie_heavy_scores(40, 25, levels, seed=levels)
    columns_of_a = torch.tensor([0, 3, 4, 9, 10, 11, 17, 20, 24])  # interleaved id sets
    columns_of_b = torch.tensor(sorted(set(range(25)) - set(columns_of_a.tolist())))
    parts = []
    for part_columns in (columns_of_a, columns_of_b):
        values, local = top_k(scores[:, part_columns], 6)
        extra = part_columns[local] * 10  # something that must travel with each item
        parts.append((values, part_columns[local], extra))
    values, ids, extra = merge_top_k(parts, 6)
    expected_values, expected_ids = top_k(scores, 6)
    assert torch.equal(ids, expected_ids) and torch.equal(values, expected_values)
    assert torch.equal(extra, ids * 10)


def test_rank_order_sorts_ties_by_id_and_carries_extras():
    values = torch.tensor([[1.0, 2.0, 2.0, 2.0]])
    ids = torch.tensor([[7, 9, 3, 5]])
    sorted_values, sorted_ids, extra = rank_order(values, ids, ids + 100)
    assert sorted_ids.tolist() == [[3, 5, 9, 7]]
    assert sorted_values.tolist() == [[2.0, 2.0, 2.0, 1.0]]
    assert extra.tolist() == [[103, 105, 109, 107]]
