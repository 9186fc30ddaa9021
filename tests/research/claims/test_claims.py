"""Units handed out to workers (coldbrew.research.claims.units) through a folder with file locks and
through a real PostgreSQL server: one holder at a time, every unit done once by two worker
processes, and a unit whose worker was killed claimed again after the heartbeat timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coldbrew.errors import ColdbrewError
from coldbrew.research.claims.units import Claims

UNITS = [f"model-{m}/fold-{f}/seed-1" for m in "ab" for f in range(4)]
SRC = str(Path(__file__).resolve().parents[3] / "src")


@pytest.fixture(params=["folder", "postgres"])
def where(request, tmp_path):
    """Where the claims live: a folder, or a new database on the session's PostgreSQL."""
    if request.param == "folder":
        return str(tmp_path / "claims")
    return request.getfixturevalue("postgres_url")


def test_one_holder_at_a_time_and_a_dead_holders_unit_is_free_after_the_timeout(where):
    first = Claims.open(where, scope="board", timeout=1.0, worker="first")
    second = Claims.open(where, scope="board", timeout=1.0, worker="second")
    assert first.claim(UNITS[:2]) == UNITS[0]
    assert second.claim(UNITS[:2]) == UNITS[1]  # the first is held
    assert second.claim(UNITS[:2]) is None
    first.heartbeat(UNITS[0])
    first.done(UNITS[0])
    assert first.status(UNITS[:3]) == {UNITS[0]: "done", UNITS[1]: "running", UNITS[2]: "free"}
    with pytest.raises(ColdbrewError, match="lost its claim .* held by second"):
        first.heartbeat(UNITS[1])  # not its unit

    time.sleep(1.3)  # the second's heartbeat is now older than the timeout
    assert first.status(UNITS[:2])[UNITS[1]] == "stale"
    assert first.claim(UNITS[:2]) == UNITS[1]  # a done unit is never handed out again
    with pytest.raises(ColdbrewError, match="lost its claim on model-a/fold-1/seed-1"):
        second.done(UNITS[1])  # late: its unit went to the first
    first.release(UNITS[1])
    assert second.claim(UNITS[:2]) == UNITS[1]  # released: free at once
    # another scope in the same place is another set of units
    assert Claims.open(where, scope="other", timeout=1.0).claim(UNITS[:1]) == UNITS[0]
    for claims in (first, second):
        claims.close()


def test_keep_alive_beats_while_the_block_runs_and_marks_the_unit_done(where):
    claims = Claims.open(where, timeout=1.0, worker="first")
    other = Claims.open(where, timeout=1.0, worker="other")
    unit = claims.claim(UNITS)
    with claims.keep_alive(unit, every=0.1):
        time.sleep(1.5)  # longer than the timeout: alive all along
        assert other.claim([unit]) is None
    assert claims.status([unit]) == {unit: "done"}
    unit = claims.claim(UNITS)
    with pytest.raises(RuntimeError), claims.keep_alive(unit):
        raise RuntimeError("the run failed")
    assert other.claim(UNITS) == unit  # released by the failure: claimable at once


def test_a_wrong_url_is_one_line_naming_the_cause(tmp_path):
    pytest.importorskip("sqlalchemy")
    with pytest.raises(ColdbrewError, match="is not a database URL"):
        Claims.open("nosuchdb://x/y")
    with pytest.raises(ColdbrewError, match="cannot reach the database: .*check the URL"):
        Claims.open("postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(ColdbrewError, match="timeout must be positive"):
        Claims.open(tmp_path, timeout=0)


WORKER = """
import sys, time
from coldbrew.research.claims.units import Claims
where, log, units, pause = sys.argv[1], sys.argv[2], sys.argv[3].split(","), float(sys.argv[4])
claims = Claims.open(where, timeout=1.5)
print("started", flush=True)
while (unit := claims.claim(units)) is not None:
    with claims.keep_alive(unit, every=0.2):
        print("claimed", unit, flush=True)
        time.sleep(pause)
        with open(log, "a") as handle:
            handle.write(unit + "\\n")
"""


def start_worker(where: str, log: Path, units: list[str], pause: float) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": SRC}
    command = [sys.executable, "-c", WORKER, where, str(log), ",".join(units), str(pause)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=environment)


def test_two_worker_processes_do_every_unit_exactly_once(where, tmp_path):
    log = tmp_path / "done.txt"
    workers = [start_worker(where, log, UNITS, 0.05) for _ in range(2)]
    outputs = [worker.communicate(timeout=60)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    assert sorted(log.read_text().split()) == sorted(UNITS)
    assert all("claimed" in output for output in outputs)  # both took a share
    assert set(Claims.open(where).status(UNITS).values()) == {"done"}


def test_a_killed_workers_unit_is_finished_by_another_after_the_timeout(where, tmp_path):
    log = tmp_path / "done.txt"
    killed = start_worker(where, log, UNITS[:1], 60)
    assert killed.stdout.readline() == "started\n"
    assert killed.stdout.readline() == f"claimed {UNITS[0]}\n"
    time.sleep(0.5)  # alive: its heartbeats keep the unit
    claims = Claims.open(where, timeout=1.5)
    assert claims.claim(UNITS[:1]) is None
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    started = time.monotonic()
    while (unit := claims.claim(UNITS[:1])) is None:
        assert time.monotonic() - started < 10, "the dead worker's unit was never freed"
        time.sleep(0.1)
    assert time.monotonic() - started > 0.5  # not before its heartbeat grew old
    claims.done(unit)
    assert claims.status(UNITS[:1]) == {UNITS[0]: "done"}
    assert not log.exists()  # the killed worker finished nothing
