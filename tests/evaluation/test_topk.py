"""Top K under the (score descending, tie key ascending) order == a plain sort on that pair."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from coldbrew.evaluation.topk import merge_top_k, rank_order, tie_keys, tie_shifts, top_k


def reference_top(row: list[float], keys: list[int], k: int) -> list[int]:
    """The rule top_k must follow: higher score first, equal scores by lower key."""
    return sorted(range(len(row)), key=lambda column: (-row[column], keys[column]))[:k]


def tie_heavy_scores(rows: int, width: int, levels: int, seed: int) -> torch.Tensor:
    """Integer scores in [0, levels): with few levels almost every cut-off is tied."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, levels, (rows, width), generator=generator).to(torch.float32)


def test_tie_keys_are_a_fixed_permutation_not_the_id_order():
    keys = tie_keys(1000)
    assert sorted(keys.tolist()) == list(range(1000))
    assert np.array_equal(keys, tie_keys(1000))  # the same for every run on the same data
    assert not np.array_equal(keys[:100], tie_keys(1001)[:100])  # drawn per size
    # not the id order in disguise: ids and keys are uncorrelated (|r| ~ 1/sqrt(1000) ~ 0.03)
    assert abs(np.corrcoef(np.arange(1000), keys)[0, 1]) < 0.15


@pytest.mark.parametrize("levels", [2, 5, 1000])
@pytest.mark.parametrize("k", [1, 3, 7, 30, 40])
def test_top_k_equals_a_sort_on_score_then_key(levels, k):
    scores = tie_heavy_scores(50, 30, levels, seed=levels + k)
    scores[3] = float("-inf")  # a row with nothing rankable
    scores[4, ::2] = float("-inf")
    keys = torch.from_numpy(tie_keys(30))
    values, columns = top_k(scores, k, keys)
    assert columns.shape == (50, min(k, 30))
    for row in range(50):
        expected = reference_top(scores[row].tolist(), keys.tolist(), k)
        assert columns[row].tolist() == expected
        assert values[row].tolist() == scores[row, expected].tolist()


def test_hand_made_tie_at_the_cut_off():
    # scores 5, 3, 3, 3, 1 (columns 0..4) with keys 4, 2, 0, 1, 3: among the three columns at
    # 3 the order is by key: column 2 (key 0), column 3 (key 1), column 1 (key 2)
    scores = torch.tensor([[5.0, 3.0, 3.0, 3.0, 1.0], [3.0, 3.0, 5.0, 3.0, 3.0]])
    keys = torch.tensor([4, 2, 0, 1, 3])
    assert top_k(scores, 2, keys)[1].tolist() == [[0, 2], [2, 3]]
    assert top_k(scores, 3, keys)[1].tolist() == [[0, 2, 3], [2, 3, 1]]
    assert top_k(scores, 4, keys)[1].tolist() == [[0, 2, 3, 1], [2, 3, 1, 4]]


@pytest.mark.parametrize("levels", [3, 1000])
def test_merge_of_part_tops_equals_top_of_the_union(levels):
    scores = tie_heavy_scores(40, 25, levels, seed=levels)
    keys = torch.from_numpy(tie_keys(25))
    columns_of_a = torch.tensor([0, 3, 4, 9, 10, 11, 17, 20, 24])  # interleaved id sets
    columns_of_b = torch.tensor(sorted(set(range(25)) - set(columns_of_a.tolist())))
    parts = []
    for part_columns in (columns_of_a, columns_of_b):
        values, local = top_k(scores[:, part_columns], 6, keys[part_columns])
        extra = part_columns[local] * 10  # something that must travel with each item
        parts.append((values, part_columns[local], extra))
    values, ids, extra = merge_top_k(parts, 6, keys)
    for row in range(40):
        assert ids[row].tolist() == reference_top(scores[row].tolist(), keys.tolist(), 6)
    assert torch.equal(values, scores.gather(1, ids))
    assert torch.equal(extra, ids * 10)


def test_rank_order_sorts_ties_by_key_and_carries_extras():
    values = torch.tensor([[1.0, 2.0, 2.0, 2.0]])
    ids = torch.tensor([[7, 9, 3, 5]])
    keys = torch.arange(10).flip(0)  # key 9 - id: the higher id first among ties
    sorted_values, sorted_ids, extra = rank_order(values, ids, ids + 100, keys=keys)
    assert sorted_ids.tolist() == [[9, 5, 3, 7]]
    assert sorted_values.tolist() == [[2.0, 2.0, 2.0, 1.0]]
    assert extra.tolist() == [[109, 105, 103, 107]]


@pytest.mark.parametrize("levels", [2, 1000])
def test_rotated_keys_per_row_equal_a_sort_on_score_then_rotated_key(levels):
    # row r ranks ties by (key + shift[r]) % 40: top_k, merge_top_k and the plain sort agree
    scores = tie_heavy_scores(30, 40, levels, seed=levels + 1)
    keys = torch.from_numpy(tie_keys(40))
    shift = torch.from_numpy(tie_shifts(30, 40))
    assert len(set(shift.tolist())) > 10
    values, columns = top_k(scores, 7, keys, shift, 40)
    halves = [torch.arange(0, 40, 2), torch.arange(1, 40, 2)]
    parts = []
    for half in halves:
        part_values, local = top_k(scores[:, half], 7, keys[half], shift, 40)
        parts.append((part_values, half[local]))
    merged_values, merged_ids = merge_top_k(parts, 7, keys, shift)
    for row in range(30):
        rotated = ((keys + shift[row]) % 40).tolist()
        expected = reference_top(scores[row].tolist(), rotated, 7)
        assert columns[row].tolist() == expected == merged_ids[row].tolist()
    assert torch.equal(values, merged_values)


@pytest.mark.parametrize("rotated", [False, True])
def test_wide_rows_with_ties_near_the_top_equal_the_plain_sort(rotated, monkeypatch):
    # items with the same content score alike: wide rows whose best values repeat, so the tied
    # rows are re-ranked from their entries at or above the cut, not the whole row
    width, k = 3000, 20
    generator = torch.Generator().manual_seed(7)
    scores = torch.rand(40, width, generator=generator)
    best = scores.topk(30, dim=1).values
    scores[:, 100:110] = best[:, :1]  # ten copies of each row's best
    scores[:, 200:260] = best[:, 5:6]  # sixty copies of the sixth, across the cut at 20
    scores[5, :] = 0.5  # one row that scores everything alike
    keys = torch.from_numpy(tie_keys(width))
    shift = torch.from_numpy(tie_shifts(40, width)) if rotated else None
    fetched = []
    plain_topk = torch.topk
    monkeypatch.setattr(torch, "topk", lambda *a, **o: fetched.append(a[1]) or plain_topk(*a, **o))
    values, columns = top_k(scores, k, keys, shift, width)
    # a row's entries at or above its cut: its best 11 times, 4 others, its sixth 61 times
    assert fetched == [k + 1, 76]
    for row in range(40):
        rotation = int(shift[row]) if rotated else 0
        row_keys = ((keys + rotation) % width).tolist()
        expected = reference_top(scores[row].tolist(), row_keys, k)
        assert columns[row].tolist() == expected
        assert values[row].tolist() == scores[row, expected].tolist()


def test_each_row_its_own_keys_equal_a_sort_on_score_then_that_rows_key():
    # rows whose columns are different items (a blend's kept candidates): keys (B, width)
    scores = tie_heavy_scores(30, 40, 3, seed=11)
    item_keys = torch.from_numpy(tie_keys(500))
    ids = torch.stack(
        [torch.randperm(500, generator=torch.Generator().manual_seed(r))[:40] for r in range(30)]
    )
    shift = torch.from_numpy(tie_shifts(30, 500))
    values, columns = top_k(scores, 7, item_keys[ids], shift, 500)
    for row in range(30):
        rotated = ((item_keys[ids[row]] + shift[row]) % 500).tolist()
        assert columns[row].tolist() == reference_top(scores[row].tolist(), rotated, 7)
    assert torch.equal(values, scores.gather(1, columns))
