"""Device, precision and determinism choices, made once per run."""

from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass

import torch

from coldbrew.errors import ColdbrewError


@dataclass
class Runtime:
    device: torch.device
    autocast_dtype: torch.dtype | None  # None: full fp32
    scaler: torch.amp.GradScaler | None

    def autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    @property
    def precision(self) -> str:
        names = {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
        return names[self.autocast_dtype]


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ColdbrewError(f"device {name!r} requested but CUDA is not available")
    return device


def make_runtime(device_name: str, precision: str) -> Runtime:
    """bf16 autocast on GPUs that support it, fp16 + GradScaler on older ones, fp32 on CPU.

    Changes no process-wide setting; ``configure_process`` is where a run does that.
    """
    device = resolve_device(device_name)
    if precision == "auto":
        if device.type != "cuda":
            precision = "fp32"
        else:
            precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if precision != "fp32" and device.type != "cuda":
        raise ColdbrewError(f"precision {precision} needs a CUDA device; use fp32 on {device.type}")
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
    return Runtime(device=device, autocast_dtype=dtype, scaler=scaler)


def configure_process(device: torch.device, *, deterministic: bool = False) -> None:
    """The process-wide settings a training or evaluation run makes, in one place.

    * torch's thread count: the free cores (``coldbrew.system.threads.ensure_threads``; a
      choice the entry point already made stands);
    * CPU: glibc keeps freed blocks mapped (``keep_freed_memory_for_reuse``);
    * CUDA: TF32 matmuls and convolutions (fp32 inputs, 10-bit mantissa products);
    * ``deterministic``: ``torch.use_deterministic_algorithms(True)`` and the cuBLAS workspace
      setting it needs.

    ``coldbrew train``/``evaluate`` and ``coldbrew.training.run`` call it; library users who
    build a ``Trainer`` themselves choose whether to.
    """
    from coldbrew.system.threads import ensure_threads

    ensure_threads()
    if device.type == "cpu":
        keep_freed_memory_for_reuse()
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)


ALLOCATOR_THRESHOLD = 1 << 30  # bytes


def keeps_freed_memory() -> bool:
    """``COLDBREW_KEEP_FREED_MEMORY``: 1 (the default) or 0; anything else is refused."""
    setting = os.environ.get("COLDBREW_KEEP_FREED_MEMORY", "1").strip()
    if setting not in ("0", "1"):
        raise ColdbrewError(f"COLDBREW_KEEP_FREED_MEMORY must be 0 or 1, not {setting!r}")
    return setting == "1"


def keep_freed_memory_for_reuse() -> bool:
    """Ask glibc's malloc to keep freed blocks up to 1 GiB for reuse instead of unmapping them.

    A CPU training step allocates and frees the same large tensors every step. By default glibc
    serves blocks over 32 MiB (less before its threshold adapts) with a fresh ``mmap`` and
    unmaps them when freed, so the next step page-faults every 4 KiB it writes again. Raising
    the mmap and trim thresholds lets freed blocks be reused; glibc still maps some blocks
    afresh depending on the heap's layout, so this is a measured speed-up, not a guarantee
    (``benchmarks/speed/bench_kernels.py``, BENCHMARKS.md): gathered products 177 → 106 ms, a fused
    CLCRec step 170 → 155 ms, a 1M-item test evaluation 1,313 → 880 s. Resident memory stays
    near its peak instead of shrinking between steps. Returns whether the setting took (False
    on non-glibc systems or with ``COLDBREW_KEEP_FREED_MEMORY=0``).
    """
    if not keeps_freed_memory():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, ALLOCATOR_THRESHOLD)) and bool(
        mallopt(m_trim_threshold, ALLOCATOR_THRESHOLD)
    )


def rng_state() -> dict:
    """The torch RNG states (CPU and every CUDA device), loadable with ``weights_only=True``."""
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
