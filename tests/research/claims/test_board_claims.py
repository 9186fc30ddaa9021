"""One leaderboard shared by two worker processes through claims (a folder, or a real
PostgreSQL): every run trained once, both workers print the whole table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[3] / "src")
BOARD = [
    "leaderboard",
    "--data",
    "synthetic:small,users=120,items=80",
    "--models",
    "ridge,knn,popularity",
    "--seeds",
    "1",
    "--folds",
    "2",
    "--ks",
    "5,20",
    "--blend",
    "ridge+knn",
    "--no-plot",
]


@pytest.fixture(params=[pytest.param("folder", marks=pytest.mark.slow), "postgres"])
def where(request, tmp_path):
    if request.param == "folder":
        return str(tmp_path / "claims")
    return request.getfixturevalue("postgres_url")


def test_two_workers_share_one_board_and_train_each_run_once(where, tmp_path):
    out = tmp_path / "board"
    command = [sys.executable, "-m", "coldbrew", *BOARD, "--out", str(out), "--claims", where]
    environment = {**os.environ, "PYTHONPATH": SRC, "COLDBREW_THREADS": "1"}
    workers = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment
        )
        for _ in range(2)
    ]
    outputs = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], outputs
    claimed = [line for output in outputs for line in output.splitlines() if "claimed " in line]
    units = [line.split("claimed ")[1].split(" (")[0] for line in claimed]
    expected = {f"{m}/fold-{f}" for m in ("ridge", "knn", "popularity") for f in (0, 1)}
    expected |= {f"{m}/final" for m in ("ridge", "knn", "popularity")} | {"blend-ridge+knn"}
    assert sorted(units) == sorted(expected)  # every unit claimed once, by one worker
    for model in ("ridge", "knn", "popularity"):  # and trained once: one 'training' line each
        log = (out / "folds" / model / "fold-0" / "seed-1" / "train.log").read_text()
        assert log.count(f"training {model} on") == 1
    tables = [output[output.index("cold Recall@20") :] for output in outputs]
    assert tables[0] == tables[1]  # both print the whole board
    board = json.loads((out / "leaderboard.json").read_text())
    assert {row["model"] for row in board["rows"]} == {
        "ridge",
        "knn",
        "popularity",
        "blend-ridge+knn",
    }
