"""BPR-MF: its loss and penalty against hand-computed values; cold rows stay zero."""

from __future__ import annotations

import math

import torch

from coldbrew.models.base import Batch
from coldbrew.models.zoo.bpr import BPR, bpr_loss, l2_penalty


def test_bpr_loss_by_hand():
    positive = torch.tensor([1.0, 0.0])
    negatives = torch.tensor([[1.0, 1.0 + math.log(3)], [math.log(3), -math.log(3)]])
    # negative - positive: [0, ln 3], [ln 3, -ln 3]; softplus(x) = ln(1 + e^x):
    # ln 2, ln 4, ln 4, ln(4/3) -> mean (ln 2 + 2 ln 2 + 2 ln 2 + 2 ln 2 - ln 3) / 4
    expected = (7 * math.log(2) - math.log(3)) / 4
    torch.testing.assert_close(bpr_loss(positive, negatives), torch.tensor(expected))


def test_l2_penalty_by_hand():
    users = torch.tensor([[1.0, 0.0], [0.0, 2.0]])  # |u|^2: 1, 4
    items = torch.tensor(
        [
            [[1.0, 1.0], [2.0, 0.0], [0.0, 0.0]],  # positive 2; negatives 4, 0 -> mean 2
            [[0.0, 1.0], [1.0, 1.0], [2.0, 2.0]],  # positive 1; negatives 2, 8 -> mean 5
        ]
    )
    # rows: 1 + 2 + 2 = 5 and 4 + 1 + 5 = 10 -> mean 7.5
    torch.testing.assert_close(l2_penalty(users, items), torch.tensor(7.5))


def test_forward_is_the_loss_plus_weighted_penalty():
    model = BPR(num_users=3, num_items=4, cold_items=torch.tensor([3]), dim=2, reg=0.5)
    with torch.no_grad():
        model.user_table.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]))
        model.item_table.copy_(torch.tensor([[1.0, 1.0], [2.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
    batch = Batch(users=torch.tensor([0, 1]), items=torch.tensor([[0, 1], [2, 1]]))
    # scores: user 0: 1 (item 0), 2 (item 1); user 1: 2 (item 2), 0 (item 1)
    # bpr: (softplus(1) + softplus(-2)) / 2; l2: rows 1 + 2 + 4 = 7 and 4 + 1 + 4 = 9 -> 8
    output = model(batch)
    expected_bpr = (math.log(1 + math.e) + math.log(1 + math.exp(-2))) / 2
    torch.testing.assert_close(output.terms["bpr"], torch.tensor(expected_bpr))
    torch.testing.assert_close(output.terms["l2"], torch.tensor(0.5 * 8))
    torch.testing.assert_close(output.total, torch.tensor(expected_bpr + 4.0))


def test_cold_rows_start_and_stay_zero():
    torch.manual_seed(0)
    model = BPR(num_users=3, num_items=4, cold_items=torch.tensor([1, 3]), dim=2, reg=0.0)
    assert torch.equal(model.item_table[[1, 3]], torch.zeros(2, 2))
    with torch.no_grad():
        model.item_table.add_(1.0)  # even if a cold row moved, it scores zero
    assert torch.equal(model.item_embeddings()[[1, 3]], torch.zeros(2, 2))
    assert torch.equal(model.score_users(torch.arange(3))[:, [1, 3]], torch.zeros(3, 2))
