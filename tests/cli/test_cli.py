"""The command line: end to end, the original CLCRec command, one-line errors, fast help."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coldbrew.cli import main
from coldbrew.errors import ColdbrewError
from coldbrew.training.run_evaluation import evaluate_run

TINY = ["--data", "synthetic:small", "--batch-size", "512", "--num-neg", "8", "--quiet"]


def test_cli_train_then_evaluate_end_to_end(tmp_path, capsys):
    run = tmp_path / "cli"
    argv = ["train", "--data", "synthetic:small", "--out", str(run), "--num_epoch=2"]
    assert main([*argv, "--batch_size=512", "--num_neg=16", "--l_r=0.01", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--run", str(run), "--split", "test", "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    saved = json.loads((run / "results.json").read_text())
    assert output["metrics"]["test"] == saved["metrics"]["test"]
    assert set(output["metrics"]) == {"test"}


def write_clcrec_folder(folder):
    """A tiny folder in the original CLCRec layout (pickled dicts and object rows): 4 users,
    items 4..9 of which 8 and 9 are cold, visual, acoustic and word-id text features."""
    import numpy as np
    import torch

    def rows(values):
        array = np.empty(len(values), dtype=object)
        array[:] = [list(v) for v in values]
        return array

    folder.mkdir()
    train = {0: {4, 5}, 1: {5, 6}, 2: {4, 7}, 3: {6}}
    np.save(folder / "user_item_train_dict.npy", train)
    np.save(folder / "user_item_all_dict.npy", train)
    for split in ("val", "test"):
        np.save(folder / f"{split}_full.npy", rows([[0, 8], [1, 7], [2, 6, 9]]))
        np.save(folder / f"{split}_warm.npy", rows([[1, 7], [2, 6]]))
        np.save(folder / f"{split}_cold.npy", rows([[0, 8], [2, 9]]))
    np.save(folder / "warm_set.npy", np.array([4, 5, 6, 7]))
    np.save(folder / "cold_set.npy", np.array([8, 9]))
    np.save(folder / "feat_v.npy", np.random.default_rng(0).random((6, 3)))
    torch.save(torch.rand(6, 2), folder / "feat_a.pt")
    torch.save(torch.tensor([[4, 4, 5, 9], [0, 2, 1, 3]]), folder / "feat_t.pt")
    return folder


def test_the_original_readme_command_runs(tmp_path, capsys):
    # python main.py --model_name='CLCRec' --l_r=0.001 --reg_weight=0.1 --num_workers=4
    #   --num_neg=128 --has_a=True --has_t=True --has_v=True --lr_lambda=0.5 --temp_value=2.0
    #   --num_sample=0.5    (this tiny folder has 4 warm items: --num_neg=2 here), and every
    # other flag of the original main.py
    folder = write_clcrec_folder(tmp_path / "movielens")
    argv = ["train", "--model_name=CLCRec", "--l_r=0.001", "--reg_weight=0.1", "--num_workers=4"]
    argv += ["--num_neg=2", "--has_a=True", "--has_t=True", "--has_v=True", "--lr_lambda=0.5"]
    argv += ["--temp_value=2.0", "--num_sample=0.5", "--num_epoch=1", "--batch_size=256"]
    argv += ["--seed=1", "--no-cuda", "--topK=10", "--step=2000", "--save_file=x", "--prefix=y"]
    argv += ["--dim_E=16", "--PATH_weight_load=w.pt", "--PATH_weight_save=v.pt"]
    argv += [f"--data_path={folder}", "--trust-pickle"]  # coldbrew opens pickles only when told
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "note: --num_workers=4" not in out and "note: --num_workers accepted and ignored" in out
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    config = saved["config"]
    assert config["lr"] == 0.001 and config["device"] == "cpu" and config["clcrec"]["dim"] == 16
    assert sorted(saved["dataset"]["features"]) == ["acoustic", "text", "visual"]


def test_without_out_the_run_gets_a_timestamped_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["train", *TINY, "--epochs", "1"]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("clcrec-") and (run / "results.json").exists()


def test_errors_are_one_line_and_leave_nothing(tmp_path, capsys):
    assert main(["train", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("coldbrew: error: ") and error.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num_sample=2"], "num_sample"),
        (["--ks", "abc"], "option 'ks'"),
        (["--ks", ""], "option 'ks'"),
        (["--seed", "-1"], "option 'seed' must be >= 0"),
        (["--seed", "99999999999"], "option 'seed' must be <= "),
        (["--batch-size", "1000000000000"], "option 'batch_size' must be <= 2147483647"),
        (["--seeds", ""], "--seeds needs at least one seed"),
        (["--log-every", "0"], "option 'log_every' must be >= 1"),
        (["--device", "foo"], "device must be"),
        (["--device", "CPU"], "device must be"),
        (["--device", "mps"], "device must be"),
        (["--hidden", "-1"], "option 'hidden' must be >= 1"),
        (["--hidden", "0"], "option 'hidden' must be >= 1"),
        (["--reg-weight", "-5"], "option 'reg_weight' must be >= 0"),
        (["--temp-value", "inf"], "must be a finite number"),
        (["--top-k", "0"], "option 'top_k' must be >= 1"),
        (["--eval-chunk-elements", "0"], "must be >= 1"),
        (["--early-stop-metric", "cold/recall@15"], "K=15 is not measured"),
        (["--epochs", "two"], "option 'epochs': expected an integer"),
        (["--model", "nope"], "unknown model 'nope'"),
    ],
)
def test_bad_options_are_refused_before_anything_is_loaded(tmp_path, capsys, flags, message):
    assert main(["train", "--data", "synthetic:small", *flags, "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_yaml_preset_with_flag_override(tmp_path):
    preset = tmp_path / "preset.yaml"
    preset.write_text("num_neg: 8\nl_r: 0.02\nbatch_size: 256\nepochs: 1\nquiet: true\n")
    run = tmp_path / "run"
    argv = ["train", "--config", str(preset), "--data", "synthetic:small", "--out", str(run)]
    assert main([*argv, "--num-neg", "4"]) == 0
    saved = json.loads((run / "results.json").read_text())["config"]
    assert (saved["clcrec"]["num_neg"], saved["lr"], saved["batch_size"]) == (4, 0.02, 256)


def test_yaml_values_of_the_wrong_type_are_one_line_errors(tmp_path, capsys):
    preset = tmp_path / "preset.yaml"
    preset.write_text('batch_size: "512"\n')
    assert main(["train", "--config", str(preset), "--out", str(tmp_path / "run")]) == 2
    assert "option 'batch_size': expected an integer, got '512'" in capsys.readouterr().err


def test_resume_keeps_the_runs_own_settings_and_refuses_out(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *TINY, "--out", str(run), "--epochs", "1"]) == 0
    assert main(["train", "--resume", str(run), "--epochs", "2", "--quiet"]) == 0
    saved = json.loads((run / "results.json").read_text())
    assert saved["epochs_run"] == 2 and saved["config"]["clcrec"]["num_neg"] == 8
    assert main(["train", "--resume", str(run), "--out", str(tmp_path / "y")]) == 2
    assert "do not also give --out" in capsys.readouterr().err
    assert main(["train", "--resume", str(run), "--seed", "7"]) == 2
    assert "--resume cannot change seed" in capsys.readouterr().err


def test_resume_on_data_whose_items_changed_is_one_line_and_leaves_the_run_as_it_was(
    tmp_path, capsys
):
    from shop_support import shop_run, write_shop

    run = shop_run(tmp_path)
    before = {name: (run / name).read_bytes() for name in ("config.yaml", "ids.json")}
    write_shop(tmp_path / "shop", items=45)  # five articles more, in the same folder
    assert main(["train", "--resume", str(run), "--epochs", "3"]) == 2
    error = capsys.readouterr().err
    assert "trained on other items than the data now holds (5 new" in error
    assert "train again on this data, or restore the data it had" in error
    assert error.count("\n") == 1 and "size mismatch" not in error
    assert {name: (run / name).read_bytes() for name in before} == before  # nothing rewritten
    (run / "ids.json").unlink()  # a run from before ids.json: its checkpoint's shapes tell
    assert main(["train", "--resume", str(run), "--epochs", "3"]) == 2
    error = capsys.readouterr().err
    assert f"cannot resume {run}: its checkpoint does not fit the data now at" in error
    assert "restore the data it trained on" in error and "Traceback" not in error
    assert not (run / "ids.json").exists()  # not the changed data's ids in the run's name


def test_train_on_data_with_no_cold_split_says_so_and_how_to_get_one(tmp_path, capsys):
    from shop_support import write_shop

    data = write_shop(tmp_path / "shop")
    argv = ["train", "--data", str(data), "--epochs", "1", "--num-neg", "4", "--out"]
    assert main([*argv, str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "no validation: the last epoch is kept, nothing to score" in out
    assert "shop has no cold split (no val/test files), so this run is not scored" in out
    assert "--cold-split time:0.2" in out and "coldbrew leaderboard --folds 5" in out
    assert main([*argv, str(tmp_path / "split"), "--cold-split", "time:0.2"]) == 0
    out = capsys.readouterr().out
    assert "not scored" not in out and "cold" in out  # a cold split: scored as usual
    (data / "events.csv").write_text((data / "events.csv").read_text().replace(",ts", ",t"))
    (data / "coldbrew.yaml").write_text(
        (data / "coldbrew.yaml").read_text().replace("timestamp: ts\n", "")
    )
    assert main([*argv, str(tmp_path / "untimed")]) == 0
    assert "--cold-split random:0.2" in capsys.readouterr().out  # no times: drawn at random


def test_a_non_finite_loss_is_reported_once(tmp_path, capsys):
    # a learning rate this large makes the loss overflow within the first epoch
    argv = ["train", "--data", "synthetic:small", "--lr", "1e30", "--num-neg", "8", "--epochs", "2"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("non-finite loss") == 1


def test_progress_bars_stay_out_of_redirected_output(tmp_path, capsys):
    assert (
        main(["train", "--data", "synthetic:small", "--epochs", "1", "--out", str(tmp_path / "r")])
        == 0
    )
    captured = capsys.readouterr()
    assert "\r" not in captured.err and "\r" not in captured.out
    assert "epoch   1 |" in captured.out


def test_warnings_are_one_line_and_quiet_silences_them(capsys):
    import warnings

    from coldbrew.cli import one_line_warnings

    with one_line_warnings(quiet=False):
        warnings.warn("something odd", UserWarning, stacklevel=1)
    assert capsys.readouterr().err == "coldbrew: warning: something odd\n"
    with one_line_warnings(quiet=True):
        warnings.warn("something odd", UserWarning, stacklevel=1)
    assert capsys.readouterr().err == ""


def test_data_info_uses_the_training_seed_by_default(capsys):
    assert main(["data", "info", "synthetic:small", "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert main(["data", "info", "synthetic:small", "--seed", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == default
    assert main(["data", "info", "synthetic:small", "--seed", "-3"]) == 2
    assert "option 'seed' must be in" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--feature-dims", "abc"], "--feature-dims must be widths"),
        (["--feature-dims", "0"], "--feature-dims must be positive"),
        (["--seconds", "-1"], "--seconds must be positive"),
        (["--num-neg", "0"], "option 'num_neg' must be >= 1"),
        (["--neighbor-negatives", "7"], "--neighbor-negatives applies with --neighbor-loss"),
    ],
)
def test_bench_refuses_bad_options(capsys, flags, message):
    assert main(["bench", "train", "--data", "synthetic:small", *flags]) == 2
    assert message in capsys.readouterr().err


def test_bench_sample_needs_no_features(capsys):
    argv = ["bench", "sample", "--data", "synthetic:users=60,items=40", "--features", ""]
    assert main([*argv, "--num-neg", "4", "--batch-size", "16", "--seconds", "0.1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["samples_per_second"] > 0


def test_bench_on_data_without_any_feature_file(tmp_path, capsys):
    # as the help's example on clcrec-movielens, whose feature files were never published
    folder = write_clcrec_folder(tmp_path / "plain")
    for name in ("feat_v.npy", "feat_a.pt", "feat_t.pt"):
        (folder / name).unlink()
    argv = ["bench", "sample", "--data", str(folder), "--trust-pickle", "--num-neg", "2"]
    assert main([*argv, "--batch-size", "4", "--seconds", "0.1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["samples_per_second"] > 0
    argv[1] = "train"
    assert main([*argv, "--batch-size", "4", "--seconds", "0.1"]) == 2
    assert "has no item features to train a model on: give --feature-dims" in (
        capsys.readouterr().err
    )
    assert main([*argv, "--batch-size", "4", "--seconds", "0.1", "--feature-dims", "3,2"]) == 0


def test_profile_trace_and_tune_out_are_checked_first(tmp_path, capsys):
    assert (
        main(["profile", "--data", "synthetic:small", "--trace", str(tmp_path / "no" / "x.json")])
        == 2
    )
    assert "folder" in capsys.readouterr().err
    assert main(["tune", "--data", "synthetic:small", "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert (
        main(["tune", "--data", "synthetic:small", "--out", str(tmp_path / "no" / "a.yaml")]) == 2
    )
    assert "does not exist" in capsys.readouterr().err


def test_tune_keeps_an_existing_preset_unless_forced(tmp_path, capsys):
    preset = tmp_path / "fast.yaml"
    preset.write_text("batch_size: 64\n")
    assert main(["tune", "--data", "synthetic:small", "--out", str(preset), "--budget", "1"]) == 2
    error = capsys.readouterr().err
    assert f"--out {preset} exists: give another file name, or --force" in error
    assert preset.read_text() == "batch_size: 64\n"


def test_every_train_option_has_a_description(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--model", "clcrec", "--help"])
    text = capsys.readouterr().out
    assert "embedding size (default: 64)" in text
    assert "micro-batches per optimizer step" in text
    assert "no loader workers are needed" in text


@pytest.mark.parametrize("command", ["train", "search", "tune", "profile", "memory"])
def test_no_help_line_gives_its_default_twice(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # one line per option
    with pytest.raises(SystemExit):
        main([command, "--help"])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.count("(default") > 1] == []
    assert any("(default: all)" in line for line in lines)


def test_train_help_for_a_named_model_shows_its_options_alone(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--model", "lstm", "--help"])
    text = capsys.readouterr().out
    assert "lstm options" in text and "--window" in text
    assert "clcrec options" not in text and "--backbone" not in text and "--lr-lambda" not in text
    with pytest.raises(SystemExit):
        main(["train", "--model=LM", "--help"])
    text = capsys.readouterr().out
    assert "--backbone" in text and "--window" not in text
    assert "(default: 0.0013)" in text  # the lm's own learning rate, not clcrec's


def test_help_imports_no_torch():
    code = (
        "import sys\n"
        "from coldbrew.cli import build_parser\n"
        "build_parser().format_help()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'numpy' not in sys.modules, 'numpy was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_python_dash_m_coldbrew_runs_the_cli():
    done = subprocess.run(
        [sys.executable, "-m", "coldbrew", "--help"], capture_output=True, text=True, check=True
    )
    assert "coldbrew" in done.stdout and "train" in done.stdout


def test_evaluate_needs_a_run(tmp_path):
    from coldbrew.errors import ColdbrewError

    with pytest.raises(ColdbrewError, match="not a coldbrew run"):
        evaluate_run(tmp_path)


def test_version_prints_the_package_version(capsys):
    from coldbrew.version import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"coldbrew {__version__}"


def test_a_machine_failure_is_one_line_and_the_debug_variable_shows_the_traceback(
    tmp_path, capsys, monkeypatch
):
    import coldbrew.cli as cli

    def fail(args):
        raise OSError(28, "No space left on device", str(tmp_path / "best.pt"))

    monkeypatch.setattr(cli, "handler", lambda command: fail)
    assert main(["doctor"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("coldbrew: error: No space left on device: ") and error.count("\n") == 1
    assert "COLDBREW_DEBUG=1" in error
    monkeypatch.setenv("COLDBREW_DEBUG", "1")
    with pytest.raises(OSError, match="No space left"):
        main(["doctor"])
    monkeypatch.setattr(
        cli,
        "handler",
        lambda command: lambda args: (_ for _ in ()).throw(ColdbrewError("bad value")),
    )
    with pytest.raises(ColdbrewError, match="bad value"):
        main(["doctor"])


def test_data_info_prints_the_density_as_a_percentage(capsys):
    from coldbrew.cli.options import percent

    assert [percent(x) for x in (0.004022255167344008, 0.25, 0.0, 3.6e-7)] == [
        "0.40 %",
        "25.00 %",
        "0.00 %",
        "0.000036 %",
    ]
    assert main(["data", "info", "synthetic:small"]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith("density")]
    assert len(shown) == 1 and shown[0].endswith(" %") and len(shown[0].split()[1]) <= 6


def test_a_one_column_block_is_said_in_the_singular():
    from coldbrew.data.dataset import describe_layout
    from coldbrew.new_item import describe_blocks

    layout = [{"block": "numeric", "width": 1, "columns": ["year"]}, {"block": "text", "width": 2}]
    assert describe_layout(layout) == "numeric: 1 column (year), then text: 2 columns"
    blocks = [{"name": "numeric", "width": 1, "columns": ["year"]}, {"name": "text", "width": 2}]
    assert describe_blocks(blocks) == "numeric (1 column: year), then text (2 columns)"
