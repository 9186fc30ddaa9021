"""``coldbrew tune``: the fastest batch size (and ``--compile`` setting) that fits, as a YAML preset.

Real training steps at growing batch sizes, within a time budget:

* on a GPU, grow x2 from the given batch until a step runs out of memory (caught, cache
  emptied), then bisect between the last fit and the first failure: the largest batch that fits;
* on the CPU, where running out of memory kills the process instead of raising, each step's
  peak resident memory above the baseline gives a measured memory per sample; growth stops
  before the next batch would pass 80% of the available RAM, and as soon as doubling the
  batch gains less than 5% samples/s.

Neither grows past 1/8 of the training set (at least 8 steps per epoch).
The chosen setting is the smallest batch within 5% of the best samples/s (a smaller batch changes
the optimisation less), then ``--compile`` is tried there when it works on this machine.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from coldbrew.perf.bench import random_samples
from coldbrew.system.memory import host_memory, peak_rss_bytes, reset_peak_rss, rss_bytes
from coldbrew.system.timing import time_repeated
from coldbrew.training.memory.estimate import MIN_STEPS_PER_EPOCH

GAIN = 0.05  # a doubling that gains less than this is not worth its optimisation change
RAM_FRACTION = 0.8  # of the RAM available at the start that the CPU search may plan to use


@dataclass
class Candidate:
    batch_size: int
    compile: bool
    fits: bool = True
    samples_per_second: float = 0.0
    step_seconds: float = 0.0
    peak_memory_bytes: int | None = None
    bytes_per_sample: float | None = None  # CPU: measured peak RSS above the baseline, per sample
    note: str = ""


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return self.end - time.perf_counter()


# ---------------------------------------------------------------------- one measurement
def measure(trainer, batch: int, seconds: float, seed: int) -> Candidate:
    """samples/s and peak memory of real steps at ``batch``; an out-of-memory error is a result."""
    device = trainer.runtime.device
    candidate = Candidate(batch, trainer.config.compile)
    draw = random_samples(trainer, batch, seed)
    baseline = rss_bytes() if device.type == "cpu" and reset_peak_rss() else None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        calls, elapsed = time_repeated(
            lambda: trainer.train_step(draw()), device, warmup=2, seconds=seconds
        )
    except torch.cuda.OutOfMemoryError:
        candidate.fits, candidate.note = False, "out of memory"
    if not candidate.fits:  # outside the except block, so its traceback frees the step's tensors
        trainer.optimizer.zero_grad(set_to_none=True)
        gc.collect()
        torch.cuda.empty_cache()
        return candidate
    candidate.step_seconds = elapsed / calls
    candidate.samples_per_second = batch / candidate.step_seconds
    if device.type == "cuda":
        candidate.peak_memory_bytes = int(torch.cuda.max_memory_allocated(device))
    else:
        candidate.peak_memory_bytes = peak_rss_bytes()
        if baseline is not None:
            candidate.bytes_per_sample = max(0, candidate.peak_memory_bytes - baseline) / batch
    return candidate


# ---------------------------------------------------------------------- the searches
def grow(
    trainer, start: int, deadline: Deadline, seconds: float, seed: int, following: Callable
) -> list[Candidate]:
    """Measure ``start``, then each batch ``following(tried, batch)`` names after the last
    measured ``batch``, until it names None or the budget cannot time another."""
    tried: list[Candidate] = []
    batch = start
    while batch is not None and deadline.left() > seconds:
        tried.append(measure(trainer, batch, seconds, seed))
        batch = following(tried, batch)
    return tried


def search_gpu(
    trainer, start: int, cap: int, deadline: Deadline, seconds: float, seed: int
) -> list[Candidate]:
    """Grow x2 until out of memory (or the cap), then bisect: the largest batch that fits."""

    def following(tried: list[Candidate], batch: int) -> int | None:
        if not tried[-1].fits:  # even the given batch fails: go down; else stop growing
            return batch // 2 if batch > 1 and not any(c.fits for c in tried) else None
        return None if batch >= cap else min(2 * batch, cap)

    tried = grow(trainer, start, deadline, seconds, seed, following)
    fits = [c.batch_size for c in tried if c.fits]
    fails = [c.batch_size for c in tried if not c.fits and c.batch_size > max(fits, default=0)]
    if not fits or not fails:
        return tried
    low, high = max(fits), min(fails)
    while high - low > max(64, low // 16) and deadline.left() > seconds:
        middle = (low + high) // 2
        tried.append(measure(trainer, middle, seconds, seed))
        low, high = (middle, high) if tried[-1].fits else (low, middle)
    return tried


def search_cpu(
    trainer, start: int, cap: int, deadline: Deadline, seconds: float, seed: int
) -> list[Candidate]:
    """Grow x2 while samples/s gains at least 5% and the next batch's measured memory fits in RAM."""

    def following(tried: list[Candidate], batch: int) -> int | None:
        if (
            len(tried) > 1
            and tried[-1].samples_per_second < (1 + GAIN) * tried[-2].samples_per_second
        ):
            tried[-1].note = f"gain under {GAIN:.0%}: stop growing"
            return None
        following = min(2 * batch, cap)
        if following == batch:
            return None
        per_sample = max((c.bytes_per_sample or 0.0) for c in tried)
        available = host_memory()["available_bytes"]
        if available is not None and per_sample * following > RAM_FRACTION * available:
            tried[-1].note = (
                f"batch {following} would need ~{per_sample * following / 2**30:.1f} GiB "
                f"of {available / 2**30:.1f} GiB available: stop growing"
            )
            return None
        return following

    return grow(trainer, start, deadline, seconds, seed, following)


def choose(candidates: list[Candidate]) -> Candidate | None:
    """The smallest batch within 5% of the best samples/s among those that fit."""
    fitting = [c for c in candidates if c.fits and c.samples_per_second > 0]
    if not fitting:
        return None
    best = max(c.samples_per_second for c in fitting)
    near = [c for c in fitting if c.samples_per_second >= (1 - GAIN) * best]
    return min(near, key=lambda c: (c.batch_size, -c.samples_per_second))


def try_compile(
    config, dataset, batch: int, deadline: Deadline, seconds: float
) -> tuple[Candidate | None, str]:
    """Measure ``--compile`` at ``batch`` when it works here and the budget allows; (result, note)."""
    from coldbrew.config import make_config
    from coldbrew.perf.doctor import compile_check
    from coldbrew.system.runtime import resolve_device
    from coldbrew.training.run import build_trainer

    if deadline.left() < 4 * seconds + 5:
        return None, "compile not tried: budget spent"
    check = compile_check(resolve_device(config.device), timeout=min(45.0, deadline.left() / 3))
    if not check["works"]:
        return None, f"compile not tried: it fails here ({check['error']})"
    # The model compiles slower than the probe's tiny function; it cannot be stopped midway.
    if deadline.left() < 3 * check["compile_seconds"] + 2 * seconds:
        return (
            None,
            f"compile not tried: it works here, but {deadline.left():.0f}s of budget is too short to compile the model",
        )
    try:
        trainer = build_trainer(
            make_config(config.to_dict(), {"compile": True, "quiet": True}), dataset
        )
        return measure(trainer, batch, seconds, config.seed), ""
    except Exception as error:  # a compile failure is a finding, not a crash
        return None, f"compile failed on the model: {type(error).__name__}: {str(error)[:200]}"


def lr_advice(config, batch: int) -> tuple[float, str]:
    """(square-root-scaled lr, the warning to print) for moving from ``config.batch_size`` to ``batch``."""
    scaled = config.lr * math.sqrt(batch / config.batch_size)
    return scaled, (
        f"warning: batch {config.batch_size} -> {batch} changes the optimisation "
        f"({batch / config.batch_size:.1f}x fewer steps per epoch). The square-root rule suggests "
        f"--lr {scaled:.4g} (= {config.lr:g} x sqrt({batch}/{config.batch_size})); confirm cold "
        "recall@20 with the accuracy check in BENCHMARKS.md before relying on it."
    )


def tune(
    config,
    dataset,
    out,
    budget: float = 120.0,
    search_compile: bool = True,
    scale_lr: bool = False,
    started: float | None = None,
) -> dict:
    """Search, write ``config`` with the best settings to ``out`` (a preset); the report."""
    from coldbrew.config import config_yaml, make_config
    from coldbrew.system.runtime import configure_process, device_name
    from coldbrew.training.checkpoint import atomic_write
    from coldbrew.training.run import build_trainer

    deadline = Deadline(budget - (time.perf_counter() - started if started else 0.0))
    seconds = min(3.0, max(0.3, budget / 20))  # timed region per candidate
    trainer = build_trainer(
        make_config(config.to_dict(), {"compile": False, "quiet": True}), dataset
    )
    device = trainer.runtime.device
    configure_process(device, deterministic=config.deterministic)
    cap = max(config.batch_size, trainer.task.num_samples() // MIN_STEPS_PER_EPOCH)
    search = search_gpu if device.type == "cuda" else search_cpu
    candidates = search(trainer, config.batch_size, cap, deadline, seconds, config.seed)
    del trainer
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    best = choose(candidates)
    notes = [] if best else ["no batch size could be measured within the budget; nothing written"]
    if best and search_compile and not config.compile:
        compiled, note = try_compile(config, dataset, best.batch_size, deadline, seconds)
        candidates += [compiled] if compiled else []
        notes += [note] if note else []
        best = choose(candidates)
    report = {
        "device": device_name(device),
        "budget_seconds": budget,
        "given_batch_size": config.batch_size,
        "candidates": [asdict(c) for c in candidates],
        "notes": notes,
        "best": asdict(best) if best else None,
        "largest_batch_size_fitting": max(
            (c.batch_size for c in candidates if c.fits), default=None
        ),
        "out_of_memory_at": min((c.batch_size for c in candidates if not c.fits), default=None),
        "out": None,
        "lr_warning": None,
    }
    if best is None:
        return report
    settings = {"batch_size": best.batch_size, "compile": best.compile}
    if best.batch_size != config.batch_size:
        scaled, report["lr_warning"] = lr_advice(config, best.batch_size)
        if scale_lr:
            settings["lr"] = float(f"{scaled:.4g}")
    text = config_yaml(make_config(config.to_dict(), settings)).encode()
    atomic_write(Path(out), lambda handle: handle.write(text))
    report.update(out=str(out), settings=settings)
    return report
