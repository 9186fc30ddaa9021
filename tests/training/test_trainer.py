"""The training loop end to end on synthetic data: learning, resume, non-finite loss,
accumulation, early stopping, checkpoints."""

from __future__ import annotations

import json

import pytest
import torch

from coldbrew import load_dataset
from coldbrew.config import make_config
from coldbrew.models.base import Batch
from coldbrew.system.runtime import Runtime
from coldbrew.training.run import build_trainer, train
from coldbrew.training.run_evaluation import evaluate_run
from coldbrew.training.trainer import NonFiniteLoss
from resume_support import killed_and_resumed

FAST = {
    "data": "synthetic:small",
    "batch_size": 512,
    "num_neg": 16,
    "lr": 0.01,
    "quiet": True,
    "epochs": 4,
}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset("synthetic:small", seed=3)


def test_training_beats_random_on_cold_items(dataset, tmp_path):
    results = train(make_config(FAST), tmp_path / "run", dataset=dataset)
    cold = results["metrics"]["report"]["cold"]["recall@20"]  # items no choice read
    num_cold = len(dataset.cold_items)
    # a random ranking of the cold items finds about 20 / num_cold of each user's positives
    assert cold > 2 * 20 / num_cold
    assert results["epochs_run"] == 4 and 1 <= results["best_epoch"] <= 4
    assert set(results["metrics"]) == {"val", "report", "test"}
    assert results["selection"]["report_share"] == 0.5
    assert results["headline"] == {
        "key": "report/cold/recall@20",
        "value": cold,
        "chosen_on_same_items": False,
    }
    assert set(results["metrics"]["test"]) == {"all", "warm", "cold"}
    for key in ("train_seconds", "eval_seconds", "samples_per_second"):
        assert results["timing"][key] > 0
    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk["metrics"]["val"]["cold"]["ndcg@20"] == pytest.approx(
        results["metrics"]["val"]["cold"]["ndcg@20"]
    )


def test_resume_after_a_kill_gives_the_same_final_metrics(dataset, tmp_path, one_thread):
    straight = train(make_config(FAST), tmp_path / "straight", dataset=dataset)
    resumed = killed_and_resumed(FAST, tmp_path / "killed", dataset, after_epoch=2)
    assert resumed["epochs_run"] == 4
    assert resumed["metrics"] == straight["metrics"]
    for mine, theirs in zip(resumed["history"], straight["history"], strict=True):
        assert mine["losses"] == theirs["losses"] and mine["val"] == theirs["val"]


def test_non_finite_loss_stops_with_epoch_and_step_and_keeps_results(
    dataset, tmp_path, monkeypatch
):
    from coldbrew.models.clcrec.model import CLCRec

    original = CLCRec.forward
    calls = {"n": 0}
    steps_per_epoch = -(-dataset.num_train // FAST["batch_size"])

    def poisoned(self, batch):
        output = original(self, batch)
        calls["n"] += 1
        if calls["n"] == steps_per_epoch + 2:  # epoch 2, step 2
            output.total = output.total * float("nan")
        return output

    monkeypatch.setattr(CLCRec, "forward", poisoned)
    with pytest.raises(NonFiniteLoss, match=r"epoch 2, step 2;"):
        train(make_config(FAST), tmp_path / "run", dataset=dataset)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["stopped"] == "non_finite"
    assert results["best_epoch"] == 1 and "val" in results["metrics"]
    assert (tmp_path / "run" / "best.pt").exists()
    assert "epoch 2, step 2" in (tmp_path / "run" / "train.log").read_text()


def test_early_stopping_uses_patience_and_says_so(dataset, tmp_path):
    config = make_config({**FAST, "epochs": 50, "patience": 2, "lr": 1e-7})
    results = train(config, tmp_path / "run", dataset=dataset)
    assert results["stopped"] == "early_stop"
    assert results["epochs_run"] == results["best_epoch"] + 2
    assert (
        "early stop: cold/recall@20 did not improve for 2"
        in (tmp_path / "run" / "train.log").read_text()
    )


def _fixed_batch(trainer, rows: int) -> tuple[Batch, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    index = torch.randint(trainer.task.num_samples(), (rows,), generator=generator)
    torch.manual_seed(0)
    return trainer.task.make_batch(index), index


def test_accumulated_micro_batches_give_the_one_batch_update(dataset, one_thread):
    # num_sample=0: CLCRec's step draws nothing random, so both runs see the same loss terms
    settings = {**FAST, "num_sample": 0.0, "batch_size": 64}
    one = build_trainer(make_config({**settings, "batch_size": 256}), dataset)
    four = build_trainer(make_config({**settings, "grad_accum": 4}), dataset)
    four.model.load_state_dict(one.model.state_dict())
    batch, index = _fixed_batch(one, 256)
    replay = {"batches": iter(batch_part for batch_part in _split(batch, 64))}
    four.task.make_batch = lambda part: next(replay["batches"])  # the same samples and negatives
    one.task.make_batch = lambda part: batch
    # plain SGD: the update is lr x gradient (Adam's first step is lr x sign(gradient), which
    # float rounding flips where a gradient is ~0)
    for trainer in (one, four):
        trainer.optimizer = torch.optim.SGD(trainer.model.parameters(), lr=1.0)
    loss_one, _ = one.train_step(index)
    loss_four, _ = four.train_step(index)
    assert four.state.optimizer_steps == one.state.optimizer_steps == 1
    torch.testing.assert_close(loss_four, loss_one)
    for (name, mine), theirs in zip(
        four.model.named_parameters(), one.model.parameters(), strict=True
    ):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-7, msg=name)


def _split(batch: Batch, size: int):
    return [
        Batch(u, i) for u, i in zip(batch.users.split(size), batch.items.split(size), strict=True)
    ]


def test_an_epoch_counts_optimizer_steps_of_the_effective_batch(dataset):
    trainer = build_trainer(make_config({**FAST, "batch_size": 100, "grad_accum": 3}), dataset)
    trainer.train_epoch()
    assert trainer.steps_per_epoch == -(-dataset.num_train // 300)
    assert trainer.state.optimizer_steps == trainer.steps_per_epoch


def test_checkpoint_round_trip_scores_identically(dataset, tmp_path):
    train(make_config({**FAST, "epochs": 1}), tmp_path / "run", dataset=dataset)
    payload = torch.load(tmp_path / "run" / "best.pt", weights_only=True)
    assert {"model", "optimizer", "rng", "state", "config", "scaler"} <= set(payload)
    trained = build_trainer(make_config({**FAST, "epochs": 1}), dataset)
    trained.model.load_state_dict(payload["model"])
    users = torch.arange(dataset.num_users)
    fresh = build_trainer(make_config({**FAST, "epochs": 1, "seed": 9}), dataset)
    assert not torch.equal(fresh.model.score_users(users), trained.model.score_users(users))
    fresh.model.load_state_dict(payload["model"])
    torch.testing.assert_close(fresh.model.score_users(users), trained.model.score_users(users))


def test_grad_scaler_state_is_checkpointed_and_restored(dataset, tmp_path):
    config = make_config({**FAST, "epochs": 1})
    trainer = build_trainer(config, dataset, run_dir=tmp_path)
    trainer.runtime = Runtime(
        torch.device("cpu"), None, torch.amp.GradScaler("cpu", init_scale=64.0)
    )
    trainer.train_step(torch.arange(256))
    trainer.runtime.scaler.update(new_scale=12.0)
    trainer.save("last.pt")
    again = build_trainer(config, dataset)
    again.runtime = Runtime(torch.device("cpu"), None, torch.amp.GradScaler("cpu", init_scale=64.0))
    again.resume(tmp_path / "last.pt")
    assert again.runtime.scaler.get_scale() == 12.0


def test_final_results_reuse_the_best_epochs_validation(tmp_path, monkeypatch):
    from coldbrew.tasks.recommendation import RecommendationTask

    evaluated = []
    real = RecommendationTask.evaluate_splits

    def counting(self, model, splits, progress=False):
        evaluated.extend(splits)
        return real(self, model, splits, progress=progress)

    monkeypatch.setattr(RecommendationTask, "evaluate_splits", counting)
    config = make_config({"data": "synthetic:small", "epochs": 2, "quiet": True, "num_neg": 8})
    results = train(config, tmp_path / "run")
    # one validation (the select half) per epoch, then report and test once, in one pass
    assert evaluated == ["val", "val", "report", "test"]
    best = results["history"][results["best_epoch"] - 1]
    assert best["epoch"] == results["best_epoch"]
    assert results["metrics"]["val"] == best["val"]
    # and the reused numbers are what a fresh pass over the best checkpoint gives
    assert evaluate_run(tmp_path / "run", splits=("val",))["metrics"]["val"] == best["val"]


def test_training_leaves_process_settings_alone(dataset, monkeypatch):
    import os

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    before = (torch.are_deterministic_algorithms_enabled(), torch.backends.cuda.matmul.allow_tf32)
    trainer = build_trainer(make_config({**FAST, "deterministic": True}), dataset)
    trainer.train_step(torch.arange(64))
    after = (torch.are_deterministic_algorithms_enabled(), torch.backends.cuda.matmul.allow_tf32)
    assert after == before and "HF_HUB_OFFLINE" not in os.environ
