"""The collaborative backbone: cached per dataset, seed and options; cold rows zero; it learns a
planted structure; the caller's random stream is left as it was."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

from coldbrew.data.dataset import Dataset, interactions_to_csr
from coldbrew.errors import ColdbrewError
from coldbrew.models.zoo.teacher_options import TeacherOptions
from coldbrew.training import backbone
from coldbrew.training.backbone import collaborative_teacher

NUM_USERS, NUM_ITEMS, COLD = 24, 20, (16, 17, 18, 19)


def planted() -> tuple[Dataset, np.ndarray]:
    """Two tastes: user u likes the warm items of parity u % 2. Each user's training rows are
    those items but one (held out, returned per user); items 16-19 are cold."""
    users, items, held = [], [], np.zeros(NUM_USERS, dtype=np.int64)
    for user in range(NUM_USERS):
        liked = [item for item in range(16) if item % 2 == user % 2]  # 8 warm items
        held[user] = liked[(user // 2) % len(liked)]
        kept = [item for item in liked if item != held[user]]
        users += [user] * len(kept)
        items += kept
    train = interactions_to_csr(np.array(users), np.array(items), (NUM_USERS, NUM_ITEMS))
    dataset = Dataset("planted", NUM_USERS, NUM_ITEMS, train, cold_items=np.array(COLD))
    return dataset, held


pytestmark = pytest.mark.usefixtures("private_cache")


def options(**values) -> TeacherOptions:
    """Small, short backbones; bpr unless told (it needs no optional package)."""
    return TeacherOptions(**{"backbone": "bpr", "backbone_dim": 8, "backbone_epochs": 5, **values})


def count_training(monkeypatch) -> list[str]:
    """Record each backbone trained (the real trainers still run)."""
    calls: list[str] = []
    for name in ("train_bpr", "train_als"):
        real = getattr(backbone, name)

        def counted(*args, real=real, name=name):
            calls.append(name)
            return real(*args)

        monkeypatch.setattr(backbone, name, counted)
    return calls


def test_a_second_call_loads_identical_tensors_without_training(monkeypatch):
    dataset, _ = planted()
    calls = count_training(monkeypatch)
    first = collaborative_teacher(dataset, options(), 1, progress=False)
    second = collaborative_teacher(dataset, options(), 1, progress=False)
    assert calls == ["train_bpr"]
    assert torch.equal(first.users, second.users) and torch.equal(first.items, second.items)
    assert first.users.dtype == torch.float32 and first.items.shape == (NUM_ITEMS, 8)
    # the training's seconds travel with the cached backbone: a run that reads it counts them
    assert first.seconds > 0 and second.seconds == first.seconds


def test_another_seed_option_or_dataset_trains_again(monkeypatch):
    dataset, _ = planted()
    calls = count_training(monkeypatch)
    base = collaborative_teacher(dataset, options(), 1, progress=False)
    other_seed = collaborative_teacher(dataset, options(), 2, progress=False)
    other_reg = collaborative_teacher(dataset, options(backbone_reg=0.1), 1, progress=False)
    fewer = dataset.train.copy()
    fewer.data[0] = 0
    fewer.eliminate_zeros()
    changed = Dataset("planted", NUM_USERS, NUM_ITEMS, fewer, cold_items=np.array(COLD))
    collaborative_teacher(changed, options(), 1, progress=False)
    assert len(calls) == 4
    assert not torch.equal(base.users, other_seed.users)
    assert not torch.equal(base.users, other_reg.users)


def test_a_damaged_cache_file_is_trained_again(monkeypatch, tmp_path):
    dataset, _ = planted()
    first = collaborative_teacher(dataset, options(), 1, progress=False)
    (path,) = (tmp_path / "cache" / "backbones").iterdir()
    path.write_bytes(b"not a tensor file")
    calls = count_training(monkeypatch)
    again = collaborative_teacher(dataset, options(), 1, progress=False)
    assert calls == ["train_bpr"] and torch.equal(first.users, again.users)


def test_training_leaves_the_callers_random_stream_alone():
    dataset, _ = planted()
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    collaborative_teacher(dataset, options(), 1, progress=False)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("kind", ["bpr", "als"])
def test_cold_rows_are_zero_and_the_planted_tastes_are_learned(kind):
    if kind == "als":
        pytest.importorskip("implicit")
    dataset, held = planted()
    chosen = options(backbone=kind, backbone_epochs=60)
    teacher = collaborative_teacher(dataset, chosen, 3, progress=False)
    assert torch.equal(teacher.items[list(COLD)], torch.zeros(len(COLD), 8))
    assert teacher.items[:16].abs().sum(dim=1).gt(0).all()
    scores = teacher.users @ teacher.items.T  # (users, items)
    users = torch.arange(NUM_USERS)
    other_taste = torch.tensor([[item % 2 != user % 2 for item in range(16)] for user in users])
    best_other = scores[:, :16].masked_fill(~other_taste, float("-inf")).max(dim=1).values
    # every user's held-out item outscores every warm item of the other taste
    assert (scores[users, torch.from_numpy(held)] > best_other).all()


def test_als_without_implicit_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "implicit.cpu.als", None)  # import fails
    dataset, _ = planted()
    with pytest.raises(ColdbrewError, match=r"backbone: als needs the implicit package"):
        collaborative_teacher(dataset, options(backbone="als"), 1, progress=False)


def test_als_is_the_same_under_a_seed_and_differs_across_seeds():
    pytest.importorskip("implicit")
    dataset, _ = planted()
    first, again, other = (
        backbone.train_als(dataset, options(backbone="als"), seed) for seed in (1, 1, 2)
    )
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert not torch.equal(first[0], other[0])


def two_by_two() -> Dataset:
    """Users 0 and 1, items 0 and 1, all warm; every cell observed but (1, 1)."""
    train = interactions_to_csr(np.array([0, 0, 1]), np.array([0, 1, 0]), (2, 2))
    return Dataset("two-by-two", 2, 2, train, cold_items=np.array([], dtype=np.int64))


def rank_one_scores(alpha: float) -> torch.Tensor:
    chosen = options(backbone="als", backbone_dim=1, backbone_epochs=200, backbone_reg=0.0)
    users, items = backbone.train_als(two_by_two(), replace(chosen, backbone_alpha=alpha), 1)
    return users @ items.T  # (2, 2)


def test_alpha_weighs_the_observed_cells_against_the_unobserved_one():
    pytest.importorskip("implicit")
    # alpha 1 weighs all four cells the same: the best rank-1 fit of [[1, 1], [1, 0]] is its top
    # eigenpair, λ = (1 + √5) / 2 and v ∝ (λ, 1), so λ v vᵀ = [[1.171, 0.724], [0.724, 0.447]]
    root5 = 5**0.5
    golden = (1 + root5) / 2
    expected = golden * torch.tensor([[golden**2, golden], [golden, 1.0]]) / (golden**2 + 1)
    assert torch.allclose(rank_one_scores(1.0), expected, atol=2e-3)
    assert abs(expected[1, 1].item() - 1 / root5) < 1e-6
    # alpha 100: the three observed cells fit 1 almost exactly, and a rank-1 fit of three ones
    # in [[1, 1], [1, ?]] puts 1·1/1 = 1 in the fourth; the unobserved weight pulls it a little
    heavy = rank_one_scores(100.0)
    assert torch.allclose(heavy[[0, 0, 1], [0, 1, 0]], torch.ones(3), atol=0.02)
    assert 0.9 < heavy[1, 1].item() < 1.0


def test_the_default_alpha_is_implicits_alpha_one_as_before():
    implicit_als = pytest.importorskip("implicit.cpu.als")
    dataset, _ = planted()
    chosen = options(backbone="als")
    assert chosen.backbone_alpha == 1.0
    users, items = backbone.train_als(dataset, chosen, 4)
    matrix, warm = backbone.warm_columns(dataset)
    reference = implicit_als.AlternatingLeastSquares(
        factors=8, regularization=0.01, alpha=1.0, iterations=5, random_state=4, num_threads=1
    )
    reference.fit(matrix, show_progress=False)
    assert np.allclose(users.numpy(), reference.user_factors, atol=1e-5)
    assert np.allclose(items[torch.from_numpy(warm)].numpy(), reference.item_factors, atol=1e-5)


def test_alpha_files_a_backbone_under_its_own_key(monkeypatch):
    dataset, _ = planted()
    base, heavier = options(), options(backbone_alpha=4.0)
    assert backbone.cache_key(dataset, base, 1)["backbone_alpha"] == 1.0
    assert backbone.cache_key(dataset, heavier, 1)["backbone_alpha"] == 4.0
    calls = count_training(monkeypatch)
    collaborative_teacher(dataset, base, 1, progress=False)
    collaborative_teacher(dataset, heavier, 1, progress=False)
    collaborative_teacher(dataset, heavier, 1, progress=False)
    assert calls == ["train_bpr", "train_bpr"]
