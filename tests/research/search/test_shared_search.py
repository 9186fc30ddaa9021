"""One search shared by workers (``coldbrew search --storage``) on a real PostgreSQL server:
the total counts every worker's trials, a trial past it is given up, a dead worker's trial is
tried again by a waiting worker; worker processes of the CLI share one study (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coldbrew.errors import ColdbrewError
from coldbrew.research.search.shared_study import (
    SURPLUS,
    guard_total,
    interrupted_trials,
    open_storage,
    run_trials,
)
from coldbrew.research.search.space import parse_space
from research_optional import require

SRC = str(Path(__file__).resolve().parents[3] / "src")
# the tests play other workers with study.ask(), which Optuna's heartbeat does not watch
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")


def value(trial) -> float:
    return trial.suggest_float("x", 0.0, 1.0)


def test_the_total_counts_every_workers_trials_and_one_past_it_is_given_up(postgres_url):
    optuna = require("optuna")
    from optuna.trial import TrialState

    from coldbrew.research.search.report import trial_rows

    storage = open_storage(postgres_url, heartbeat=60, log=print)
    study = optuna.create_study(study_name="s", storage=storage)
    other = optuna.load_study(study_name="s", storage=storage)  # another worker
    other.tell(other.ask(), 0.5)
    running = other.ask()  # still running there
    run_trials(study, value, 3, timeout=None, wait=False, poll=0.1)
    assert len(study.trials) == 3  # one started here: 1 done + 1 running elsewhere + 1
    run_trials(study, value, 3, timeout=None, wait=False, poll=0.1)
    assert len(study.trials) == 3  # the total is reached counting the running one

    # two workers asked at once past the total: the later trial is given up before drawing
    study.optimize(guard_total(value, 3), n_trials=1)
    surplus = study.trials[-1]
    assert surplus.state == TrialState.PRUNED and surplus.user_attrs[SURPLUS] is True
    assert surplus.params == {}
    other.tell(running, 0.1)
    space = parse_space({"lr": {"uniform": [0.1, 1.0]}})
    assert [row["trial"] for row in trial_rows(study, space)] == [0, 1, 2]


def test_a_dead_workers_trial_is_tried_again_by_a_waiting_worker(postgres_url):
    optuna = require("optuna")
    from optuna.trial import TrialState

    lines: list[str] = []
    storage = open_storage(postgres_url, heartbeat=1, log=lines.append)
    study = optuna.create_study(study_name="s", storage=storage)
    dead = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
    storage.record_heartbeat(dead._trial_id)  # one heartbeat, then its worker was killed
    started = time.monotonic()
    run_trials(study, value, 1, timeout=None, wait=True, poll=0.2)
    assert time.monotonic() - started >= 2  # silent for twice the heartbeat: dead
    states = [trial.state for trial in study.trials]
    assert states == [TrialState.FAIL, TrialState.COMPLETE]
    assert study.trials[1].params == study.trials[0].params  # its settings tried again
    assert interrupted_trials(study) == {0}
    assert lines == ["trial 0's worker stopped sending heartbeats: its settings queued again"]


def test_a_journal_file_is_shared_and_has_no_heartbeat(tmp_path):
    optuna = require("optuna")
    from coldbrew.research.search.shared_study import beats

    journal = f"journal:{tmp_path / 'shared' / 'study.log'}"
    first = optuna.create_study(study_name="s", storage=open_storage(journal, 60, print))
    second = optuna.load_study(study_name="s", storage=open_storage(journal, 60, print))
    run_trials(first, value, 2, timeout=None, wait=False, poll=0.1)
    run_trials(second, value, 3, timeout=None, wait=False, poll=0.1)
    assert len(first.trials) == 3 and not beats(first._storage)


def test_a_study_folder_belongs_to_one_study(tmp_path):
    require("optuna")
    from coldbrew.research.search.study import search

    base = {"data": "synthetic:small,users=120,items=80", "epochs": 1, "quiet": True}
    space = parse_space({"lr": {"log_uniform": [1e-3, 0.1]}}, (base,))
    options = {"trials": 1, "tensorboard": False, "plot": False, "log": lambda line: None}
    with pytest.raises(ColdbrewError, match="neither a database URL nor journal:PATH"):
        search((base,), space, tmp_path / "a", storage="db.sqlite", **options)
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "study.db").write_text("")
    journal = f"journal:{tmp_path / 'study.log'}"
    with pytest.raises(ColdbrewError, match="holds a local study .*leave out --storage"):
        search((base,), space, tmp_path / "local", storage=journal, **options)
    search((base,), space, tmp_path / "shared", storage=journal, **options)
    with pytest.raises(ColdbrewError, match="holds trials of a shared study"):
        search((base,), space, tmp_path / "shared", **options)
    with pytest.raises(ColdbrewError, match="trials of the study 'coldbrew' in journal:"):
        search((base,), space, tmp_path / "shared", storage=journal, study_name="b", **options)


def test_a_worker_keeps_out_of_a_folder_a_local_search_is_running_in(tmp_path, monkeypatch):
    require("optuna")
    from coldbrew.research.search import shared_study
    from coldbrew.research.search.study import search
    from coldbrew.training.checkpoint import RunLock

    monkeypatch.setattr(shared_study, "FOLDER_WAIT", 0.5)
    base = {"data": "synthetic:small,users=120,items=80", "epochs": 1, "quiet": True}
    space = parse_space({"lr": {"log_uniform": [1e-3, 0.1]}}, (base,))
    options = {"trials": 1, "tensorboard": False, "plot": False, "log": lambda line: None}
    out = tmp_path / "study"
    out.mkdir()
    journal = f"journal:{tmp_path / 'study.log'}"
    with RunLock(out), pytest.raises(ColdbrewError, match="is in use by process"):
        search((base,), space, out, storage=journal, **options)  # before its study.db exists
    assert not (out / "storage.json").exists()


def test_the_command_line_shares_a_study_through_a_journal_file(tmp_path, capsys):
    require("optuna")
    from coldbrew.cli import main

    space = tmp_path / "space.yaml"
    space.write_text("lr: {log_uniform: [0.001, 0.1]}\n")
    journal = tmp_path / "shared" / "study.log"
    command = ["search", "--space", str(space), "--trials", "2", "--storage", f"journal:{journal}"]
    command += ["--study-name", "mine", "--data", "synthetic:small,users=120,items=80"]
    command += [
        "--epochs",
        "1",
        "--quiet",
        "--no-tensorboard",
        "--early-stop-metric",
        "cold/recall@5",
    ]
    command += ["--ks", "5"]
    assert main([*command, "--out", str(tmp_path / "a")]) == 0
    assert main([*command, "--trials", "3", "--out", str(tmp_path / "b")]) == 0
    output = capsys.readouterr().out
    assert "study mine (shared; trials written in" in output
    assert counted_states(tmp_path / "b") == ["complete"] * 3  # the study's, from both folders
    assert [path.name for path in (tmp_path / "b").glob("trial-*")] == ["trial-002"]
    saved = json.loads((tmp_path / "b" / "storage.json").read_text())
    assert saved == {"storage": f"journal:{journal}", "study": "mine"}
    alone = ["search", "--space", str(space), "--trials", "1", "--out", "x", "--heartbeat", "5"]
    assert main(alone) == 2
    assert "--study-name and --heartbeat go with --storage URL" in capsys.readouterr().err


def test_a_password_never_reaches_the_study_folder():
    from coldbrew.research.search.shared_study import display_url

    assert display_url("postgresql://me:s3cr@t@db:5432/x") == "postgresql://me:***@db:5432/x"
    assert display_url("postgresql://me@db/x") == "postgresql://me@db/x"
    assert display_url("journal:/a:b@c/log") == "journal:/a:b@c/log"


def worker(url: str, out: Path, space: Path, trials: int, *flags: str) -> subprocess.Popen:
    """``coldbrew search`` in a process of its own, sharing the study ``url`` holds."""
    command = [sys.executable, "-c", "import sys; from coldbrew.cli import main; sys.exit(main())"]
    command += ["search", "--space", str(space), "--trials", str(trials), "--out", str(out)]
    command += ["--storage", url, "--heartbeat", "1", "--startup-trials", "1", "--quiet"]
    command += ["--no-tensorboard", "--ks", "5", "--early-stop-metric", "cold/recall@5", *flags]
    environment = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment
    )


def counted_states(out: Path) -> list[str]:
    rows = json.loads((out / "trials.json").read_text())["trials"]
    return [row["state"] for row in rows]


@pytest.mark.slow
def test_two_worker_processes_share_one_search(postgres_url, tmp_path):
    require("optuna")
    require("implicit")
    space = tmp_path / "space.yaml"
    space.write_text("ridge_lambda: {log_uniform: [0.01, 1000]}\n")
    out = tmp_path / "study"  # both workers on this machine write their trials here
    flags = ("--model", "ridge", "--data", "synthetic:small", "--backbone-dim", "8")
    workers = [worker(postgres_url, out, space, 6, *flags) for _ in range(2)]
    logs = [process.communicate(timeout=300)[0] for process in workers]
    assert [process.returncode for process in workers] == [0, 0], logs
    assert counted_states(out) == ["complete"] * 6
    assert sorted(path.name for path in out.glob("trial-*")) == [f"trial-{n:03d}" for n in range(6)]
    for log in logs:  # each worker ran a share, and each printed the whole table
        assert " complete val cold/recall@5 " in log and "best: trial" in log


@pytest.mark.slow
def test_a_killed_workers_trial_is_finished_by_the_other(postgres_url, tmp_path):
    require("optuna")
    space = tmp_path / "space.yaml"
    space.write_text("lr: {log_uniform: [0.005, 0.05]}\n")
    flags = ("--data", "synthetic:small,users=400,items=200", "--batch-size", "64")
    flags += ("--num-neg", "4", "--epochs", "30", "--patience", "100", "--dim", "16")
    flags += ("--prune-warmup", "100")  # a few seconds a trial, none pruned
    killed = worker(postgres_url, tmp_path / "a", space, 3, *flags)  # two machines' folders
    started = time.monotonic()
    while not list((tmp_path / "a").glob("trial-*")):
        assert time.monotonic() - started < 120, "the first worker never started a trial"
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)  # mid-trial: its trial stays running in the database
    killed.wait()
    other = worker(postgres_url, tmp_path / "b", space, 3, *flags)
    log = other.communicate(timeout=300)[0]
    assert other.returncode == 0, log
    states = counted_states(tmp_path / "b")
    assert sorted(states) == ["complete"] * 3 + ["interrupted"], states
    rows = json.loads((tmp_path / "b" / "trials.json").read_text())["trials"]
    dead = rows[states.index("interrupted")]
    assert any(row["params"] == dead["params"] and row["state"] == "complete" for row in rows)
    assert f"trial {dead['trial']}'s worker stopped sending heartbeats" in log
