"""The teacher models' shared base (``coldbrew.models.zoo.teacher``): what no single model's test
covers."""

from __future__ import annotations

import torch

from coldbrew.models.zoo.dropoutnet import DropoutNet
from coldbrew.models.zoo.dropoutnet_config import DropoutNetOptions
from coldbrew.models.zoo.heater import Heater
from coldbrew.models.zoo.heater_config import HeaterOptions
from zoo_support import CATALOGUE, TEACHER


def test_a_tower_saved_as_the_old_sequential_loads_into_the_shared_tower():
    # DropoutNet and Heater saved their towers as nn.Sequential(Linear, Tanh, Linear): keys
    # "user_tower.0.weight", "user_tower.2.bias" ...; such a checkpoint still loads
    for model, options in ((DropoutNet, DropoutNetOptions), (Heater, HeaterOptions)):
        torch.manual_seed(0)
        trained = model(CATALOGUE, TEACHER, options(backbone_dim=2, dim=2, hidden=2))
        old_keys = {
            key.replace("tower.layer1.", "tower.0.").replace("tower.layer2.", "tower.2."): value
            for key, value in trained.state_dict().items()
        }
        assert "user_tower.0.weight" in old_keys and "item_tower.2.bias" in old_keys
        torch.manual_seed(1)
        rebuilt = model(CATALOGUE, None, options(backbone_dim=2, dim=2, hidden=2))
        rebuilt.load_state_dict(old_keys)
        users = torch.tensor([0, 1])
        torch.testing.assert_close(rebuilt.score_users(users), trained.score_users(users))


def test_the_occurrence_weighted_distance_equals_the_mean_over_gathered_rows():
    from coldbrew.models.zoo.teacher import occurrence_mean

    torch.manual_seed(0)
    predicted = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    target = torch.randn(6, 4, dtype=torch.float64)
    inverse = torch.tensor([[0, 2, 2, 4], [4, 4, 1, 0], [2, 0, 0, 0]])  # rows 3 and 5: padding
    fast = occurrence_mean((predicted - target).square().sum(-1), inverse)
    (fast_grad,) = torch.autograd.grad(fast, predicted)
    plain = (predicted[inverse] - target[inverse]).square().sum(-1).mean()  # (3, 4, 4) gathered
    (plain_grad,) = torch.autograd.grad(plain, predicted)
    torch.testing.assert_close(fast, plain)
    torch.testing.assert_close(fast_grad, plain_grad)
    assert fast_grad[3].abs().sum() == 0 and fast_grad[5].abs().sum() == 0
    by_hand = sum(
        float(((predicted[row] - target[row]) ** 2).sum()) for row in inverse.flatten().tolist()
    )
    assert abs(float(fast) - by_hand / 12) < 1e-12
