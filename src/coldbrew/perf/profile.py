"""``coldbrew profile``: where a training step's time goes, and what to change.

Three passes over the user's configuration, after a warm-up:

1. *phases*: ``steps`` steps under ``torch.profiler``, each part of the step (negatives, forward,
   backward, optimizer) in a ``record_function`` region with a device sync at its edges, so the
   wall time of every part is its own (the syncs cost time, which is why pass 2 exists);
2. *natural*: ``steps`` plain ``Trainer.train_step`` calls timed end to end: achieved samples/s;
   on a GPU also the host synchronisations per step (``set_sync_debug_mode("warn")``) and the
   GPU's utilisation and memory through NVML;
3. *scaling*: a few steps at twice the batch: if samples/s nearly doubles, the step is
   dominated by fixed per-step costs (kernel launches, Python), not by the work.

One validation pass is timed separately. :func:`findings` turns the numbers into a verdict.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings

import torch

from coldbrew.config import TrainConfig
from coldbrew.perf.bench import random_samples
from coldbrew.system.timing import peak_memory_bytes, synchronize

PHASES = ("negatives", "forward", "backward", "optimizer")


class PhaseClock:
    """Accumulates the synced wall time of named regions, each also a profiler region."""

    def __init__(self, device: torch.device):
        self.device = device
        self.seconds = dict.fromkeys(PHASES, 0.0)

    @contextlib.contextmanager
    def __call__(self, name: str):
        synchronize(self.device)
        started = time.perf_counter()
        with torch.profiler.record_function(f"coldbrew/{name}"):
            yield
            synchronize(self.device)
        self.seconds[name] += time.perf_counter() - started


def phased_step(trainer, index: torch.Tensor, clock: PhaseClock) -> None:
    """``Trainer.train_step`` part by part (same calls, same order), each part timed; one
    micro-batch per step (``grad_accum`` is not profiled)."""
    with clock("optimizer"):
        trainer.optimizer.zero_grad(set_to_none=True)
    with clock("negatives"):
        batch = trainer.make_batch(index)
    with clock("forward"):
        output = trainer.forward(batch)
    with clock("backward"):
        trainer.backward(output.total)
    with clock("optimizer"):
        trainer.optimizer_step()


def natural_steps(trainer, draw, steps: int, count_syncs: bool) -> tuple[float, int | None]:
    """(seconds, host syncs) of ``steps`` plain train steps; syncs counted on CUDA only."""
    device = trainer.runtime.device
    batches = [draw() for _ in range(steps)]
    synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        previous = torch.cuda.get_sync_debug_mode() if count_syncs else None
        if count_syncs:
            torch.cuda.set_sync_debug_mode("warn")
        started = time.perf_counter()
        try:
            for index in batches:
                trainer.train_step(index)
        finally:
            if count_syncs:
                torch.cuda.set_sync_debug_mode(previous)
    synchronize(device)
    elapsed = time.perf_counter() - started
    syncs = sum("synchroniz" in str(w.message) for w in caught) if count_syncs else None
    return elapsed, syncs


def top_operators(prof, device: torch.device, limit: int = 5) -> list[dict]:
    averages = prof.key_averages()
    key = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    rows = sorted(
        (e for e in averages if not e.key.startswith("coldbrew/")),
        key=lambda e: getattr(e, key, 0),
        reverse=True,
    )
    return [
        {"name": e.key, "self_ms": getattr(e, key, 0) / 1e3, "calls": e.count} for e in rows[:limit]
    ]


def device_busy_seconds(prof) -> float:
    """Seconds the GPU spent in kernels during the profiled region."""
    return sum(getattr(e, "self_device_time_total", 0) for e in prof.key_averages()) / 1e6


def scaling_probe(trainer, batch: int, steps: int, seed: int) -> dict | None:
    """samples/s at twice the batch, or None when it does not fit."""
    draw = random_samples(trainer, 2 * batch, seed + 1)
    try:
        natural_steps(trainer, draw, 2, count_syncs=False)  # warm-up (a new shape recompiles)
        seconds, _ = natural_steps(trainer, draw, steps, count_syncs=False)
    except torch.cuda.OutOfMemoryError:
        trainer.optimizer.zero_grad(set_to_none=True)
        torch.cuda.empty_cache()
        return None
    return {"batch_size": 2 * batch, "samples_per_second": steps * 2 * batch / seconds}


def time_evaluation(trainer) -> float | None:
    if "val" not in trainer.task.splits():
        return None
    device = trainer.runtime.device
    synchronize(device)
    started = time.perf_counter()
    trainer.task.evaluate(trainer.model, "val")
    synchronize(device)
    return time.perf_counter() - started


def phase_pass(trainer, draw, steps: int, trace: str | None) -> tuple[dict[str, float], object]:
    """Pass 1: ({phase: seconds}, profiler) over ``steps`` part-by-part steps."""
    device = trainer.runtime.device
    clock = PhaseClock(device)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(steps):
            phased_step(trainer, draw(), clock)
    if trace:
        prof.export_chrome_trace(str(trace))
    return clock.seconds, prof


def natural_pass(trainer, draw, steps: int) -> tuple[float, int | None, dict | None]:
    """Pass 2: (seconds, host syncs, NVML summary) of ``steps`` plain steps."""
    from coldbrew.system.nvml import GpuSampler

    device = trainer.runtime.device
    if device.type != "cuda":
        return (*natural_steps(trainer, draw, steps, count_syncs=False), None)
    index = torch.cuda.current_device() if device.index is None else device.index
    with GpuSampler(index) as sampler:
        seconds, syncs = natural_steps(trainer, draw, steps, count_syncs=True)
    return seconds, syncs, sampler.summary()


def profile_training(
    config: TrainConfig, dataset, steps: int = 20, trace: str | None = None, warmup: int = 3
) -> dict:
    """Profile ``steps`` training steps of ``config`` on ``dataset``; the report as one dict."""
    from coldbrew.perf.verdict import findings
    from coldbrew.system.runtime import configure_process, device_name
    from coldbrew.training.run import build_trainer

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # before our work adds to it
    trainer = build_trainer(config, dataset)
    device, batch = trainer.runtime.device, config.batch_size
    configure_process(device, deterministic=config.deterministic)
    draw = random_samples(trainer, batch, config.seed)
    started = time.perf_counter()
    natural_steps(trainer, draw, warmup, count_syncs=False)
    warmup_seconds = time.perf_counter() - started
    phases, prof = phase_pass(trainer, draw, steps, trace)
    phased_total = sum(phases.values())
    seconds, syncs, gpu = natural_pass(trainer, draw, steps)
    samples_per_second = steps * batch / seconds
    eval_seconds = time_evaluation(trainer)
    epoch_seconds = trainer.task.num_samples() / samples_per_second
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    report = {
        "device": device_name(device),
        "precision": trainer.runtime.precision,
        "compile": config.compile,
        "model": config.model,
        "batch_size": batch,
        "num_neg": getattr(config.model_options, "num_neg", None),
        "steps": steps,
        "warmup_seconds": warmup_seconds,
        "samples_per_second": samples_per_second,
        "step_seconds": seconds / steps,
        "phase_seconds": {name: value / steps for name, value in phases.items()},
        "fractions": {name: value / phased_total for name, value in phases.items()},
        "device_busy_fraction": device_busy_seconds(prof) / phased_total
        if device.type == "cuda"
        else None,
        "syncs_per_step": syncs / steps if syncs is not None else None,
        "gpu": gpu,
        "peak_memory_bytes": peak_memory_bytes(device),
        "batch_scaling": scaling_probe(trainer, batch, max(2, min(steps, 5)), config.seed),
        "eval_seconds": eval_seconds,
        "epoch_seconds_estimate": epoch_seconds,
        "eval_share": None
        if eval_seconds is None
        else eval_seconds / (eval_seconds + epoch_seconds),
        "top_operators": top_operators(prof, device),
        "load_average": load,
        "usable_cores": cores,
        "torch_threads": torch.get_num_threads(),
        "trace": str(trace) if trace else None,
    }
    report["findings"] = findings(report, config)
    report["verdict"] = report["findings"][0]
    return report
