"""The optimizer and schedule builder: Adam/AdamW, groups, decay rules, warm-up and cosine."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from coldbrew.config import make_config
from coldbrew.training.optim import (
    ParameterGroup,
    build_optimizer,
    build_scheduler,
    lr_factor,
    schedule_note,
)


class TwoPart(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def parameter_groups(self):
        return [
            ParameterGroup("backbone", list(self.backbone.parameters()), lr_scale=0.1),
            ParameterGroup("head", list(self.head.parameters())),
        ]


def test_adam_by_default_adamw_on_request():
    model = nn.Linear(3, 2)
    assert type(build_optimizer(model, make_config())) is torch.optim.Adam
    assert type(build_optimizer(model, make_config({"optimizer": "adamw"}))) is torch.optim.AdamW


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_cpu_optimizer_is_fused_and_steps_as_the_plain_loop(optimizer):
    config = make_config({"optimizer": optimizer, "lr": 0.01, "weight_decay": 0.05})
    models = [TwoPart(), TwoPart()]
    models[1].load_state_dict(models[0].state_dict())
    fused = build_optimizer(models[0], config)
    assert all(group["fused"] for group in fused.param_groups)
    assert all(len(group["params"]) == 1 for group in fused.param_groups)
    plain = type(fused)(  # the same groups, torch's default (unfused) implementation
        [
            {"params": [parameter], "lr": group["lr"], "weight_decay": group["weight_decay"]}
            for group, parameter in zip(fused.param_groups, models[1].parameters(), strict=True)
        ]
    )
    assert not any(group["fused"] for group in plain.param_groups)
    assert_same_steps(models, (fused, plain))


def assert_same_steps(models, optimizers) -> None:
    """Five steps of the same random gradients leave both models' parameters equal."""
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        grads = [torch.randn(p.shape, generator=generator) for p in models[0].parameters()]
        for model, optim in zip(models, optimizers, strict=True):
            for parameter, grad in zip(model.parameters(), grads, strict=True):
                parameter.grad = grad.clone()
            optim.step()
    for mine, theirs in zip(models[0].parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_the_fused_optimizer_gives_the_plain_ones_parameters(optimizer):
    settings = {"optimizer": optimizer, "lr": 0.01, "weight_decay": 0.05}
    models = [torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Linear(5, 2)) for _ in "ab"]
    models[1].load_state_dict(models[0].state_dict())
    before = models[0][0].weight.detach().clone()
    fused = build_optimizer(models[0], make_config(settings))
    plain = build_optimizer(models[1], make_config({**settings, "fused_optimizer": False}))
    assert all(group["fused"] for group in fused.param_groups)
    assert not any(group["fused"] for group in plain.param_groups)
    assert_same_steps(models, (fused, plain))
    assert not torch.equal(models[0][0].weight, before)  # it moved


def test_weight_decay_skips_biases_and_groups_scale_the_lr():
    optimizer = build_optimizer(TwoPart(), make_config({"lr": 0.01, "weight_decay": 0.05}))
    summary = [
        (tuple(p.shape for p in group["params"]), group["lr"], group["weight_decay"])
        for group in optimizer.param_groups
    ]
    assert summary == [
        (((4, 4),), pytest.approx(0.001), 0.05),  # backbone weight: a tenth of the lr, decayed
        (((4,),), pytest.approx(0.001), 0.0),  # backbone bias: never decayed
        (((2, 4),), 0.01, 0.05),
        (((2,),), 0.01, 0.0),
    ]


def test_frozen_parameters_are_left_out():
    model = nn.Linear(3, 2)
    model.bias.requires_grad_(False)
    (group,) = build_optimizer(model, make_config()).param_groups
    assert [p.shape for p in group["params"]] == [(2, 3)]


def test_warmup_then_cosine_by_hand():
    # 10 optimizer steps, 2 of warm-up: factors 1/2, 2/2, then cos over the remaining 8 steps
    factors = [lr_factor(step, 10, 2, "cosine") for step in range(10)]
    assert factors[:2] == [0.5, 1.0]
    assert factors[2] == 1.0  # progress 0/8
    assert factors[6] == pytest.approx(0.5)  # progress 4/8: (1 + cos(pi/2)) / 2
    assert factors[9] == pytest.approx(0.5 * (1 + math.cos(math.pi * 7 / 8)))
    assert [lr_factor(step, 10, 3, "constant") for step in range(4)] == [1 / 3, 2 / 3, 1.0, 1.0]


def test_cosine_length_counts_optimizer_steps():
    model = nn.Linear(3, 2)
    config = make_config({"lr": 1.0, "lr_schedule": "cosine", "epochs": 2})
    optimizer = build_optimizer(model, config)
    scheduler = build_scheduler(optimizer, config, steps_per_epoch=5)  # 10 steps in all
    rates = []
    for _ in range(10):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert rates[0] == 1.0 and rates[5] == pytest.approx(0.5)  # halfway after 5 of 10 steps
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0)  # the end of the last epoch


def test_constant_without_warmup_needs_no_scheduler():
    config = make_config()
    assert build_scheduler(build_optimizer(nn.Linear(2, 2), config), config, 10) is None


def test_extending_a_cosine_run_says_what_happens_to_the_lr():
    config = make_config({"lr_schedule": "cosine", "epochs": 4})
    optimizer = build_optimizer(nn.Linear(2, 2), config)
    scheduler = build_scheduler(optimizer, config, steps_per_epoch=10)
    for _ in range(20):
        optimizer.step()
        scheduler.step()
    # saved with 2 epochs (20 steps): at step 20 the factor was cos-end 0; over 40 steps, 0.5
    note = schedule_note(scheduler, config, 10, saved_epochs=2)
    assert note.startswith("cosine schedule rebuilt for 4 epochs (was 2)")
    assert "from 0 to 0.5 x lr" in note
    assert schedule_note(scheduler, config, 10, saved_epochs=4) == ""
