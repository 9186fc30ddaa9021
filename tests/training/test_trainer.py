"""The training loop end to end on synthetic data: learning, resume, non-finite loss, CLI."""

from __future__ import annotations

import json

import pytest
import torch

from coldbrew import load_dataset
from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.run import evaluate_run, train
from coldbrew.training.trainer import NonFiniteLoss

FAST = {
    "data": "synthetic",
    "batch_size": 512,
    "num_neg": 16,
    "lr": 0.01,
    "quiet": True,
    "epochs": 4,
}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset("synthetic", seed=3)


def test_training_beats_random_on_cold_items(dataset, tmp_path):
    results = train(make_config(FAST), tmp_path / "run", dataset=dataset)
    cold = results["metrics"]["val"]["cold"]["recall@20"]
    num_cold = len(dataset.cold_items)
    # a random ranking of the cold items finds about 20 / num_cold of each user's positives
    assert cold > 2 * 20 / num_cold
    assert results["epochs_run"] == 4 and 1 <= results["best_epoch"] <= 4
    assert set(results["metrics"]) == {"val", "test"}
    assert set(results["metrics"]["test"]) == {"all", "warm", "cold"}
    for key in ("train_seconds", "eval_seconds", "samples_per_second"):
        assert results["timing"][key] > 0
    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk["metrics"]["val"]["cold"]["ndcg@20"] == pytest.approx(
        results["metrics"]["val"]["cold"]["ndcg@20"]
    )


@pytest.fixture
def one_thread():
    """Multi-threaded CPU scatter-adds may sum in any order; one thread makes runs bit-identical."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_resume_after_a_kill_gives_the_same_final_metrics(dataset, tmp_path, one_thread):
    straight = train(make_config(FAST), tmp_path / "straight", dataset=dataset)

    def kill_after_second_epoch(state):
        if state.epoch == 2:
            raise KeyboardInterrupt  # the process dies right after epoch 2's checkpoint

    with pytest.raises(KeyboardInterrupt):
        train(
            make_config(FAST),
            tmp_path / "killed",
            dataset=dataset,
            on_epoch_end=kill_after_second_epoch,
        )
    assert not (tmp_path / "killed" / "results.json").exists()
    resumed = train(make_config(FAST), tmp_path / "killed", dataset=dataset, resume=True)
    assert resumed["epochs_run"] == 4
    assert resumed["metrics"] == straight["metrics"]
    for mine, theirs in zip(resumed["history"], straight["history"], strict=True):
        assert mine["losses"] == theirs["losses"] and mine["val"] == theirs["val"]


def test_non_finite_loss_stops_with_epoch_and_step_and_keeps_results(
    dataset, tmp_path, monkeypatch
):
    from coldbrew.models.clcrec import CLCRec

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


def test_early_stopping_uses_patience(dataset, tmp_path):
    config = make_config({**FAST, "epochs": 50, "patience": 2, "lr": 1e-7})
    results = train(config, tmp_path / "run", dataset=dataset)
    assert results["stopped"] == "early_stop"
    assert results["epochs_run"] == results["best_epoch"] + 2


def test_cli_train_then_evaluate_end_to_end(tmp_path, capsys):
    run = tmp_path / "cli"
    code = main(
        [
            "train",
            "--data",
            "synthetic",
            "--out",
            str(run),
            "--num_epoch=2",
            "--batch_size=512",
            "--num_neg=16",
            "--l_r=0.01",
            "--quiet",
        ]
    )
    assert code == 0
    capsys.readouterr()
    assert main(["evaluate", "--run", str(run), "--split", "test", "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    saved = json.loads((run / "results.json").read_text())
    assert output["metrics"]["test"] == saved["metrics"]["test"]
    assert set(output["metrics"]) == {"test"}


def test_cli_errors_are_one_line_and_leave_nothing(tmp_path, capsys):
    assert main(["train", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("coldbrew: error: ") and error.count("\n") == 1
    assert not (tmp_path / "run").exists()
    assert (
        main(["train", "--data", "synthetic", "--out", str(tmp_path / "run"), "--num_sample=2"])
        == 2
    )
    assert "num_sample" in capsys.readouterr().err
    with pytest.raises(ColdbrewError, match="no checkpoint|not a coldbrew run"):
        evaluate_run(tmp_path)


def test_yaml_preset_with_flag_override(tmp_path):
    preset = tmp_path / "preset.yaml"
    preset.write_text("num_neg: 8\nl_r: 0.02\nbatch_size: 256\nepochs: 1\nquiet: true\n")
    run = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--config",
                str(preset),
                "--data",
                "synthetic",
                "--out",
                str(run),
                "--num-neg",
                "4",
            ]
        )
        == 0
    )
    saved = json.loads((run / "results.json").read_text())["config"]
    assert (saved["num_neg"], saved["lr"], saved["batch_size"]) == (4, 0.02, 256)


def test_state_dict_round_trip_scores_identically(dataset, tmp_path):
    train(make_config({**FAST, "epochs": 1}), tmp_path / "run", dataset=dataset)
    payload = torch.load(tmp_path / "run" / "best.pt", weights_only=True)
    assert {"model", "optimizer", "rng", "state", "config"} <= set(payload)


def test_cli_resume_keeps_the_runs_own_settings(tmp_path):
    run = tmp_path / "run"
    argv = [
        "train",
        "--data",
        "synthetic",
        "--out",
        str(run),
        "--epochs",
        "1",
        "--num-neg",
        "8",
        "--quiet",
    ]
    assert main(argv) == 0
    assert main(["train", "--resume", str(run), "--epochs", "2", "--quiet"]) == 0
    saved = json.loads((run / "results.json").read_text())
    assert saved["epochs_run"] == 2 and saved["config"]["num_neg"] == 8


def test_unknown_early_stop_group_is_refused(dataset, tmp_path):
    config = make_config({**FAST, "early_stop_metric": "nope/recall@20"})
    with pytest.raises(ColdbrewError, match="not in validation"):
        train(config, tmp_path / "run", dataset=dataset)
    assert not (tmp_path / "run").exists()


def test_a_model_with_its_own_scoring_is_evaluated_through_it(dataset):
    from coldbrew.models.clcrec import CLCRec
    from coldbrew.training.trainer import evaluate_model

    class Reversed(CLCRec):
        @torch.no_grad()
        def score_users(self, users):
            return -(self.user_embeddings()[users] @ self.item_embeddings().T)

    config = make_config(FAST)
    model = Reversed.from_dataset(dataset)
    plain = CLCRec.from_dataset(dataset)
    plain.load_state_dict(model.state_dict())
    reversed_recall = evaluate_model(model, dataset, "val", config)["all"]["recall@50"]
    plain_recall = evaluate_model(plain, dataset, "val", config)["all"]["recall@50"]
    assert reversed_recall != plain_recall  # the override was used, not the embeddings


def test_final_results_reuse_the_best_epochs_validation(tmp_path, monkeypatch):
    import coldbrew.training.run as run_module

    evaluated = []
    real = run_module.evaluate_model

    def counting(model, data, split, config):
        evaluated.append(split)
        return real(model, data, split, config)

    monkeypatch.setattr(run_module, "evaluate_model", counting)
    config = make_config({"data": "synthetic", "epochs": 2, "quiet": True, "num_neg": 8})
    results = train(config, tmp_path / "run")
    assert evaluated == ["test"]  # per-epoch validation runs inside the trainer, not here
    best = results["history"][results["best_epoch"] - 1]
    assert best["epoch"] == results["best_epoch"]
    assert results["metrics"]["val"] == best["val"]
    # and the reused numbers are what a fresh pass over the best checkpoint gives
    assert evaluate_run(tmp_path / "run", splits=("val",))["metrics"]["val"] == best["val"]
