"""What a device holds and how fast it runs: memory sizes as people write them, the share of a
device a planned batch may use, and the vendor sheets of the GPUs ``coldbrew memory`` knows."""

from __future__ import annotations

import math

import torch

MARGIN = 0.9  # of device memory a planned batch may use
UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20}
UNITS.update({"gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40})
# peak dense FLOP/s (fp32 without tensor cores, bf16 with) and memory bandwidth, vendor sheets
GPUS = {
    "rtx4090": {"fp32": 82.6e12, "bf16": 165.2e12, "bandwidth": 1.008e12, "memory": 24e9},
    "a100-80gb": {"fp32": 19.5e12, "bf16": 312e12, "bandwidth": 2.039e12, "memory": 80e9},
    "h100-sxm": {"fp32": 67e12, "bf16": 989e12, "bandwidth": 3.35e12, "memory": 80e9},
}
LAUNCH_SECONDS = 4e-6  # per kernel, a typical CUDA launch cost without CUDA graphs


def parse_size(text: str) -> int:
    """``"80GB"`` -> 80e9, ``"24GiB"`` -> 24 x 2**30, ``"512M"`` -> 512 x 2**20."""
    cleaned = str(text).strip().lower().replace(" ", "")
    number = cleaned.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = cleaned[len(number) :]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in UNITS or not value > 0 or not math.isfinite(value):
        raise ValueError(f"a memory size like 80GB, 24GiB or 512MB, not {text!r}")
    return int(value * UNITS[unit])


def device_capacity(device: torch.device) -> int | None:
    """Total memory of a GPU; RAM available now on the CPU (what a batch may still take)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    from coldbrew.system.memory import host_memory

    return host_memory()["available_bytes"]
