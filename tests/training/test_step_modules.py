"""A training step reads through few modules: the structure target of the "one way in" issue
(at most 12 coldbrew modules for one CLCRec step; 10 when this test was written)."""

from __future__ import annotations

import sys

import torch

from coldbrew.config import make_config
from coldbrew.data import load_dataset
from coldbrew.training.run import build_trainer


def modules_of_one_step(trainer, index: torch.Tensor) -> set[str]:
    seen: set[str] = set()

    def record(frame, event, _arg) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("coldbrew"):
                seen.add(name)

    sys.setprofile(record)
    try:
        trainer.train_step(index)
    finally:
        sys.setprofile(None)
    return seen


def test_one_clcrec_step_reads_through_at_most_twelve_modules():
    dataset = load_dataset("synthetic:small", seed=1)
    settings = {"data": "synthetic:small", "quiet": True, "batch_size": 256, "num_neg": 8}
    trainer = build_trainer(make_config(settings), dataset)
    index = torch.arange(256)
    trainer.train_step(index)  # the first step builds the sampler and the optimizer state
    modules = modules_of_one_step(trainer, index)
    assert {"coldbrew.training.trainer", "coldbrew.models.clcrec.model"} <= modules
    assert len(modules) <= 12, sorted(modules)
