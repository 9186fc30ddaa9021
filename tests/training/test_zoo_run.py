"""The cold-start zoo end to end: ``train`` builds the teacher, trains, evaluates; a saved run,
rebuilt without its teacher, scores as it did (the checkpoint holds the backbone)."""

from __future__ import annotations

import math

import pytest

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.training.checkpoint import load_checkpoint
from coldbrew.training.run import train
from coldbrew.training.run_evaluation import evaluate_run
from teacher_support import with_svd_teacher  # noqa: F401  (the fixture used below)

FAST = {"data": "synthetic:small", "batch_size": 512, "lr": 0.01, "quiet": True, "epochs": 1}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset("synthetic:small", seed=1)


@pytest.mark.usefixtures("with_svd_teacher")
@pytest.mark.parametrize("name", ["deepmusic", "dropoutnet", "heater"])
def test_a_zoo_run_trains_and_its_checkpoint_scores_as_it_did(name, dataset, tmp_path):
    config = make_config({**FAST, "model": name, "backbone_dim": 8})
    results = train(config, tmp_path / "run", dataset=dataset)
    cold = results["metrics"]["val"]["cold"]["recall@20"]
    assert math.isfinite(cold) and cold > 0
    state = load_checkpoint(tmp_path / "run" / "best.pt")["model"]
    assert state["teacher_users"].shape == (dataset.num_users, 8)
    again = evaluate_run(tmp_path / "run", splits=["val"])["metrics"]["val"]
    assert again == results["metrics"]["val"]
