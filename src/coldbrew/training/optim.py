"""Optimizer and learning-rate schedule from one builder.

* Adam (the default, as the original CLCRec) or AdamW, fused on the CPU and on CUDA
  (``fused_optimizer``), over parameter groups: a model may name
  its own groups with ``parameter_groups() -> list[ParameterGroup]`` (e.g. a pretrained
  backbone at a tenth of the learning rate); otherwise all trainable parameters form one group.
  With weight decay, 1-d parameters (biases, norm scales) are never decayed.
* Schedule in optimizer steps: linear warm-up over ``warmup_steps``, then constant or cosine
  down to 0 at the last optimizer step of the last epoch. It is a ``LambdaLR`` whose function is
  rebuilt from the configuration, so a resumed run with more epochs gets a schedule of the new
  length (``schedule_note`` says what that does to the learning rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from coldbrew.config import TrainConfig


@dataclass
class ParameterGroup:
    """Parameters sharing a learning-rate scale and a weight-decay rule."""

    name: str
    parameters: list[nn.Parameter] = field(default_factory=list)
    lr_scale: float = 1.0
    weight_decay: bool = True  # False: never decayed, whatever the configuration says


def parameter_groups(model: nn.Module) -> list[ParameterGroup]:
    own = getattr(model, "parameter_groups", None)
    if callable(own):
        return own()
    return [ParameterGroup("model", [p for p in model.parameters() if p.requires_grad])]


def build_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    groups = []
    for group in parameter_groups(model):
        trainable = [p for p in group.parameters if p.requires_grad]
        decayed = [p for p in trainable if p.ndim >= 2] if group.weight_decay else []
        plain = [p for p in trainable if not any(p is q for q in decayed)]
        lr = config.lr * group.lr_scale
        for params, decay in ((decayed, config.weight_decay), (plain, 0.0)):
            if params:
                groups.append({"params": params, "lr": lr, "weight_decay": decay})
    if not groups:
        raise ValueError("the model has no trainable parameters")
    kind = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    return kind(groups, lr=config.lr, fused=fused_choice(groups, config.fused_optimizer))


FUSED_DEVICES = ("cpu", "cuda")  # where torch has a fused Adam for every floating dtype


def fused_choice(groups: list[dict], wanted: bool = True) -> bool | None:
    """True when ``wanted`` and every parameter is a floating tensor on one device type that
    has torch's fused Adam. On the CPU it is one pass per tensor, ≈ 10× faster than the default
    loop (BENCHMARKS.md, "Time to a model"); on CUDA a few kernels per step in place of the
    multi-tensor path's many, which counts at small batches where launches dominate; equal to
    the plain loop within float rounding (tested). Otherwise None: torch's own choice."""
    params = [p for group in groups for p in group["params"]]
    kinds = {p.device.type for p in params}
    usable = len(kinds) == 1 and kinds <= set(FUSED_DEVICES)
    return True if wanted and usable and all(p.is_floating_point() for p in params) else None


def lr_factor(step: int, total_steps: int, warmup_steps: int, schedule: str) -> float:
    """The learning-rate multiplier before optimizer step ``step`` (0-based)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    decay_steps = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / decay_steps)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(
    optimizer: torch.optim.Optimizer, config: TrainConfig, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR | None:
    """None for a constant rate without warm-up (nothing to schedule)."""
    if config.lr_schedule == "constant" and config.warmup_steps == 0:
        return None
    total = steps_per_epoch * config.epochs

    def factor(step: int) -> float:
        return lr_factor(step, total, config.warmup_steps, config.lr_schedule)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def schedule_note(scheduler, config: TrainConfig, steps_per_epoch: int, saved_epochs: int) -> str:
    """What resuming with another number of epochs does to a cosine schedule ('' if nothing)."""
    if scheduler is None or config.lr_schedule != "cosine" or saved_epochs == config.epochs:
        return ""
    step = scheduler.last_epoch
    before = lr_factor(step, steps_per_epoch * saved_epochs, config.warmup_steps, "cosine")
    after = lr_factor(step, steps_per_epoch * config.epochs, config.warmup_steps, "cosine")
    return (
        f"cosine schedule rebuilt for {config.epochs} epochs (was {saved_epochs}): at optimizer "
        f"step {step} the learning rate goes from {before:.3g} to {after:.3g} x lr"
    )
