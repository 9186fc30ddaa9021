"""Multi-seed runs: one run per seed, the aggregate in RUN/results.json, resume skips finished
seeds and continues an interrupted one."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.seeds import parse_seeds, train_seeds
from coldbrew.research.summary import aggregate, run_summary
from coldbrew.training.run import resume_config
from research_tiny_run import TINY


def silent(line: str) -> None:
    pass


def test_parse_seeds():
    assert parse_seeds("1,2,3") == [1, 2, 3]
    assert parse_seeds(" 7 ") == [7]
    for text, message in (("1,1", "twice"), ("a", "integers"), ("", "at least one"), ("-1", "0..")):
        with pytest.raises(ColdbrewError, match=message):
            parse_seeds(text)


def test_resume_skips_finished_seeds_and_continues_the_interrupted_one(tmp_path):
    run = tmp_path / "run"
    calls = []

    def interrupt_in_seed_two(state) -> None:
        calls.append(state.epoch)
        if len(calls) == 3:  # seed 1 ran epochs 1 and 2; this is seed 2's first epoch
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_seeds(
            make_config(TINY), run, [1, 2, 3], on_epoch_end=interrupt_in_seed_two, log=silent
        )
    assert (run / "seed-1" / "results.json").exists()
    assert (run / "seed-2" / "last.pt").exists() and not (run / "seed-2" / "results.json").exists()
    assert not (run / "seed-3").exists() and not (run / "results.json").exists()
    finished_before = (run / "seed-1" / "results.json").stat().st_mtime_ns

    lines: list[str] = []
    results = train_seeds(resume_config(run), run, None, resume=True, log=lines.append)
    assert (run / "seed-1" / "results.json").stat().st_mtime_ns == finished_before
    assert any(line.startswith("seed 1: finished before") for line in lines)
    assert "resuming" in (run / "seed-2" / "train.log").read_text()
    assert json.loads((run / "seed-2" / "results.json").read_text())["epochs_run"] == 2
    assert results["seeds"] == [1, 2, 3] and set(results["per_seed"]) == {"1", "2", "3"}
    assert json.loads((run / "results.json").read_text())["seeds"] == [1, 2, 3]

    # the aggregate is the mean ± std of the three seeds' own results.json
    own = [json.loads((run / f"seed-{s}" / "results.json").read_text()) for s in (1, 2, 3)]
    expected = aggregate([run_summary(results) for results in own])
    recall = results["metrics"]["val"]["cold"]["recall@5"]
    assert recall == expected["metrics"]["val"]["cold"]["recall@5"]
    assert recall["values"] == [r["metrics"]["val"]["cold"]["recall@5"] for r in own]
    assert recall["std"] > 0  # the seeds differ
    assert [r["config"]["seed"] for r in own] == [1, 2, 3]
    assert results["timing"]["seconds_to_best"]["n"] == 3


def test_a_resumed_multi_seed_run_may_add_seeds_and_refuses_a_single_run(tmp_path):
    run = tmp_path / "run"
    train_seeds(make_config(TINY, {"epochs": 1}), run, [1], log=silent)
    results = train_seeds(resume_config(run), run, [1, 4], resume=True, log=silent)
    assert results["seeds"] == [1, 4] and (run / "seed-4" / "results.json").exists()
    with pytest.raises(ColdbrewError, match="not a multi-seed run"):
        train_seeds(resume_config(run / "seed-1"), run / "seed-1", None, resume=True, log=silent)
    # naming fewer seeds would rewrite the results without the others: refused, nothing written
    before = (run / "results.json").read_text()
    with pytest.raises(ColdbrewError, match="holds seeds 1,4; --seeds on --resume may only add"):
        train_seeds(resume_config(run), run, [4], resume=True, log=silent)
    assert (run / "results.json").read_text() == before


def test_a_seed_resumed_on_its_own_updates_its_parent(tmp_path):
    run = tmp_path / "run"
    flags = ["--data", TINY["data"], "--batch-size", "1024", "--num-neg", "4", "--epochs", "1"]
    assert main(["train", *flags, "--seeds", "1,2", "--quiet", "--out", str(run)]) == 0
    assert json.loads((run / "results.json").read_text())["per_seed"]["2"]["epochs_run"] == 1
    assert main(["train", "--resume", str(run / "seed-2"), "--epochs", "2", "--quiet"]) == 0
    parent = json.loads((run / "results.json").read_text())
    assert parent["per_seed"]["2"]["epochs_run"] == 2 and parent["per_seed"]["1"]["epochs_run"] == 1


def test_cli_seeds_writes_the_aggregate_and_refuses_seed_with_seeds(tmp_path, capsys):
    run = tmp_path / "cli"
    flags = ["--data", TINY["data"], "--batch-size", "1024", "--num-neg", "4", "--epochs", "1"]
    assert main(["train", *flags, "--seeds", "3", "--seed", "2", "--out", str(run)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["train", *flags, "--seeds", "1,2", "--no-tensorboard", "--out", str(run)]) == 0
    printed = capsys.readouterr().out
    assert "seeds 1,2: best epoch" in printed and " ± " in printed
    assert not list(run.glob("seed-1/events.out.tfevents.*"))
    assert main(["train", "--resume", str(run), "--quiet"]) == 0  # every seed done: skipped


@pytest.mark.slow
def test_seeds_under_torchrun_run_one_after_another_in_every_process(tmp_path):
    import subprocess
    import sys

    run = tmp_path / "run"
    flags = ["--data", TINY["data"], "--ks", "5,20", "--batch-size", "512", "--num-neg", "4"]
    flags += ["--epochs", "1"]
    command = [sys.executable, "-m", "coldbrew", "train", "--nproc", "2", *flags]
    done = subprocess.run(
        [*command, "--seeds", "1,2", "--quiet", "--out", str(run)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((run / "results.json").read_text())
    assert results["seeds"] == [1, 2] and results["metrics"]["val"]["cold"]["recall@5"]["n"] == 2
    for seed in (1, 2):
        assert (
            json.loads((run / f"seed-{seed}" / "results.json").read_text())["config"]["seed"]
            == seed
        )
