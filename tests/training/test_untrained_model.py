"""A registered model with nothing to train (``ModelSpec(trains=False)``, content KNN) goes
through the same run as any other: no optimizer, one evaluation as its only epoch, best.pt and
results.json with val and test from that model (epoch 1); and the hooks of the one way in see it."""

from __future__ import annotations

import pytest
import torch

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.models.base import Recommender
from coldbrew.models.clcrec.config import CLCRecConfig
from coldbrew.registry import MODELS, ModelSpec
from coldbrew.training.hooks import RunHook
from coldbrew.training.run import train


class ContentDot(Recommender):
    """Users are the mean content of their training items; items are their content."""

    def __init__(self, dataset):
        super().__init__()
        content = torch.cat([f.float() for f in dataset.features.values()], dim=1)
        train = torch.from_numpy(dataset.train.toarray()).float()
        users = train @ content / train.sum(1, keepdim=True).clamp_min(1)
        self.register_buffer("users", users)
        self.register_buffer("items", content)

    def user_embeddings(self) -> torch.Tensor:
        return self.users

    def item_embeddings(self) -> torch.Tensor:
        return self.items


def build(dataset, config):
    return ContentDot(dataset)


class Recorder(RunHook):
    def __init__(self):
        self.epochs, self.finished, self.closed = [], None, False

    def epoch_end(self, state) -> None:
        self.epochs.append(state.epoch)

    def finish(self, results, run_dir) -> None:
        results["recorded"] = True
        self.finished = run_dir

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def content_dot(monkeypatch):
    spec = ModelSpec(
        "dot", CLCRecConfig, f"{__name__}:build", "recommendation", "test", trains=False
    )
    monkeypatch.setitem(MODELS, "dot", spec)


def test_a_model_with_nothing_to_train_is_evaluated_once(content_dot, tmp_path):
    dataset = load_dataset("synthetic:small", seed=1)
    config = make_config({"model": "dot", "data": "synthetic:small", "quiet": True, "epochs": 5})
    recorder = Recorder()
    results = train(config, tmp_path / "run", dataset=dataset, hooks=[recorder])
    assert results["epochs_run"] == 1 and results["best_epoch"] == 1
    assert results["history"][0]["losses"] == {}
    expected = ContentDot(dataset)
    from coldbrew.data.splits.selection import carve_report
    from coldbrew.evaluation.model import evaluate_model

    carved = carve_report(dataset, 0.5, 0)  # the run's data: val cut into select and report
    splits = ("val", "report", "test")
    direct = evaluate_model(expected.eval(), carved, splits, ks=[10, 20, 50])
    for split in splits:
        for group, metrics in direct[split].items():
            assert results["metrics"][split][group] == pytest.approx(metrics), (split, group)
    assert (tmp_path / "run" / "best.pt").exists()
    assert recorder.epochs == [1] and recorder.closed and results["recorded"]
    assert recorder.finished == tmp_path / "run"


def test_hooks_close_when_the_run_is_refused(content_dot, tmp_path):
    recorder = Recorder()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "stray").write_text("x")
    config = make_config({"model": "dot", "data": "synthetic:small", "quiet": True})
    with pytest.raises(Exception, match="not empty|exists"):
        train(config, tmp_path / "run", hooks=[recorder])
    assert recorder.closed and recorder.finished is None


def test_a_model_with_nothing_to_train_has_no_step_to_run(content_dot):
    from coldbrew.errors import ColdbrewError
    from coldbrew.training.build import build_trainer

    config = make_config({"model": "dot", "data": "synthetic:small", "quiet": True})
    trainer = build_trainer(config, load_dataset("synthetic:small", seed=1))
    with pytest.raises(ColdbrewError, match="dot has nothing to train"):
        trainer.train_step(torch.arange(8))


@pytest.mark.parametrize("command", [["profile"], ["tune", "--budget", "5"]])
def test_profile_and_tune_refuse_a_model_with_nothing_to_train(capsys, tmp_path, command):
    from coldbrew.cli import main

    argv = ["--data", "synthetic:small", "--model", "popularity"]
    out = ["--out", str(tmp_path / "tuned.yaml")] if command[0] == "tune" else []
    assert main([*command, *argv, *out]) == 2
    assert "popularity has nothing to train" in capsys.readouterr().err
