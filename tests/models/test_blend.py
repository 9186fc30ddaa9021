"""The blend's matrices against a plain per-user z-score of each run's scores."""

from __future__ import annotations

import pytest
import torch

from coldbrew.models.blend import Blend, blended, standardised
from coldbrew.research.boards.blend import weight_grid


def zscore_reference(users, items):
    scores = users @ items.T
    mean = scores.mean(1, keepdim=True)
    std = scores.std(1, unbiased=False, keepdim=True)
    return (scores - mean) / std


def test_standardised_hand_computed():
    # one user u = (1, 0) over items (1, 0), (3, 0): scores 1 and 3, mean 2, std 1,
    # so z = (-1, 1): the scaled user (1, 0) / 1 and the offset -2 / 1 give -1 and 1
    users, items = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0], [3.0, 0.0]])
    scaled, offset = standardised(users, items)
    assert torch.allclose(scaled, torch.tensor([[1.0, 0.0]]))
    assert torch.allclose(offset, torch.tensor([-2.0]))


def test_blend_equals_weighted_per_user_zscores():
    generator = torch.Generator().manual_seed(0)
    first = (torch.randn(7, 4, generator=generator), torch.randn(11, 4, generator=generator))
    second = (torch.randn(7, 3, generator=generator), 5 + torch.randn(11, 3, generator=generator))
    vectors = blended([first, second], [0.3, 0.7])
    expected = 0.3 * zscore_reference(*first) + 0.7 * zscore_reference(*second)
    assert torch.allclose(vectors.users @ vectors.items.T, expected, atol=1e-5)


def test_weight_grid_covers_the_simplex():
    assert sorted(weight_grid(2)) == sorted((i / 10, (10 - i) / 10) for i in range(11))
    assert len(weight_grid(3)) == 66  # C(12, 2) multiples of 1/10 summing to 1
    assert len(weight_grid(4)) == 56  # steps of 1/5: C(8, 3)
    assert all(sum(weights) == pytest.approx(1) for weights in weight_grid(4))


def test_checkpoint_gives_a_rebuilt_blend_its_widths():
    vectors = blended([(torch.randn(5, 2), torch.randn(6, 2))] * 2, [0.5, 0.5])
    saved = Blend(5, 6, vectors).state_dict()
    rebuilt = Blend(5, 6)
    rebuilt.load_state_dict(saved)
    assert torch.equal(rebuilt.score_users(torch.arange(5)), vectors.users @ vectors.items.T)
