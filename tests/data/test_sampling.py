"""The device negative sampler: exact exclusion, only warm items, uniform over what is left."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy import stats

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


# ---------------------------------------------------------------- without replacement
@pytest.mark.parametrize("method", METHODS)
def test_without_replacement_never_repeats_and_never_draws_a_known_item(method):
    known = random_known(num_users=60, num_items=50, density=0.3, seed=3)
    warm = np.arange(0, 50, 2)  # 25 warm items; each user knows about 7 of them
    sampler = NegativeSampler(known, warm, method=method, replace=False)
    fewest_free = min(len(np.setdiff1d(warm, known[user].indices)) for user in range(60))
    users = torch.arange(60).repeat_interleave(50)
    negatives = sampler.sample(users, fewest_free, torch.Generator().manual_seed(1)).numpy()
    assert negatives.shape == (3000, fewest_free)
    ordered = np.sort(negatives, axis=1)
    assert (ordered[:, 1:] != ordered[:, :-1]).all()  # no repeat within a row
    assert not (known.toarray() > 0)[users[:, None].numpy(), negatives].any()
    assert np.isin(negatives, warm).all()


@pytest.mark.parametrize("method", METHODS)
def test_a_user_with_exactly_num_neg_free_items_gets_them_all(method):
    known = sp.csr_matrix(np.array([[1, 0, 1, 0, 0, 1, 0, 0]], dtype=np.float32))
    sampler = NegativeSampler(known, np.arange(8), method=method, replace=False)
    negatives = sampler.sample(torch.zeros(200, dtype=torch.int64), 5)
    assert (np.sort(negatives.numpy(), axis=1) == [1, 3, 4, 6, 7]).all()


@pytest.mark.parametrize("method", METHODS)
def test_without_replacement_is_uniform_over_the_free_items(method):
    # one user, 12 free warm items of 16, 5 distinct negatives per row, 20,000 rows:
    # each free item is in a row with probability 5/12, so expects 20,000 * 5/12 draws
    known = sp.csr_matrix(np.array([[1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0]]))
    sampler = NegativeSampler(known.astype(np.float32), np.arange(16), method=method, replace=False)
    draws = sampler.sample(
        torch.zeros(20_000, dtype=torch.int64), 5, torch.Generator().manual_seed(0)
    )
    counts = np.bincount(draws.flatten().numpy(), minlength=16)
    assert counts[[0, 3, 6, 10]].sum() == 0
    free_counts = np.delete(counts, [0, 3, 6, 10])
    expected = 20_000 * 5 / 12
    chi_square = ((free_counts - expected) ** 2 / expected).sum()
    # fixed seed: the statistic is a constant; 36.1 is chi2(11)'s 1 - 1e-4 quantile
    assert chi_square < stats.chi2.ppf(1 - 1e-4, df=11), (chi_square, free_counts)


@pytest.mark.parametrize("method", METHODS)
def test_without_replacement_draws_like_random_sample(method):
    # Ordered triples from 5 free items: random.sample gives each of the 5*4*3 = 60 the same
    # probability. The sampler's 30,000 rows and random.sample's 30,000 must both look uniform
    # and alike (a 2 x 60 homogeneity test); fixed seeds make both statistics constants.
    known = sp.csr_matrix(np.array([[0, 1, 0, 0, 1, 0, 0]], dtype=np.float32))
    free = [0, 2, 3, 5, 6]
    sampler = NegativeSampler(known, np.arange(7), method=method, replace=False)
    ours = sampler.sample(
        torch.zeros(30_000, dtype=torch.int64), 3, torch.Generator().manual_seed(5)
    )
    reference = random.Random(5)
    theirs = [tuple(reference.sample(free, 3)) for _ in range(30_000)]
    triples = sorted(itertools.permutations(free, 3))
    ours_counts = Counter(map(tuple, ours.tolist()))
    assert set(ours_counts) == set(triples)  # same support: every ordered triple, nothing else
    table = np.array([[ours_counts[t] for t in triples], [Counter(theirs)[t] for t in triples]])
    for row in table:  # goodness of fit to uniform, df = 59
        assert stats.chisquare(row).pvalue > 1e-4, row
    assert stats.chi2_contingency(table).pvalue > 1e-4  # the two samplers alike


def test_stubborn_rows_are_decoded(monkeypatch):
    # no redraw round at all: every row with a repeat goes to the decoding path
    monkeypatch.setattr(sampling, "MAX_ROUNDS", 0)
    known = random_known(num_users=10, num_items=30, density=0.2, seed=2)
    sampler = NegativeSampler(known, np.arange(30), method="rejection", replace=False)
    users = torch.arange(10).repeat_interleave(40)
    negatives = sampler.sample(users, 12, torch.Generator().manual_seed(3)).numpy()
    ordered = np.sort(negatives, axis=1)
    assert (ordered[:, 1:] != ordered[:, :-1]).all()
    assert not (known.toarray() > 0)[users[:, None].numpy(), negatives].any()


@pytest.mark.parametrize("method", METHODS)
def test_too_many_distinct_negatives_is_a_clear_error(method):
    known = sp.csr_matrix(np.array([[1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], dtype=np.float32))
    sampler = NegativeSampler(known, np.arange(5), method=method, replace=False)
    with pytest.raises(DataError, match="fewer free warm items than num_neg = 3"):
        sampler.check_users(np.array([0, 1]), num_neg=3)
    sampler.check_users(np.array([1]), num_neg=3)
    with pytest.raises(DataError, match=r"e\.g\. user 0: 2"):
        sampler.sample(torch.tensor([1, 0]), 3)
    with pytest.raises(DataError, match="only 5 warm items"):
        sampler.sample(torch.tensor([1]), 6)
    # with replacement, more negatives than free items is legal: repeats of the free ones
    repeating = NegativeSampler(known, np.arange(5), method=method)
    repeating.check_users(np.array([0, 1]), num_neg=3)
    assert set(repeating.sample(torch.tensor([0]), 50).flatten().tolist()) == {3, 4}
