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
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
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
