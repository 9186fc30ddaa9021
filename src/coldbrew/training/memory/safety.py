"""Out-of-memory recovery for a training step, and the fault injection that tests it.

When a step runs out of device memory, the trainer frees what the failed attempt held, halves
the micro-batch (doubling the micro-steps, so the effective batch and the update are the same),
restores the step's RNG state and redoes the step. ``COLDBREW_INJECT_OOM=STEP[,STEP...]`` makes
the optimizer step with that global index (0-based) raise ``torch.OutOfMemoryError`` once, at
the start of its first forward pass, so the recovery can be tested on a CPU.
"""

from __future__ import annotations

import gc
import os

import torch

from coldbrew.errors import ColdbrewError

INJECT_VARIABLE = "COLDBREW_INJECT_OOM"


class OutOfMemory(ColdbrewError):
    """No smaller micro-batch is possible: the message carries the memory figures."""


def injected_steps() -> set[int]:
    text = os.environ.get(INJECT_VARIABLE, "").strip()
    if not text:
        return set()
    try:
        steps = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        steps = {-1}
    if not steps or min(steps) < 0:
        raise ColdbrewError(
            f"{INJECT_VARIABLE} must be optimizer step numbers (0 or more) like 3,10, not {text!r}"
        )
    return steps


class FaultInjector:
    """Raises ``torch.OutOfMemoryError`` once at each step listed in ``COLDBREW_INJECT_OOM``."""

    def __init__(self):
        self.pending = injected_steps()

    def unreached(self) -> str | None:
        """After training: the listed steps the run never took, said in one line."""
        if not self.pending:
            return None
        steps = ",".join(map(str, sorted(self.pending)))
        return f"{INJECT_VARIABLE} named optimizer step(s) {steps}, which this run never reached"

    def check(self, step: int) -> None:
        if step in self.pending:
            self.pending.discard(step)
            raise torch.OutOfMemoryError(f"injected out-of-memory at optimizer step {step}")


def free_after_out_of_memory(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Drop the failed attempt's gradients and cached blocks."""
    optimizer.zero_grad(set_to_none=True)
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def memory_figures(device: torch.device) -> str:
    """Allocated/reserved/total on a GPU, resident and available memory on the CPU."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        allocated, reserved = (
            torch.cuda.memory_allocated(device),
            torch.cuda.memory_reserved(device),
        )
        return (
            f"{allocated / 2**30:.2f} GiB allocated, {reserved / 2**30:.2f} GiB reserved, "
            f"{free / 2**30:.2f} of {total / 2**30:.2f} GiB free"
        )
    from coldbrew.system.memory import host_memory, rss_bytes

    memory, rss = host_memory(), rss_bytes()
    parts = [f"process resident {rss / 2**30:.2f} GiB" if rss else "process resident unknown"]
    if memory["available_bytes"]:
        parts.append(
            f"{memory['available_bytes'] / 2**30:.2f} of {memory['total_bytes'] / 2**30:.2f} GiB available"
        )
    return ", ".join(parts)
