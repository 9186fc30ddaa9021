"""Host memory: total and available RAM and this process's resident set (psutil), and the
resident set's peak with a reset of that peak, so one region's peak can be measured on its own
(Linux ``/proc``: psutil offers no peak that can be reset)."""

from __future__ import annotations

import psutil
import torch

from coldbrew.system.timing import peak_memory_bytes


def host_memory() -> dict:
    """{total_bytes, available_bytes} of the host's RAM."""
    memory = psutil.virtual_memory()
    return {"total_bytes": int(memory.total), "available_bytes": int(memory.available)}


def rss_bytes() -> int | None:
    """This process's resident set size, ``None`` where the platform does not tell."""
    try:
        return int(psutil.Process().memory_info().rss)
    except (psutil.Error, OSError):
        return None


def reset_peak_rss() -> bool:
    """Reset the kernel's resident-set high-water mark (``VmHWM``) to the current RSS (Linux
    4.0+); ``False`` elsewhere, and ``peak_rss_bytes`` is then the whole process's peak."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """The resident set's peak since the last ``reset_peak_rss`` (since the start without one)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return peak_memory_bytes(torch.device("cpu"))


def memory_postfix(device: torch.device) -> str:
    """``"mem 1.2/3.0/24.0GiB gpu 87%"`` on a GPU (allocated/reserved/total, utilisation from
    NVML when installed); ``"rss 2.31GiB"`` on the CPU. Reads counters, never syncs a device."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        allocated = torch.cuda.memory_allocated(index) / 2**30
        reserved = torch.cuda.memory_reserved(index) / 2**30
        total = torch.cuda.get_device_properties(index).total_memory / 2**30
        text = f"mem {allocated:.1f}/{reserved:.1f}/{total:.1f}GiB"
        from coldbrew.system.nvml import gpu_stats

        stats = gpu_stats(index)
        if stats is not None:
            text += f" gpu {stats['utilization_percent']}%"
        return text
    rss = rss_bytes()
    return f"rss {rss / 2**30:.2f}GiB" if rss is not None else ""
