"""The neighbor term's InfoNCE against a plain float64 loop: values, gradients, padding, blocks
and temperatures on both sides of the fixed-shift limit."""

from __future__ import annotations

import math

import pytest
import torch

from coldbrew.models.clcrec import neighbor_info_nce as module
from coldbrew.models.clcrec.neighbor_info_nce import FIXED_SHIFT_LIMIT, neighbor_info_nce


def plain_loss(anchors, positives, valid, temperature: float) -> torch.Tensor:
    """Per valid row ``i``: ``−log(exp(s_ii) / Σ_valid j exp(s_ij))``, ``s = cos / τ``, one
    scalar at a time in float64 (no shift: float64 holds exp(1000))."""
    unit_anchors = [row / row.norm() for row in anchors.double()]
    unit_positives = [row / row.norm() for row in positives.double()]
    kept = [i for i in range(len(valid)) if valid[i]]
    total = 0.0
    for i in kept:
        logits = {j: torch.dot(unit_anchors[i], unit_positives[j]) / temperature for j in kept}
        total = total - torch.log(torch.exp(logits[i]) / sum(torch.exp(v) for v in logits.values()))
    return total / len(kept)


def assert_same_value_and_gradients(fast, slow, inputs) -> None:
    torch.testing.assert_close(fast.double(), slow, rtol=1e-5, atol=1e-6)
    for fast_grad, slow_grad in zip(
        torch.autograd.grad(fast, inputs), torch.autograd.grad(slow, inputs), strict=True
    ):
        torch.testing.assert_close(fast_grad, slow_grad, rtol=1e-4, atol=1e-6)


def random_inputs(rows: int, dim: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    anchors = torch.randn(rows, dim, generator=generator, requires_grad=True)
    positives = torch.randn(rows, dim, generator=generator, requires_grad=True)
    return anchors, positives


@pytest.mark.parametrize("temperature", [2.0, 0.2, 1 / FIXED_SHIFT_LIMIT, 0.01, 0.002])
@pytest.mark.parametrize("block_elements", [None, 5, 12])  # None: one kept block; 5: 1 row, 12: 2
def test_matches_a_plain_loop_and_skips_invalid_rows(temperature, block_elements, monkeypatch):
    if block_elements is not None:
        monkeypatch.setattr(module, "BLOCK_ELEMENTS", block_elements)
    anchors, positives = random_inputs(5, 3, seed=4)
    valid = torch.tensor([True, True, False, True, False])
    fast = neighbor_info_nce(anchors, positives, valid, temperature)
    slow = plain_loss(anchors, positives, valid, temperature)
    assert math.isfinite(fast.item())
    torch.testing.assert_close(fast.double(), slow, rtol=1e-5, atol=1e-5)
    fast_grads = torch.autograd.grad(fast, [anchors, positives])
    slow_grads = torch.autograd.grad(slow, [anchors, positives])
    for fast_grad, slow_grad in zip(fast_grads, slow_grads, strict=True):
        torch.testing.assert_close(fast_grad, slow_grad, rtol=1e-4, atol=1e-4)
    # rows 2 and 4 are padding: no loss, so no gradient
    assert fast_grads[0][[2, 4]].abs().max() == 0 and fast_grads[1][[2, 4]].abs().max() == 0


@pytest.mark.parametrize("temperature", [2.0, 0.05])
def test_random_rows_match_the_loop(temperature):
    anchors, positives = random_inputs(40, 8, seed=7)
    valid = torch.rand(40, generator=torch.Generator().manual_seed(8)) < 0.8
    fast = neighbor_info_nce(anchors, positives, valid, temperature)
    slow = plain_loss(anchors, positives, valid, temperature)
    assert_same_value_and_gradients(fast, slow, [anchors, positives])


@pytest.mark.parametrize(
    ("block_elements", "forward_calls", "backward_calls"), [(None, 1, 0), (12, 3, 3)]
)
def test_kept_exponentials_are_not_recomputed(
    block_elements, forward_calls, backward_calls, monkeypatch
):
    # 5 rows: one kept block (the backward reuses it), or 2-row blocks recomputed in backward
    if block_elements is not None:
        monkeypatch.setattr(module, "BLOCK_ELEMENTS", block_elements)
    calls = []
    original = module.exponentials
    monkeypatch.setattr(module, "exponentials", lambda *args: calls.append(1) or original(*args))
    anchors, positives = random_inputs(5, 3, seed=2)
    loss = neighbor_info_nce(anchors, positives, torch.ones(5, dtype=torch.bool), 0.5)
    assert len(calls) == forward_calls
    loss.backward()
    assert len(calls) == forward_calls + backward_calls


def test_identical_rows_at_a_tiny_temperature_stay_finite():
    # every logit equals the bound 1/τ = 1000: far past the fixed shift, no overflow, loss log 4
    rows = torch.ones(4, 3, requires_grad=True)
    loss = neighbor_info_nce(rows, rows, torch.ones(4, dtype=torch.bool), 1e-3)
    torch.testing.assert_close(loss, torch.tensor(math.log(4)))
    loss.backward()
    assert torch.isfinite(rows.grad).all()


@pytest.mark.parametrize(("rows", "negatives"), [(10, 3), (11, 4), (9, 1)])
def test_grouped_negatives_match_a_loop_over_the_same_groups(rows, negatives):
    # --neighbor-negatives K: rows shuffled into groups of K + 1 (the last one padded); each
    # row against the valid rows of its own group, the mean over every valid row
    anchors, positives = random_inputs(rows, 5, seed=rows)
    valid = torch.ones(rows, dtype=torch.bool)
    valid[[2, rows - 1]] = False
    torch.manual_seed(3)
    fast = neighbor_info_nce(anchors, positives, valid, 0.3, negatives=negatives)
    torch.manual_seed(3)
    order = torch.argsort(torch.rand(rows))  # the permutation the function drew
    total, count = torch.zeros((), dtype=torch.float64), 0
    for group in order.split(negatives + 1):
        kept = int(valid[group].sum())
        if kept:
            loss = plain_loss(anchors[group], positives[group], valid[group], 0.3)
            total, count = total + loss * kept, count + kept
    slow = total / count
    assert_same_value_and_gradients(fast, slow, [anchors, positives])


def test_grouped_negatives_differ_from_all_and_equal_it_when_the_group_holds_every_row():
    anchors, positives = random_inputs(12, 4, seed=2)
    valid = torch.ones(12, dtype=torch.bool)
    every = neighbor_info_nce(anchors, positives, valid, 0.5)
    assert neighbor_info_nce(anchors, positives, valid, 0.5, negatives=11) == every
    assert abs(neighbor_info_nce(anchors, positives, valid, 0.5, negatives=3) - every) > 0.1
