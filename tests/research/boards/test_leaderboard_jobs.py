"""``coldbrew leaderboard --jobs N``: models trained side by side give the board one process
gives, resume as it does, and fail with its one-line message."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import main
from coldbrew.research.boards.encoder_rows import board_rows
from coldbrew.research.boards.leaderboard import (
    board_preset,
    leaderboard,
    load_text_vectors_first,
    plan_board,
    train_models,
)
from research_tiny_run import TINY

MODELS = ["knn", "ridge", "bpr"]
SEEDS = [1, 2]
BASE = {key: value for key, value in TINY.items() if key != "num_neg"}  # knn and ridge lack it


def quiet(_line: str) -> None:
    pass


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """The same board trained in one process and in two."""
    root = tmp_path_factory.mktemp("jobs")
    one = leaderboard((BASE,), MODELS, SEEDS, root / "one", plot=False, log=quiet)
    lines: list[str] = []
    plan = plan_board((BASE,), MODELS, (), SEEDS, root / "two")
    trained = train_models(plan, jobs=2, log=lines.append)
    return root, one, trained, lines


def test_two_processes_train_the_board_one_process_trains(boards):
    root, one, trained, lines = boards
    assert list(trained) == MODELS  # in the order asked, whatever order they finished in
    assert any("in 2 processes at once" in line for line in lines)
    assert sum("once before the processes start" in line for line in lines) == 1
    assert any(line.startswith("[knn] seed 2: training in") for line in lines)
    for model in MODELS:
        # what train_models returns is what the run wrote
        written = json.loads((root / "two" / model / "results.json").read_text())
        assert trained[model] == written
    two = leaderboard((BASE,), MODELS, SEEDS, root / "two", plot=False, log=quiet)
    assert [row["model"] for row in two["rows"]] == MODELS
    # Equal up to float rounding: without OMP_NUM_THREADS the one process may use more torch
    # threads than each of the two (cores // 2), and a sum split over other threads rounds
    # differently in the last bits. The seeds, data and settings are the same.
    for row_one, row_two in zip(one["rows"], two["rows"], strict=True):
        assert row_two["metrics"].keys() == row_one["metrics"].keys()
        for convention, splits in row_one["metrics"].items():
            for split, groups in splits.items():
                for group, metrics in groups.items():
                    for name, cell in metrics.items():
                        other = row_two["metrics"][convention][split][group][name]
                        assert other["values"] == pytest.approx(cell["values"], rel=1e-6)


def test_a_second_call_with_jobs_trains_nothing(boards):
    root, *_ = boards
    finished = (root / "two" / "bpr" / "seed-1" / "best.pt").stat().st_mtime_ns
    lines: list[str] = []
    leaderboard((BASE,), MODELS, SEEDS, root / "two", plot=False, jobs=2, log=lines.append)
    assert (root / "two" / "bpr" / "seed-1" / "best.pt").stat().st_mtime_ns == finished
    assert not any("processes at once" in line for line in lines)  # no process was started
    assert not any("before the processes start" in line for line in lines)  # nor data loaded
    assert sum("finished before" in line for line in lines) == len(MODELS) * len(SEEDS)


def test_an_error_in_one_process_is_the_one_line_error_of_one_process(tmp_path, capsys):
    flags = ["--data", TINY["data"], "--epochs", "1", "--ks", "5,20", "--no-plot", "--quiet"]
    errors = {}
    for jobs in ("2", "1"):
        out = tmp_path / f"jobs-{jobs}"
        (out / "ridge").mkdir(parents=True)
        (out / "ridge" / "notes.txt").write_text("not a run")  # ridge cannot train here
        argv = ["leaderboard", "--models", "knn,ridge", "--seeds", "1", "--jobs", jobs]
        assert main([*argv, "--out", str(out), *flags]) == 2
        errors[jobs] = capsys.readouterr().err.replace(str(out), "OUT")
        assert (out / "knn" / "results.json").exists()  # the model that finished keeps it
        assert not (out / "leaderboard.json").exists()
    assert errors["2"] == errors["1"]
    assert errors["2"].count("\n") == 1
    assert errors["2"].startswith("coldbrew: error: OUT/ridge already exists and is not empty")


@pytest.mark.parametrize("jobs", ["0", "x"])
def test_jobs_that_are_no_count_are_refused_before_anything_runs(tmp_path, capsys, jobs):
    out = tmp_path / "board"
    argv = ["leaderboard", "--models", "knn", "--data", TINY["data"], "--jobs", jobs]
    assert main([*argv, "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert (
        f"--jobs must be a positive number of processes or auto (one per free core), not {jobs!r}"
        in error
    )
    assert not out.exists()


def test_a_presets_leaderboard_section_may_give_the_jobs():
    assert board_preset({"leaderboard": {"jobs": 2}}) == {"jobs": "2"}
    assert board_preset({"leaderboard": {"jobs": "auto", "seeds": [1]}}) == {
        "jobs": "auto",
        "seeds": "1",
    }


def test_the_first_model_that_reads_text_vectors_loads_its_data_before_the_processes():
    loaded, lines = [], []
    configs = [config for _, config in board_rows((BASE,), ["lm", "knn", "ridge"], ())]
    load_text_vectors_first(configs, 3, loaded.append, lines.append)
    # the LM reads the texts itself (no text vectors): knn's data, for the first seed, once
    assert [(config.model, config.seed, config.data) for config in loaded] == [
        ("knn", 3, BASE["data"])
    ]
    assert lines == [f"loading {BASE['data']} once before the processes start (its text vectors)"]
    lm_only = [config for _, config in board_rows((BASE,), ["lm"], ())]
    load_text_vectors_first(lm_only, 1, loaded.append, lines.append)
    assert len(loaded) == 1  # nothing reads text vectors: nothing is loaded
