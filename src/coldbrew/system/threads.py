"""How many CPU threads torch uses: as many as the machine has free, never more than its cores.

torch starts one thread per core. On a machine whose cores are already busy that
oversubscribes them: every parallel op waits for its slowest thread, which waits for a core
(a zoo epoch on ml-100k took 27.3 s with torch's two threads at load 3, 1.3 s with one).
``choose_threads`` picks, in order:

1. ``COLDBREW_THREADS=N`` (or ``auto``, the default, for the rules below);
2. ``OMP_NUM_THREADS=N``, which torch reads itself;
3. the free cores: the usable cores less the 1-minute load average, rounded, at least 1
   (2 cores at load 0.3: 2 threads; at load 0.6: 1; at load 2 or more: 1).

The load average is the kernel's (``os.getloadavg``); it trails the machine by about a minute,
so a command started just after another heavy one ended may take fewer threads than it
could. ``coldbrew doctor`` shows the choice and its reason; every compute command of the CLI
applies it before its work (``apply_threads``). Library users who want it call that too.
"""

from __future__ import annotations

import contextlib
import math
import os
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


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform
        return None


def _count(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ColdbrewError(f"{name} must be a positive number of threads or auto, not {text!r}")
    return value


def choose_threads(
    cores: int, load: float | None, setting: str | None = None, omp: str | None = None
) -> ThreadChoice:
    """The thread count for ``cores`` usable cores at 1-minute ``load``; ``setting`` is
    ``COLDBREW_THREADS``'s value, ``omp`` ``OMP_NUM_THREADS``'s (None: unset)."""
    setting = (setting or "auto").strip()
    if setting != "auto":
        return ThreadChoice(_count(THREADS_VARIABLE, setting), f"{THREADS_VARIABLE}={setting}")
    if omp is not None and omp.strip():
        return ThreadChoice(_count("OMP_NUM_THREADS", omp.strip()), f"OMP_NUM_THREADS={omp}")
    if load is None:
        return ThreadChoice(cores, f"load average unknown: all {cores} usable cores")
    free = min(cores, max(1, math.floor(cores - load + 0.5)))  # half a core rounds up
    if free == cores:
        reason = f"1-minute load {load:.1f} on {cores} cores: all {cores} free"
    elif cores - load < 1:
        reason = (
            f"1-minute load {load:.1f} on {cores} cores: none free, so 1 thread (more would "
            f"wait on busy cores; set {THREADS_VARIABLE}=N to override)"
        )
    else:
        reason = f"1-minute load {load:.1f} on {cores} cores: about {free} free"
    return ThreadChoice(free, reason)


def current_choice() -> ThreadChoice:
    """``choose_threads`` for this machine and environment now."""
    return choose_threads(
        usable_cores(),
        load_average(),
        os.environ.get(THREADS_VARIABLE),
        os.environ.get("OMP_NUM_THREADS"),
    )


def free_cores() -> ThreadChoice:
    """The load rule alone (no variable read): how many cores are free for work now."""
    return choose_threads(usable_cores(), load_average())


def threads_per_process(processes: int) -> ThreadChoice:
    """Torch threads for each of ``processes`` processes that work at once: an explicit
    ``COLDBREW_THREADS`` or ``OMP_NUM_THREADS`` as set, else the usable cores shared out."""
    setting, omp = os.environ.get(THREADS_VARIABLE), os.environ.get("OMP_NUM_THREADS")
    if (setting or "auto").strip() != "auto" or (omp or "").strip():
        return choose_threads(usable_cores(), None, setting, omp)
    cores = usable_cores()
    share = max(1, cores // processes)
    return ThreadChoice(share, f"{cores} usable cores shared by {processes} processes")


def apply_threads() -> ThreadChoice:
    """``torch.set_num_threads`` with ``current_choice()``; returns the choice."""
    import torch

    choice = current_choice()
    if torch.get_num_threads() != choice.threads:
        torch.set_num_threads(choice.threads)
    return choice


@contextlib.contextmanager
def chosen_threads():
    """``apply_threads`` for the ``with`` block; torch's thread count is restored after it
    (a command run inside a longer process, such as a test, leaves it as it was)."""
    import torch

    before = torch.get_num_threads()
    try:
        yield apply_threads()
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
