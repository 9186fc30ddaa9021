"""Host memory as the kernel reports it: total and available RAM, this process's resident set
(current, peak, and a reset of the peak so one region's peak can be measured on its own)."""

from __future__ import annotations

import os

import torch

from coldbrew.system.timing import peak_memory_bytes


def host_memory() -> dict:
    """{total_bytes, available_bytes} from /proc/meminfo, else from ``os.sysconf``."""
    try:
        with open("/proc/meminfo") as handle:
            fields = {
                line.split(":")[0]: int(line.split()[1]) * 1024 for line in handle if line.strip()
            }
        return {
            "total_bytes": fields["MemTotal"],
            "available_bytes": fields.get("MemAvailable", fields["MemFree"]),
        }
    except (OSError, KeyError, ValueError, IndexError):
        pass
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        return {
            "total_bytes": os.sysconf("SC_PHYS_PAGES") * page,
            "available_bytes": os.sysconf("SC_AVPHYS_PAGES") * page,
        }
    except (OSError, ValueError, AttributeError):
        return {"total_bytes": None, "available_bytes": None}


def rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def reset_peak_rss() -> bool:
    """Reset the kernel's resident-set high-water mark to the current RSS (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
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
