"""A 10-trial search by one worker against two workers sharing it through PostgreSQL.

    python benchmarks/processes/search_workers.py      # starts its own PostgreSQL server
    python benchmarks/processes/search_workers.py --local \\
        --storage postgresql://coldbrew@db-host/bench

Each arm is a fresh study of the same search (CLCRec on synthetic data, a few seconds a trial,
pruning off so every trial trains every epoch): ``1 x postgres``, one ``coldbrew search``
process through the database; ``2 x postgres``, two processes started together against it,
sharing the 10 trials; with ``--local`` first, one process on the default SQLite study. The
arms run in the order 1, 2, 2, 1 (ABBA), so a load that rises or falls steadily weighs on both
alike; each process gets one thread (``COLDBREW_THREADS=1``, ``OMP_NUM_THREADS=1``) and a
session of its own, as workers started from separate shells have: Linux's autogroup scheduler
shares the cores between sessions, so workers started in one session (``--one-session``) split
that one session's share of a busy machine between them. Printed:
each arm's wall seconds (process start to the last exit) and the load average around it, the
mean of each kind and the ratio two workers / one. On a machine shared with other work, the
workers compete with it for the cores: read the ratio with the load.

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

ROOT = Path(__file__).resolve().parents[2]
SPACE = "lr: {log_uniform: [0.002, 0.05]}\nnum_neg: {categorical: [4, 8]}\n"
SEARCH = ["--data", "synthetic:small,users=400,items=200", "--batch-size", "64", "--dim", "16"]
SEARCH += ["--epochs", "12", "--patience", "100", "--prune-warmup", "1000", "--ks", "5"]
SEARCH += ["--early-stop-metric", "cold/recall@5", "--startup-trials", "3", "--quiet"]
SEARCH += ["--no-tensorboard"]


def start(
    out: Path, space: Path, trials: int, storage: str | None, name: str, session: bool
) -> subprocess.Popen:
    command = [sys.executable, "-m", "coldbrew", "search", "--space", str(space)]
    command += ["--trials", str(trials), "--out", str(out), *SEARCH]
    if storage is not None:
        command += ["--storage", storage, "--study-name", name, "--heartbeat", "5"]
    environment = {**os.environ, "COLDBREW_THREADS": "1", "OMP_NUM_THREADS": "1"}
    environment["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=environment,
        start_new_session=session,
    )


def arm(folder: Path, space: Path, trials: int, workers: int, storage, name: str, session: bool):
    """Wall seconds of ``workers`` processes running one study; the study's trial states."""
    began = time.perf_counter()
    processes = [
        start(folder / name, space, trials, storage, name, session) for _ in range(workers)
    ]
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
    sys.path.insert(0, str(ROOT / "tests"))
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
    parser.add_argument("--local", action="store_true", help="first, one worker on SQLite")
    parser.add_argument(
        "--one-session", action="store_true", help="start the workers in this session"
    )
    args = parser.parse_args()
    arms = [("local", 1, False)] if args.local else []
    arms += [("1 x postgres", 1, True), ("2 x postgres", 2, True)] * 2
    arms[-2:] = arms[-2:][::-1]  # 1, 2, 2, 1
    seconds: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as temporary, database(args.storage) as url:
        folder = Path(temporary)
        space = folder / "space.yaml"
        space.write_text(SPACE)
        for number, (label, workers, shared) in enumerate(arms):
            load = os.getloadavg()[0]
            name = f"arm{number}-{int(time.time())}"
            storage = url if shared else None
            session = not args.one_session
            took, states = arm(folder, space, args.trials, workers, storage, name, session)
            seconds.setdefault(label, []).append(took)
            print(
                f"{label:14s} {took:7.1f} s  {states.count('complete')} of {len(states)} trials "
                f"complete; load average (1 min) {load:.2f} before, {os.getloadavg()[0]:.2f} after",
                flush=True,
            )
    means = {label: sum(values) / len(values) for label, values in seconds.items()}
    ratio = means["2 x postgres"] / means["1 x postgres"]
    print(f"mean: {', '.join(f'{label} {mean:.1f} s' for label, mean in means.items())}")
    print(f"two workers / one worker: {ratio:.2f} on {os.cpu_count()} cores")
    sessions = "one session" if args.one_session else "a session each"
    print(json.dumps({"seconds": seconds, "ratio": ratio, "sessions": sessions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
