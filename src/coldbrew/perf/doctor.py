"""``coldbrew doctor``: what this machine is and how fast its parts run, in well under a minute.

Versions (Python, PyTorch, CUDA, cuDNN), each GPU (name, memory, compute capability, bf16 and
TF32 support), whether ``torch.compile`` works here (a tiny function compiled and run in a
child process under a timeout), host-to-device copy bandwidth pinned vs pageable, matmul
throughput, negative-sampling throughput on a synthetic catalogue, CPU cores, threads and memory.
Every measurement reports failure as text instead of raising.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time

import numpy as np
import torch

from coldbrew.system.memory import host_memory
from coldbrew.system.timing import synchronize, time_repeated

GB = 1e9
COMPILE_PROBE = """
import json, sys, time, torch
device = torch.device(sys.argv[1])
def probe(x):
    return torch.relu(x @ x.T + 1.0).sum(dim=1)
started = time.perf_counter()
x = torch.randn(16, 16, device=device)
compiled = torch.compile(probe)(x)
if device.type == "cuda":
    torch.cuda.synchronize()
ok = torch.allclose(compiled, probe(x), rtol=1e-4, atol=1e-4)
print(json.dumps({"seconds": time.perf_counter() - started, "matches_eager": bool(ok)}))
"""


def versions() -> dict:
    from coldbrew.system.nvml import driver_version

    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cudnn": cudnn,
        "driver": driver_version(),
        "platform": platform.platform(),
    }


def cpu_info() -> dict:
    from coldbrew.system.threads import current_choice, usable_cores

    choice = current_choice()
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "torch_threads": torch.get_num_threads(),
        "thread_choice": {"threads": choice.threads, "reason": choice.reason},
        "processor": platform.processor() or platform.machine(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        **{f"memory_{key}": value for key, value in host_memory().items()},
    }


def gpus() -> list[dict]:
    if not torch.cuda.is_available():
        return []
    found = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        capability = (props.major, props.minor)
        found.append(
            {
                "index": index,
                "name": props.name,
                "memory_bytes": int(props.total_memory),
                "compute_capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count,
                "bf16": capability >= (8, 0),  # native bf16 tensor cores from Ampere on
                "tf32": capability >= (8, 0),
            }
        )
    return found


def no_gpu_reason() -> str:
    if torch.version.cuda is None:
        return f"no GPU: this PyTorch ({torch.__version__}) is a CPU-only build"
    return "no GPU: CUDA is built in but no CUDA device is visible (driver, CUDA_VISIBLE_DEVICES?)"


def compile_check(device: torch.device, timeout: float = 45.0) -> dict:
    """Compile and run a tiny function in a child process; {works, seconds, error}."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", COMPILE_PROBE, str(device)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the child and its compile workers
        process.communicate()
        return {
            "works": False,
            "seconds": time.perf_counter() - started,
            "error": f"timed out after {timeout:g}s",
        }
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        return {
            "works": False,
            "seconds": seconds,
            "error": " | ".join(lines[-3:]) or f"exit {process.returncode}",
        }
    try:
        import json

        result = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {
            "works": False,
            "seconds": seconds,
            "error": f"unreadable probe output: {out[-200:]!r}",
        }
    error = None if result["matches_eager"] else "compiled result differs from eager"
    return {
        "works": error is None,
        "seconds": seconds,
        "compile_seconds": result["seconds"],
        "error": error,
    }


def copy_bandwidth(device: torch.device, seconds: float, megabytes: int = 256) -> dict:
    """Host-to-device GB/s from pinned and from pageable memory."""
    count = megabytes * (1 << 20) // 4
    result = {}
    for kind in ("pinned", "pageable"):
        source = torch.empty(count, dtype=torch.float32, pin_memory=kind == "pinned")
        calls, elapsed = time_repeated(
            lambda s=source: s.to(device, non_blocking=True), device, warmup=1, seconds=seconds
        )
        result[f"{kind}_gb_per_s"] = calls * source.numel() * 4 / elapsed / GB
    return result


def matmul_gflops(
    device: torch.device, dtype: torch.dtype, size: int, seconds: float, tf32: bool = False
) -> float:
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        a = torch.randn(size, size, device=device, dtype=dtype)
        b = torch.randn(size, size, device=device, dtype=dtype)
        calls, elapsed = time_repeated(lambda: a @ b, device, warmup=2, seconds=seconds)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return calls * 2 * size**3 / elapsed / 1e9


def sampler_throughput(
    device: torch.device, seconds: float, batch: int = 4096, num_neg: int = 128
) -> dict:
    """NegativeSampler on 20k users x 50k items (80% warm, 50 known items each)."""
    import scipy.sparse as sp

    from coldbrew.data.sampling import NegativeSampler

    rng = np.random.default_rng(0)
    users, items, known = 20_000, 50_000, 50
    rows = np.repeat(np.arange(users), known)
    exclude = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (rows, rng.integers(0, items, len(rows)))),
        shape=(users, items),
    )
    sampler = NegativeSampler(exclude, np.arange(int(items * 0.8)), device)
    batch_users = torch.from_numpy(rng.integers(0, users, batch)).to(device)
    calls, elapsed = time_repeated(
        lambda: sampler.sample(batch_users, num_neg), device, warmup=2, seconds=seconds
    )
    return {
        "batch": batch,
        "num_neg": num_neg,
        "rows_per_second": calls * batch / elapsed,
        "negatives_per_second": calls * batch * num_neg / elapsed,
    }


def measure(name: str, fn, notes: list[str]):
    """Run one measurement; on failure record its text and return None."""
    try:
        return fn()
    except Exception as error:  # a doctor reports, never crashes
        notes.append(f"{name} failed: {type(error).__name__}: {error}")
        return None


def run_doctor(
    seconds: float = 0.5, check_compile: bool = True, compile_timeout: float = 45.0
) -> dict:
    """Everything above as one dict; ``seconds`` is the time given to each throughput measurement."""
    notes: list[str] = []
    gpu_list = gpus()
    device = torch.device("cuda" if gpu_list else "cpu")
    report = {
        "versions": versions(),
        "cpu": cpu_info(),
        "gpus": gpu_list,
        "gpu": gpu_list[0]["name"] if gpu_list else None,
        "gpu_note": None if gpu_list else no_gpu_reason(),
    }
    busy = report["cpu"]["load_average"]
    if busy is not None and busy > report["cpu"]["usable_cores"] - 0.5:
        notes.append(
            f"load average {busy:.1f} on {report['cpu']['usable_cores']} usable cores: other processes compete "
            "for the CPU, so CPU timings here are slower and noisier than on an idle machine"
        )
    report["compile"] = (
        compile_check(device, compile_timeout)
        if check_compile
        else {"works": None, "skipped": True}
    )
    matmul = {
        "cpu_fp32": measure(
            "matmul cpu fp32",
            lambda: matmul_gflops(torch.device("cpu"), torch.float32, 1024, seconds),
            notes,
        )
    }
    if gpu_list:
        for name, dtype, tf32 in (
            ("fp32", torch.float32, False),
            ("tf32", torch.float32, True),
            ("bf16", torch.bfloat16, False),
        ):
            matmul[f"gpu_{name}"] = measure(
                f"matmul gpu {name}",
                lambda d=dtype, t=tf32: matmul_gflops(device, d, 4096, seconds, t),
                notes,
            )
        report["copy"] = measure(
            "host-to-device copy", lambda: copy_bandwidth(device, seconds), notes
        )
    else:
        report["copy"] = None
    report["matmul_gflops"] = matmul
    devices = [torch.device("cpu")] + ([device] if gpu_list else [])
    report["sampler"] = {
        d.type: measure(f"sampler on {d.type}", lambda d=d: sampler_throughput(d, seconds), notes)
        for d in devices
    }
    cpu = report["cpu"]
    if cpu["torch_threads"] < (cpu["usable_cores"] or 0):
        notes.append(
            f"torch uses {cpu['torch_threads']} threads of {cpu['usable_cores']} usable cores "
            f"({cpu['thread_choice']['reason']})"
        )
    synchronize(device)
    report["notes"] = notes
    return report
