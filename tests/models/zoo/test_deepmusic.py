"""DeepMusic's regression loss and scores by hand on 2 users and 3 items."""

from __future__ import annotations

import pytest
import torch

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Teacher
from coldbrew.models.zoo.deepmusic import DeepMusic
from coldbrew.models.zoo.deepmusic_config import DeepMusicOptions
from zoo_support import BATCH, CATALOGUE, TEACHER, identity_encoder


def model() -> DeepMusic:
    built = DeepMusic(CATALOGUE, TEACHER, DeepMusicOptions(backbone_dim=2, hidden=2))
    identity_encoder(built.encoder)  # MLP(content) = content
    return built


def test_loss_is_the_mean_squared_distance_to_the_backbone_item_vectors():
    output = model()(BATCH)
    # MLP: i0 -> [1, 0] against [1, 2]: 0² + 2² = 4; i1 -> [0, 1] against [0, 1]: 0
    # occurrences i0, i1, i1, i0: (4 + 0 + 0 + 4) / 4 = 2
    assert output.total.item() == pytest.approx(2.0)
    assert output.terms["regression"].item() == pytest.approx(2.0)


def test_warm_items_keep_the_backbone_and_cold_items_come_from_content():
    built = model()
    # i0, i1 warm: the backbone's rows; i2 cold: MLP([1, 0]) = [1, 0]
    expected = torch.tensor([[1.0, 2.0], [0.0, 1.0], [1.0, 0.0]])
    torch.testing.assert_close(built.item_embeddings(), expected)
    # u1 = [0, 1]: scores 2, 1, 0
    torch.testing.assert_close(built.score_users(torch.tensor([1])), torch.tensor([[2.0, 1, 0]]))


def test_a_rebuilt_model_takes_the_backbone_from_its_checkpoint():
    rebuilt = DeepMusic(CATALOGUE, None, DeepMusicOptions(backbone_dim=2, hidden=2))
    rebuilt.load_state_dict(model().state_dict())
    torch.testing.assert_close(rebuilt.user_embeddings(), TEACHER.users)
    torch.testing.assert_close(rebuilt.teacher_items, TEACHER.items)


def test_a_backbone_of_another_width_is_a_clear_error():
    wide = Teacher(torch.zeros(2, 3), torch.zeros(3, 3))
    with pytest.raises(
        ColdbrewError, match=r"users are \(2, 3\); expected \(2, 2\) \(option backbone_dim=2\)"
    ):
        DeepMusic(CATALOGUE, wide, DeepMusicOptions(backbone_dim=2))


def test_a_new_item_is_scored_from_its_content_as_a_cold_item():
    # raw [3, 0] normalised to [1, 0], through the identity MLP: [1, 0], cold i2's vector
    new = model().encode_items(features=torch.tensor([[3.0, 0.0]]))
    torch.testing.assert_close(new, torch.tensor([[1.0, 0.0]]))
