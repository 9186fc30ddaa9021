"""Messages that used to mislead: each names the cause and the fix."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import build_parser, main
from coldbrew.cli.runs import train_config
from coldbrew.config import config_yaml, make_config


def finished_run(folder, *, epochs: int = 2, stopped: str = "max_epochs", done: int = 2):
    """A run directory as ``train`` leaves it once finished (no checkpoint needed here)."""
    folder.mkdir()
    config = make_config({"data": "synthetic:small", "epochs": epochs})
    (folder / "config.yaml").write_text(config_yaml(config))
    (folder / "results.json").write_text(json.dumps({"epochs_run": done, "stopped": stopped}))
    return folder


def test_resuming_a_finished_run_is_refused_with_the_epochs_to_give(tmp_path, capsys):
    run = finished_run(tmp_path / "run")
    assert main(["train", "--resume", str(run)]) == 2
    out, error = capsys.readouterr()
    assert f"{run} finished its 2 epochs; give --epochs M > 2 to continue it" in error
    assert "resuming" not in out
    args = build_parser().parse_args(["train", "--resume", str(run), "--epochs", "5"])
    assert train_config(args).epochs == 5  # more epochs: it continues


def test_resuming_a_run_its_stopping_rule_ended_names_the_rule(tmp_path, capsys):
    run = finished_run(tmp_path / "run", epochs=30, stopped="early_stop", done=9)
    assert main(["train", "--resume", str(run)]) == 2
    error = capsys.readouterr().err
    assert "stopped after epoch 9 (early stop: 4 evaluations without a gain)" in error
    assert "give a larger --patience" in error
    args = build_parser().parse_args(["train", "--resume", str(run), "--patience", "20"])
    assert train_config(args).patience == 20  # the stopping rule decides with it


def test_an_unfinished_run_resumes(tmp_path):
    run = finished_run(tmp_path / "run")
    (run / "results.json").unlink()
    args = build_parser().parse_args(["train", "--resume", str(run)])
    assert train_config(args).epochs == 2


@pytest.fixture(autouse=True)
def _no_threads_sample(monkeypatch):
    monkeypatch.setenv("COLDBREW_THREADS", "1")


def test_evaluating_on_data_of_another_layout_names_the_block_not_torchs_shapes(tmp_path, capsys):
    run = finished_run(tmp_path / "run")
    (run / "best.pt").write_bytes(b"")  # the layout is refused before the checkpoint is read
    summary = {"name": "synthetic", "features": {"content": [300, 31]}}
    (run / "results.json").write_text(json.dumps({"epochs_run": 2, "dataset": summary}))
    assert main(["evaluate", "--run", str(run)]) == 2
    error = capsys.readouterr().err
    assert "content: 32 columns here against 31 columns in the run" in error
    assert "size mismatch" not in error and "give data with the run's blocks" in error


def test_a_layout_difference_names_the_columns_missing_and_new(tmp_path):
    from coldbrew.training.run_layout import layout_differences

    genres = [f"g{i}" for i in range(18)]
    saved = {"features": {"genre": [9, 19]}, "feature_columns": {"genre": [*genres, "IMAX"]}}
    (tmp_path / "results.json").write_text(json.dumps({"dataset": saved}))

    class Data:
        name = "other"

        def summary(self):
            return {"features": {"genre": [5, 18]}, "feature_columns": {"genre": genres}}

    found = layout_differences(tmp_path, Data())
    assert found == ["genre: 18 columns here against 19 columns in the run; missing here: IMAX"]


def test_a_closed_form_model_says_so_instead_of_zero_samples_per_second(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--model", "ridge", "--data", "synthetic:small", "--out", str(out)]
    assert main([*argv, "--backbone-epochs", "2", "--no-tensorboard"]) == 0
    text = capsys.readouterr().out
    assert "0 samples/s" not in text
    epoch = next(line for line in text.splitlines() if line.startswith("epoch   1"))
    assert "| fitted in closed form (backbone " in epoch and "|  |" not in epoch
    assert "ridge is fitted in closed form (no epochs, no samples/s): fit and evaluation" in text
    assert "+ backbone" in text  # the backbone's fit is counted where the times are shown


def test_the_cold_signal_flag_is_shown_only_when_there_is_none(capsys):
    from coldbrew.cli.runs import print_metrics_table

    metrics = {"val": {"cold": {"recall@20": 0.1, "cold_signal": 1.0}, "all": {"recall@20": 0.2}}}
    print_metrics_table(metrics)
    text = capsys.readouterr().out
    assert "cold_signal" not in text and "recall@20=0.1000" in text
    metrics["val"]["cold"]["cold_signal"] = 0.0
    print_metrics_table(metrics)
    assert "no cold signal (every cold item scored alike" in capsys.readouterr().out


def test_train_without_data_is_refused_not_run_on_generated_data(tmp_path, capsys):
    assert main(["train", "--epochs", "1", "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert "no --data given: name the data to train on, e.g. --data ml-100k" in error
    assert "--data synthetic trains on generated data" in error
    assert not (tmp_path / "run").exists()
    preset = tmp_path / "preset.yaml"
    preset.write_text("data_path: synthetic:small\n")  # a preset may name it (any spelling)
    args = build_parser().parse_args(["train", "--config", str(preset)])
    assert train_config(args).data == "synthetic:small"


def test_a_failed_run_is_not_called_finished(tmp_path):
    run = finished_run(tmp_path / "run", epochs=30, stopped="diverged", done=3)
    args = build_parser().parse_args(["train", "--resume", str(run)])
    assert train_config(args).epochs == 30  # resumed as before: no "finished" refusal


def test_an_unfinished_runs_layout_is_read_from_its_config_comment(tmp_path):
    from coldbrew.training.run_layout import layout_differences

    (tmp_path / "config.yaml").write_text(
        "model: clcrec\n# a new item's vector (recommend --item-vector): genre: 3 columns "
        "(Action, Children's, Sci-Fi), then text: 384 columns\n"
    )

    class Data:
        name = "other"

        def summary(self):
            features = {"genre": [5, 2], "text": [5, 384]}
            return {"features": features, "feature_columns": {"genre": ["Action", "Sci-Fi"]}}

    found = layout_differences(tmp_path, Data())
    assert found == ["genre: 2 columns here against 3 columns in the run; missing here: Children's"]


def test_evaluating_on_other_users_and_items_says_so_first(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["train", "--model", "ridge", "--data", "synthetic:small", "--out", str(run)]
    assert main([*argv, "--backbone-epochs", "2", "--no-tensorboard", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--run", str(run), "--data", "synthetic:small,users=400"]) == 2
    error = capsys.readouterr().err
    assert (
        f"{run} was trained on 500 users and 300 items, synthetic:small,users=400 has 400 " in error
    )
    assert "so --data must have the same ones" in error


@pytest.mark.parametrize(
    "argv",
    [
        ["leaderboard", "--models", "ridge", "--seeds", "1"],
        ["search", "--space", "space.yaml", "--trials", "1"],
        ["tune"],
    ],
)
def test_commands_that_train_and_score_refuse_no_data_as_train_does(tmp_path, capsys, argv):
    """A board, a study or a tuned preset of generated data would look like the user's own."""
    (tmp_path / "space.yaml").write_text("lr: {log_uniform: [0.001, 0.1]}\n")
    argv = [part.replace("space.yaml", str(tmp_path / "space.yaml")) for part in argv]
    out = tmp_path / ("x.yaml" if argv[0] == "tune" else "x")
    assert main([*argv, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "no --data given: name the data to train on" in error and error.count("\n") == 1
    assert not out.exists()


def test_a_measuring_command_on_generated_data_says_so(capsys):
    assert main(["memory", "--device-memory", "1GB", "--json"]) == 0
    assert "no --data given: measuring on generated data (synthetic)" in capsys.readouterr().err
    argv = ["memory", "--device-memory", "1GB", "--json", "--data", "synthetic:small"]
    assert main(argv) == 0
    assert "no --data given" not in capsys.readouterr().err  # named: nothing to warn of


def test_evaluate_on_data_with_no_cold_split_refuses_and_writes_nothing(tmp_path, capsys):
    from shop_support import shop_run

    run = shop_run(tmp_path)
    assert main(["evaluate", "--run", str(run)]) == 2
    error = capsys.readouterr().err
    assert f"shop has no cold split to score (no val/test files, and {run} trained" in error
    assert "(--data OTHER)" in error and "--cold-split time:0.2" in error
    assert not (run / "evaluation.json").exists()
