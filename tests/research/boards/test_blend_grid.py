"""The fast weight search (each run's standardised scores once) against the plain one (every
grid point blended and scored by the evaluator): the same values, choice, note and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend import (
    choose_weights,
    grid_values,
    plain_grid_values,
    weight_grid,
)
from coldbrew.research.boards.blend_grid import Members, grid_recalls

USERS, ITEMS = 70, 160


def rows(rng, users, items, per_user) -> sp.csr_matrix:
    matrix = sp.lil_matrix((USERS, ITEMS), dtype=np.float32)
    for user in users:
        matrix[user, rng.choice(items, per_user, replace=False)] = 1.0
    return matrix.tocsr()


def make_dataset(seed: int, *, warm_group: bool = True) -> Dataset:
    """Cold items scattered over the ids; val cold positives on half of them, test's on the
    rest (so ``split`` ranks fewer candidates than ``all``); a val warm group of other users."""
    rng = np.random.default_rng(seed)
    cold = np.sort(rng.choice(ITEMS, 48, replace=False))
    warm = np.setdiff1d(np.arange(ITEMS), cold)
    val_cold, test_cold = cold[:24], cold[24:]
    val = {"cold": rows(rng, range(0, 50), val_cold, 3)}
    if warm_group:
        val["warm"] = rows(rng, range(40, USERS), warm, 2)
    return Dataset(
        name=f"grid{seed}",
        num_users=USERS,
        num_items=ITEMS,
        train=rows(rng, range(USERS), warm, 8),
        cold_items=cold,
        splits={"val": val, "test": {"cold": rows(rng, range(20, 60), test_cold, 2)}},
    )


def random_runs(seed: int, dims=(4, 6, 3)) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(USERS, dim, generator=generator), torch.randn(ITEMS, dim, generator=generator))
        for dim in dims
    ]


def assert_same_values(fast, plain) -> None:
    assert len(fast) == len(plain)
    for point_fast, point_plain in zip(fast, plain, strict=True):
        assert point_fast.keys() == point_plain.keys()
        for convention, values in point_fast.items():
            assert values == pytest.approx(point_plain[convention], abs=1e-12)


@pytest.mark.parametrize("runs", [2, 3])
def test_every_grid_points_value_is_the_evaluators(runs):
    # two folds, both conventions: each point's val cold recall@20 as the evaluator reads the
    # blend built at that point
    sets = [(make_dataset(seed), random_runs(seed)[:runs]) for seed in (0, 1)]
    fast, fast_signal = grid_values(sets, ["all", "split"])
    plain, plain_signal = plain_grid_values(sets, ["all", "split"])
    assert_same_values(fast, plain)
    assert len({value for point in plain for value in point["all"]}) > 5  # points differ
    assert fast_signal(0) is plain_signal(0) is True


@pytest.mark.parametrize("width, chunk_elements", [(20, 1 << 22), (20, 100), (1000, 48 * 7)])
def test_few_candidates_per_user_and_small_chunks_rank_the_same(width, chunk_elements):
    # each run's best 20 of 48 candidates: some users' 20th score is not above the bound on
    # those left out, and they are ranked over every candidate; 1000: nothing left out;
    # chunks of 2 or 7 users
    dataset, runs = make_dataset(2), random_runs(2)
    grid = weight_grid(3)
    plain, _ = plain_grid_values([(dataset, runs)], ["all"])
    fast = grid_recalls(
        dataset, Members.of(runs), grid, "all", width=width, chunk_elements=chunk_elements
    )
    assert fast == pytest.approx([point["all"][0] for point in plain], abs=1e-12)


def test_ties_rank_by_the_evaluators_tie_keys():
    # run 0 scores every cold item alike, run 1 gives 6 distinct vectors to its cold items:
    # most top 20s end in ties, broken by the items' rotated keys
    dataset = make_dataset(3)
    runs = random_runs(3, dims=(4, 5))
    runs[0][1][dataset.cold_items] = runs[0][1][dataset.cold_items[0]].clone()
    runs[1][1][dataset.cold_items] = runs[1][1][dataset.cold_items % 6]
    fast, _ = grid_values([(dataset, runs)], ["all", "split"])
    plain, _ = plain_grid_values([(dataset, runs)], ["all", "split"])
    assert_same_values(fast, plain)


def test_training_items_among_the_cold_candidates_are_never_ranked():
    # some users' training rows hold cold items, val positives among them: masked, never hits
    dataset = make_dataset(4)
    train = dataset.train.tolil()
    val_cold = dataset.splits["val"]["cold"]
    for user in range(0, 30, 3):
        train[user, val_cold[user].indices[:2]] = 1.0
        train[user, dataset.cold_items[-3:]] = 1.0
    dataset.train = train.tocsr()
    runs = random_runs(4)
    fast, _ = grid_values([(dataset, runs)], ["all"])
    plain, _ = plain_grid_values([(dataset, runs)], ["all"])
    assert_same_values(fast, plain)


@pytest.mark.parametrize("objective", ["monitored", "joint"])
def test_the_choice_and_its_line_are_the_plain_searchs(objective):
    sets = [(make_dataset(seed), random_runs(seed + 10)) for seed in (5, 6)]
    fast_lines, plain_lines = [], []
    fast = choose_weights(sets, "split", objective=objective, log=fast_lines.append)
    plain = choose_weights(
        sets, "split", objective=objective, log=plain_lines.append, values_of=plain_grid_values
    )
    assert fast[0] == plain[0] and fast[1] == pytest.approx(plain[1], abs=1e-12)
    assert fast_lines == plain_lines


def test_no_cold_signal_is_noted_as_the_evaluator_notes_it():
    # every cold item has one vector in both runs: no grid point tells them apart
    dataset = make_dataset(7)
    runs = random_runs(7, dims=(3, 3))
    for _, items in runs:
        items[dataset.cold_items] = items[dataset.cold_items[0]].clone()
    lines = {"fast": [], "plain": []}
    choose_weights([(dataset, runs)], "all", log=lines["fast"].append)
    choose_weights([(dataset, runs)], "all", log=lines["plain"].append, values_of=plain_grid_values)
    assert lines["fast"] == lines["plain"]
    assert "no cold signal" in lines["fast"][0]


def test_the_cold_signal_counts_every_val_user_as_the_evaluator_does():
    # the val cold group's users have zero vectors (every score 0); only the warm group's
    # users 50..69 tell cold items apart: the signal is there, and absent without them
    dataset = make_dataset(8)
    runs = random_runs(8, dims=(3, 4))
    for users, _ in runs:
        users[:50] = 0.0
    fast, fast_signal = grid_values([(dataset, runs)], ["all"])
    plain, plain_signal = plain_grid_values([(dataset, runs)], ["all"])
    assert_same_values(fast, plain)
    assert (
        [fast_signal(p) for p in range(11)] == [plain_signal(p) for p in range(11)] == [True] * 11
    )
    lone = make_dataset(8, warm_group=False)
    assert grid_values([(lone, runs)], ["all"])[1](3) is False
    assert plain_grid_values([(lone, runs)], ["all"])[1](3) is False


def test_refusals_are_the_plain_searchs():
    dataset, runs = make_dataset(9), random_runs(9, dims=(3, 3))
    runs[1][0][5, 1] = float("nan")
    for values_of in (grid_values, plain_grid_values):
        with pytest.raises(ColdbrewError, match="user_vectors contains NaN or infinite"):
            choose_weights([(dataset, runs)], "all", log=print, values_of=values_of)
    dataset.splits["val"].pop("cold")
    runs = random_runs(9, dims=(3, 3))
    for values_of in (grid_values, plain_grid_values):
        with pytest.raises(ColdbrewError, match="has no cold val users"):
            choose_weights([(dataset, runs)], "all", log=print, values_of=values_of)
