"""How many CPU threads torch uses: as many as the machine has free, never more than its cores.

torch starts one thread per core. On a machine whose cores are already busy that
oversubscribes them: every parallel op waits for its slowest thread, which waits for a core
(a zoo epoch on ml-100k took 27.3 s with torch's two threads at load 3, 1.3 s with one).
``choose_threads`` picks, in order:

1. ``COLDBREW_THREADS=N`` (or ``auto``, the default, for the rules below);
2. ``OMP_NUM_THREADS=N``, which torch reads itself;
3. the free cores: the usable cores less the cores busy now, rounded, at least 1
   (2 cores with 0.3 busy: 2 threads; 0.6 busy: 1; 2 or more: 1).

The cores busy now are the machine's non-idle CPU time over 0.2 s (``/proc/stat``, read twice;
cached for 10 s in a process). The kernel's 1-minute load average, used where ``/proc/stat``
is missing, trails the machine by about a minute: a command started just after a heavy one
ended read load 1.2 on an idle 2-core machine, took one thread and ran 117 s instead of 90 s.
``coldbrew doctor`` shows the choice and its reason.

Every entry point makes this one choice (``current_choice``) before its work: each compute
command of the CLI (``chosen_threads``), ``python -m coldbrew.demo`` (``make demo``) and a
leaderboard's worker processes (their share, through ``COLDBREW_THREADS``) apply it
(``apply_threads``); the library's entry points (every training or evaluation run, whoever
started it, through ``configure_process``; ``coldbrew.load_dataset``; the server) call
``ensure_threads``, which keeps a choice already made. Without it torch keeps one thread per
core: one epoch of ``make demo`` trained at 2,193 samples/s with torch's two threads at load
5, and at 51,355 with the one thread chosen here (255 s against 19 s; BENCHMARKS.md, "make
demo on a busy machine"). Inter-op threads are left to torch: eager training does not use
them (only TorchScript's ``fork`` does) and they wait asleep, so they take no busy core.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import dataclass

from coldbrew.errors import ColdbrewError

THREADS_VARIABLE = "COLDBREW_THREADS"


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    reason: str


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


SAMPLE_SECONDS = 0.2  # how long the busy cores are measured
SAMPLE_KEPT = 10.0  # ... and for how long one measurement answers again
_sampled: tuple[float, float] | None = None  # (when, busy cores)


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        return None


def cpu_times(stat: str) -> tuple[int, int] | None:
    """``(busy, total)`` jiffies of all CPUs from ``/proc/stat``'s text (idle and iowait are
    not busy); None when its ``cpu`` line is missing or malformed."""
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            try:
                values = [int(value) for value in fields[1:9]]  # user .. steal
            except ValueError:
                return None
            if len(values) < 5:
                return None
            return sum(values) - values[3] - values[4], sum(values)
    return None


def busy_between(first: tuple[int, int], second: tuple[int, int], cpus: int) -> float | None:
    """The CPUs busy on average between two ``cpu_times`` readings."""
    total = second[1] - first[1]
    if total <= 0:
        return None
    return cpus * max(0, second[0] - first[0]) / total


def busy_cores() -> float | None:
    """The cores busy now (``SAMPLE_SECONDS`` of ``/proc/stat``; this process sleeps meanwhile),
    kept ``SAMPLE_KEPT`` seconds; None where ``/proc/stat`` cannot be read."""
    global _sampled
    now = time.monotonic()
    if _sampled is not None and now - _sampled[0] < SAMPLE_KEPT:
        return _sampled[1]
    try:
        first = cpu_times(_read_stat())
        time.sleep(SAMPLE_SECONDS)
        second = cpu_times(_read_stat())
    except OSError:
        return None
    if first is None or second is None:
        return None
    busy = busy_between(first, second, os.cpu_count() or 1)
    if busy is not None:
        _sampled = (time.monotonic(), busy)
    return busy


def _read_stat() -> str:
    with open("/proc/stat") as stat:
        return stat.read()


def _count(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ColdbrewError(f"{name} must be a positive number of threads or auto, not {text!r}")
    return value


def choose_threads(
    cores: int,
    load: float | None,
    setting: str | None = None,
    omp: str | None = None,
    *,
    measure: str = "1-minute load",
) -> ThreadChoice:
    """The thread count for ``cores`` usable cores at ``load`` (cores busy; ``measure`` names
    how it was measured); ``setting`` is ``COLDBREW_THREADS``'s value, ``omp``
    ``OMP_NUM_THREADS``'s (None: unset)."""
    setting = (setting or "auto").strip()
    if setting != "auto":
        return ThreadChoice(_count(THREADS_VARIABLE, setting), f"{THREADS_VARIABLE}={setting}")
    if omp is not None and omp.strip():
        return ThreadChoice(_count("OMP_NUM_THREADS", omp.strip()), f"OMP_NUM_THREADS={omp}")
    if load is None:
        return ThreadChoice(cores, f"load unknown: all {cores} usable cores")
    free = min(cores, max(1, math.floor(cores - load + 0.5)))  # half a core rounds up
    if free == cores:
        reason = f"{measure} {load:.1f} on {cores} cores: all {cores} free"
    elif cores - load < 1:
        reason = (
            f"{measure} {load:.1f} on {cores} cores: none free, so 1 thread (more would "
            f"wait on busy cores; set {THREADS_VARIABLE}=N to override)"
        )
    else:
        reason = f"{measure} {load:.1f} on {cores} cores: about {free} free"
    return ThreadChoice(free, reason)


def _variables() -> tuple[str | None, str | None]:
    """``COLDBREW_THREADS`` and ``OMP_NUM_THREADS`` as set (None: unset)."""
    return os.environ.get(THREADS_VARIABLE), os.environ.get("OMP_NUM_THREADS")


def _set_by_variable(setting: str | None, omp: str | None) -> bool:
    return (setting or "auto").strip() != "auto" or bool((omp or "").strip())


def current_choice() -> ThreadChoice:
    """``choose_threads`` for this machine and environment now: a variable's count when one
    is set (nothing sampled then), else ``free_cores()``."""
    setting, omp = _variables()
    if _set_by_variable(setting, omp):
        return choose_threads(usable_cores(), None, setting, omp)
    return free_cores()


def free_cores() -> ThreadChoice:
    """The load rule alone (no variable read): how many cores are free for work now (the
    cores busy now, else the 1-minute load average)."""
    busy = busy_cores()
    if busy is not None:
        return choose_threads(usable_cores(), busy, measure="busy cores")
    return choose_threads(usable_cores(), load_average())


def threads_per_process(processes: int) -> ThreadChoice:
    """Torch threads for each of ``processes`` processes that work at once: an explicit
    ``COLDBREW_THREADS`` or ``OMP_NUM_THREADS`` as set, else the usable cores shared out."""
    setting, omp = _variables()
    if _set_by_variable(setting, omp):
        return choose_threads(usable_cores(), None, setting, omp)
    cores = usable_cores()
    share = max(1, cores // processes)
    return ThreadChoice(share, f"{cores} usable cores shared by {processes} processes")


_applied: list[ThreadChoice | None] = [None]  # the choice in force in this process, if any


def apply_threads() -> ThreadChoice:
    """``torch.set_num_threads`` with ``current_choice()``; returns the choice (every entry
    point's one way to choose threads)."""
    import torch

    choice = current_choice()
    if torch.get_num_threads() != choice.threads:
        torch.set_num_threads(choice.threads)
    _applied[0] = choice
    return choice


def ensure_threads() -> ThreadChoice:
    """The choice in force, for library entry points (a run started from Python, the server):
    one an entry point of this process already made stands (the CLI, the demo, a worker; a
    second sample could count this process's own threads as busy cores). Else
    ``current_choice()``, except that a lower count set before (``torch.set_num_threads`` by
    the caller) stands: this only ever lowers torch's count."""
    if _applied[0] is not None:
        return _applied[0]
    import torch

    choice, current = current_choice(), torch.get_num_threads()
    if current < choice.threads:
        choice = ThreadChoice(current, f"{current} set before ({choice.reason})")
    elif current != choice.threads:
        torch.set_num_threads(choice.threads)
    _applied[0] = choice
    return choice


@contextlib.contextmanager
def chosen_threads():
    """``apply_threads`` for the ``with`` block; torch's thread count is restored after it
    (a command run inside a longer process, such as a test, leaves it as it was)."""
    import torch

    before, applied = torch.get_num_threads(), _applied[0]
    try:
        yield apply_threads()
    finally:
        _applied[0] = applied
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
