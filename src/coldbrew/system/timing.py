"""Honest timing: warm up, synchronize around the timed region, report peak memory."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable

import torch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_bytes(device: torch.device) -> int:
    """Peak device memory on CUDA; peak resident set size of this process on CPU."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return peak_rss_bytes()


def peak_rss_bytes(children: bool = False) -> int:
    """Peak resident set size of this process, or (``children``) of the largest of its ended
    child processes (a board's ``--jobs`` workers)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    peak = resource.getrusage(who).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def time_repeated(
    fn: Callable[[], object],
    device: torch.device,
    *,
    warmup: int,
    seconds: float,
    min_calls: int = 3,
) -> tuple[int, float]:
    """Run ``fn`` ``warmup`` times untimed, then until ``seconds`` pass; (calls, elapsed)."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    calls, started = 0, time.perf_counter()
    while calls < min_calls or time.perf_counter() - started < seconds:
        fn()
        calls += 1
        if calls % 8 == 0:
            synchronize(device)
    synchronize(device)
    return calls, time.perf_counter() - started


def time_in_turn(
    functions: dict[str, Callable[[], object]],
    device: torch.device,
    *,
    warmup: int,
    seconds: float,
    min_rounds: int = 3,
) -> dict[str, list[float]]:
    """Seconds of every call of each function, the functions called in turn.

    Each runs ``warmup`` times untimed; then one round calls every function once, the order
    rotating from round to round, so the machine's load hits them alike. Rounds go on until
    ``seconds`` per function have passed (at least ``min_rounds``).
    """
    for function in functions.values():
        for _ in range(warmup):
            function()
    names = list(functions)
    times: dict[str, list[float]] = {name: [] for name in names}
    budget, rounds, started = seconds * len(names), 0, time.perf_counter()
    while rounds < min_rounds or time.perf_counter() - started < budget:
        shift = rounds % len(names)
        for name in names[shift:] + names[:shift]:
            synchronize(device)
            call_started = time.perf_counter()
            functions[name]()
            synchronize(device)
            times[name].append(time.perf_counter() - call_started)
        rounds += 1
    return times
