"""A 10-trial search by one worker against two workers sharing it through PostgreSQL.

    python benchmarks/search_workers.py                  # starts its own PostgreSQL server
    python benchmarks/search_workers.py --storage postgresql://coldbrew@db-host/bench

Three arms, one after another, each a fresh study of the same search (CLCRec on synthetic data,
a few seconds a trial, pruning off so every trial trains every epoch):
``local``: one ``coldbrew search`` process, the default SQLite study; ``1 x postgres``: one
process through the database; ``2 x postgres``: two processes started together against the
database, sharing the 10 trials. Each process gets one thread (``COLDBREW_THREADS=1``,
``OMP_NUM_THREADS=1``). Wall seconds of each arm (process start to the last exit), the ratios
to one worker, and the load average before and after: on a machine shared with other work, the
two workers compete with it for the cores, so read the ratio with the load.

Why not ``coldbrew bench``: it times steps inside one process; this times whole searches run by
several processes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPACE = "lr: {log_uniform: [0.002, 0.05]}\nnum_neg: {categorical: [4, 8]}\n"
SEARCH = ["--data", "synthetic:small,users=400,items=200", "--batch-size", "64", "--dim", "16"]
SEARCH += ["--epochs", "12", "--patience", "100", "--prune-warmup", "1000", "--ks", "5"]
SEARCH += ["--early-stop-metric", "cold/recall@5", "--startup-trials", "3", "--quiet"]
SEARCH += ["--no-tensorboard"]


def start(out: Path, space: Path, trials: int, storage: str | None, name: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "coldbrew", "search", "--space", str(space)]
    command += ["--trials", str(trials), "--out", str(out), *SEARCH]
    if storage is not None:
        command += ["--storage", storage, "--study-name", name, "--heartbeat", "5"]
    environment = {**os.environ, "COLDBREW_THREADS": "1", "OMP_NUM_THREADS": "1"}
    environment["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment
    )


def arm(folder: Path, space: Path, trials: int, workers: int, storage: str | None, name: str):
    """Wall seconds of ``workers`` processes running one study; the study's trial states."""
    began = time.perf_counter()
    processes = [start(folder / name, space, trials, storage, name) for _ in range(workers)]
    logs = [process.communicate()[0].decode() for process in processes]
    seconds = time.perf_counter() - began
    for process, log in zip(processes, logs, strict=True):
        if process.returncode != 0:
            raise SystemExit(f"arm {name}: a worker failed\n{log[-3000:]}")
    rows = json.loads((folder / name / "trials.json").read_text())["trials"]
    return seconds, [row["state"] for row in rows]


@contextlib.contextmanager
def database(url: str | None):
    """``url``, or a PostgreSQL server started for the benchmark (the tests' own helper)."""
    if url is not None:
        yield url
        return
    sys.path.insert(0, str(ROOT / "tests" / "research"))
    from postgres_support import new_database, running_postgres, why_not

    reason = why_not()
    if reason is not None:
        raise SystemExit(f"no PostgreSQL: {reason}; give --storage URL")
    with running_postgres() as server:
        yield new_database(server, "bench")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", help="a PostgreSQL URL (default: start a server)")
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory() as temporary, database(args.storage) as url:
        folder = Path(temporary)
        space = folder / "space.yaml"
        space.write_text(SPACE)
        stamp = str(int(time.time()))
        for label, workers, storage in (
            ("local", 1, None),
            ("1 x postgres", 1, url),
            ("2 x postgres", 2, url),
        ):
            name = f"{label.replace(' ', '')}-{stamp}"
            seconds, states = arm(folder, space, args.trials, workers, storage, name)
            results[label] = seconds
            print(
                f"{label:14s} {seconds:7.1f} s  trials: {states.count('complete')} complete "
                f"of {len(states)}",
                flush=True,
            )
    load_after = os.getloadavg()
    two = results["2 x postgres"]
    print(
        f"2 workers / 1 worker (local): {two / results['local']:.2f}; "
        f"/ 1 worker (postgres): {two / results['1 x postgres']:.2f}"
    )
    print(
        f"cores {os.cpu_count()}; load average (1, 5, 15 min) before "
        f"{', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}"
    )
    print(json.dumps({"seconds": results, "load_before": load_before, "load_after": load_after}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
