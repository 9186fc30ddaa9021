"""Work in several spawned processes (``coldbrew.research.search.parallel``): results, lines with
their unit's name, torch threads and a cache per process, the first error raised here as it
was raised there, a process that dies, an interrupt that stops every process."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from coldbrew.errors import ColdbrewError
from coldbrew.research.search.parallel import (
    longest_first,
    oversubscribed,
    parse_jobs,
    resolve_jobs,
    run_in_processes,
)


# the work functions: module-level, so a spawned process imports them by name
def report(unit, cache, log):
    """Unit "refuse" raises a ColdbrewError, "slow" sleeps first; the others report where they
    ran."""
    import torch

    log(f"started {unit}")
    if unit == "refuse":
        raise ColdbrewError("refused here, in one line")
    if unit == "slow":
        time.sleep(2)
    print(f"printed by {unit}")
    warnings.warn(f"careful with {unit}", stacklevel=2)
    return {"unit": unit, "threads": torch.get_num_threads(), "cache": type(cache).__name__}


def dies(unit, cache, log):
    os._exit(3)


def sleeps(unit, cache, log):
    log("sleeping")
    time.sleep(120)


def records_its_pid_and_sleeps(unit, cache, log):
    Path(unit).write_text(str(os.getpid()))
    time.sleep(120)


PARENT = """
import sys
from coldbrew.research.search.parallel import run_in_processes
from test_parallel import records_its_pid_and_sleeps
units = [(name, name) for name in sys.argv[1:]]
run_in_processes(records_its_pid_and_sleeps, units, 2, threads=1, log=lambda line: None)
"""


def gone(pid: int) -> bool:
    """No process ``pid``, or only its zombie (a reparented child may wait for its reaping)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def workers_of_a_parent(tmp_path) -> tuple[subprocess.Popen, list[int]]:
    """A parent process running ``records_its_pid_and_sleeps`` in two workers; their pids."""
    paths = [tmp_path / "a", tmp_path / "b"]
    here = str(Path(__file__).parent)
    path = os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, *map(str, paths)], env=env)
    deadline = time.monotonic() + 120
    while not all(path.exists() and path.read_text() for path in paths):
        assert time.monotonic() < deadline and parent.poll() is None, "the workers never started"
        time.sleep(0.1)
    return parent, [int(path.read_text()) for path in paths]


def wait_until_gone(pids: list[int], seconds: float) -> float:
    start = time.monotonic()
    while not all(gone(pid) for pid in pids):
        assert time.monotonic() - start < seconds, "a worker outlived its parent"
        time.sleep(0.1)
    return time.monotonic() - start


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_workers_stop_on_their_own_when_their_parent_is_killed(tmp_path):
    parent, pids = workers_of_a_parent(tmp_path)
    try:
        parent.kill()  # SIGKILL: the parent can pass nothing on
        parent.wait()
        assert wait_until_gone(pids, 30) < 30  # not the 120 s the units sleep
    finally:
        end_any(pids)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_sigterm_stops_the_workers_first_and_exits_with_143(tmp_path):
    parent, pids = workers_of_a_parent(tmp_path)
    try:
        parent.terminate()
        assert parent.wait(60) == 143
        assert all(gone(pid) for pid in pids)  # stopped before the parent ended, not after
    finally:
        end_any(pids)


def end_any(pids: list[int]) -> None:
    """A failed test leaves no sleeping worker behind."""
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_units_run_in_processes_with_their_threads_cache_and_named_lines():
    lines: list[str] = []
    units = [("a", "a"), ("b", "b"), ("c", "c")]
    results = run_in_processes(report, units, 2, threads=2, log=lines.append)
    assert results == {
        name: {"unit": name, "threads": 2, "cache": "DataCache"} for name in ("a", "b", "c")
    }
    for name in ("a", "b", "c"):
        assert f"[{name}] started {name}" in lines
        assert f"[{name}] printed by {name}" in lines
        assert f"[{name}] warning: careful with {name}" in lines  # one line, no source path
    assert not multiprocessing.active_children()


def test_the_first_error_is_raised_here_after_the_running_units_finish_and_no_more_start():
    lines: list[str] = []
    units = [("slow", "slow"), ("refuse", "refuse"), ("later", "later")]
    with pytest.raises(ColdbrewError, match="^refused here, in one line$") as raised:
        run_in_processes(report, units, 2, threads=1, log=lines.append)
    assert "[slow] printed by slow" in lines  # running when the error came: it finished
    assert not any(line.startswith("[later]") for line in lines)  # never started
    assert any("waiting for slow to finish" in line for line in lines)
    assert "in the worker process" in str(raised.value.__cause__)  # COLDBREW_DEBUG shows it
    assert not multiprocessing.active_children()


def test_a_process_that_dies_is_an_error_naming_its_unit():
    with pytest.raises(ColdbrewError, match="process training knn ended .*exit code 3"):
        run_in_processes(dies, [("knn", None)], 1, threads=1, log=lambda line: None)
    assert not multiprocessing.active_children()


def test_an_interrupt_stops_every_process():
    def interrupt(line: str) -> None:
        raise KeyboardInterrupt

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_in_processes(sleeps, [("a", None), ("b", None)], 2, threads=1, log=interrupt)
    assert not multiprocessing.active_children()
    assert time.monotonic() - start < 60  # not the 120 s the units sleep


def test_jobs_are_a_positive_count_or_auto():
    assert parse_jobs("2") == 2 and parse_jobs(" AUTO ") == "auto" and parse_jobs(None) == 1
    for wrong in ("0", "-1", "x", "1.5"):
        with pytest.raises(ColdbrewError, match="--jobs must be a positive number .* or auto"):
            parse_jobs(wrong)
    assert resolve_jobs(4, 3) == 3  # never more processes than units
    assert resolve_jobs(2, 0) == 1
    assert 1 <= resolve_jobs("auto", 100) <= os.cpu_count()


def test_the_longest_models_start_first_and_unknown_ones_before_the_closed_form_ones():
    names = ["knn", "mystery", "deepmusic", "clcrec", "bpr", "lm", "gar", "ridge"]
    assert longest_first(names) == [
        "lm",
        "clcrec",
        "gar",
        "deepmusic",
        "mystery",
        "ridge",
        "knn",
        "bpr",
    ]


def test_more_threads_than_cores_is_a_warning_that_gives_the_share():
    assert oversubscribed(2, 1, 2) is None and oversubscribed(2, 2, 4) is None
    warning = oversubscribed(2, 2, 2)
    assert warning.startswith("warning: 2 processes x 2 threads on 2 usable cores")
    assert warning.endswith("COLDBREW_THREADS=1 gives each process its share")
    assert oversubscribed(3, 2, 2).endswith("COLDBREW_THREADS=1 gives each process its share")
    assert oversubscribed(2, 8, 8).endswith("COLDBREW_THREADS=4 gives each process its share")


def test_a_models_folds_go_by_their_model():
    names = ["ridge/fold-0", "clcrec/fold-1", "ridge/fold-1", "clcrec/fold-0"]
    assert longest_first(names) == [
        "clcrec/fold-1",
        "clcrec/fold-0",
        "ridge/fold-0",
        "ridge/fold-1",
    ]
