"""The device negative sampler: exact exclusion, only warm items, uniform over what is left."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew.data import sampling
from coldbrew.data.sampling import NegativeSampler
from coldbrew.errors import DataError

METHODS = ["rank", "rejection"]


def random_known(num_users=60, num_items=50, density=0.3, seed=1) -> sp.csr_matrix:
    matrix = sp.random(num_users, num_items, density=density, format="csr", random_state=seed)
    matrix.data[:] = 1.0
    return matrix


@pytest.mark.parametrize("method", METHODS)
def test_never_draws_a_known_or_cold_item(method):
    known = random_known()
    warm = np.arange(0, 50, 2)  # every other item is cold
    sampler = NegativeSampler(known, warm, method=method)
    users = torch.arange(60).repeat_interleave(100)
    negatives = sampler.sample(users, 64)
    assert negatives.shape == (6000, 64)
    dense = known.toarray() > 0
    assert not dense[users[:, None].numpy(), negatives.numpy()].any()
    assert np.isin(negatives.numpy(), warm).all()


@pytest.mark.parametrize("method", METHODS)
def test_draws_are_uniform_over_the_free_warm_items(method):
    known = random_known(num_users=3, num_items=40, density=0.4, seed=4)
    warm = np.arange(30)
    sampler = NegativeSampler(known, warm, method=method)
    torch.manual_seed(0)
    draws = sampler.sample(torch.tensor([1]).repeat(2000), 50).flatten().numpy()  # 100,000 draws
    free = np.setdiff1d(warm, known[1].indices)
    counts = np.bincount(draws, minlength=40)[free]
    expected = len(draws) / len(free)
    chi_square = ((counts - expected) ** 2 / expected).sum()
    # df = len(free) - 1 <= 29; the 99.9% quantile of chi2(29) is 58.3
    assert chi_square < 58.3, (chi_square, counts)
    assert counts.sum() == len(draws)


@pytest.mark.parametrize("method", METHODS)
def test_plain_reference_agrees_on_the_candidate_sets(method):
    known = random_known(num_users=8, num_items=20, density=0.5, seed=7)
    warm = np.array([0, 1, 2, 3, 5, 8, 13, 17, 19])
    sampler = NegativeSampler(known, warm, method=method)
    users = torch.arange(8).repeat_interleave(500)
    negatives = sampler.sample(users, 20)
    for user in range(8):
        reference = set(warm) - set(known[user].indices)  # the original's set difference
        drawn = set(negatives[users == user].flatten().tolist())
        assert drawn == reference  # 10,000 draws cover every candidate


def test_user_knowing_every_warm_item_is_reported():
    known = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 0]], dtype=np.float32))
    sampler = NegativeSampler(known, np.array([0, 1]))
    with pytest.raises(DataError, match="know every warm item"):
        sampler.check_users(np.array([0, 1]))
    sampler.check_users(np.array([1]))


@pytest.mark.parametrize("warm", [np.arange(30), np.arange(40)[::-1][:30]])
def test_rejection_hands_stubborn_positions_to_the_rank_method(monkeypatch, warm):
    # User 0 knows 29 of 30 warm items: a draw is rejected with probability 29/30, so with one
    # redraw almost every position reaches the rank method, which must still find the free one.
    monkeypatch.setattr(sampling, "MAX_ROUNDS", 1)
    known = sp.lil_matrix((2, 40))
    known[0, warm[1:]] = 1
    known[1, warm[:3]] = 1
    sampler = NegativeSampler(known.tocsr(), warm, method="rejection")
    negatives = sampler.sample(torch.tensor([0, 1, 0]), 500)
    assert (negatives[[0, 2]] == int(warm[0])).all()
    assert not np.isin(negatives[1].numpy(), warm[:3]).any()
    assert set(negatives[1].tolist()) == set(warm[3:].tolist())


def test_cpu_uses_rejection_while_the_bitset_fits(monkeypatch):
    known = random_known()
    assert NegativeSampler(known, np.arange(50)).method == "rejection"
    monkeypatch.setattr(sampling, "BITSET_BUDGET_BYTES", 8)
    assert NegativeSampler(known, np.arange(50)).method == "rank"
    with pytest.raises(ValueError, match="method"):
        NegativeSampler(known, np.arange(50), method="bitset")
