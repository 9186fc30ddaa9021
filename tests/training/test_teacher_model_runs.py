"""GAR, ALDI and content KNN through the one way in (``coldbrew.training.run.train``) on tiny
synthetic data: the collaborative backbone is trained first, the run records val cold metrics,
and the saved run, rebuilt without a backbone (its checkpoint holds the backbone's vectors),
scores exactly as the run did."""

from __future__ import annotations

import pytest

from coldbrew.config import make_config
from coldbrew.training.run import train
from coldbrew.training.run_evaluation import evaluate_run

SETTINGS = {
    "data": "synthetic:small",
    "device": "cpu",
    "quiet": True,
    "seed": 2,
    "batch_size": 256,
    "backbone_dim": 8,
    "backbone_epochs": 2,
}
MODEL = {
    "gar": {"epochs": 2, "hidden": 16, "tower_dim": 8},
    "aldi": {"epochs": 2, "hidden": 16},
    "knn": {"neighbors": 5},
}


@pytest.mark.parametrize("name", sorted(MODEL))
def test_a_run_trains_evaluates_and_rebuilds_from_its_checkpoint(name, tmp_path, monkeypatch):
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    config = make_config({**SETTINGS, "model": name, **MODEL[name]})
    results = train(config, tmp_path / "run")
    recall = results["metrics"]["val"]["cold"]["recall@20"]
    assert 0 <= recall <= 1
    assert results["epochs_run"] == (1 if name == "knn" else 2)
    rebuilt = evaluate_run(tmp_path / "run", splits=["val"], device="cpu")
    assert rebuilt["metrics"]["val"]["cold"] == pytest.approx(results["metrics"]["val"]["cold"])
