"""GPU utilisation and memory read through NVML (``nvidia-ml-py``), on the host, never a sync.

``pynvml`` is imported lazily and only once; without it, or without a driver, every function
here returns ``None`` quietly so callers can show GPU numbers only where they exist.
"""

from __future__ import annotations

import threading

_NVML: dict = {}  # "module": initialised pynvml or None once tried; "handles": index -> handle


def _nvml():
    if "module" not in _NVML:
        try:
            import pynvml

            pynvml.nvmlInit()
            _NVML["module"] = pynvml
        except Exception:  # not installed, no driver, no GPU: all mean "no NVML here"
            _NVML["module"] = None
        _NVML["handles"] = {}
    return _NVML["module"]


def _pci_bus_id(device_index: int) -> str | None:
    """The CUDA device's PCI address, so CUDA_VISIBLE_DEVICES reordering maps to the right GPU."""
    try:
        import torch

        props = torch.cuda.get_device_properties(device_index)
        return f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    except Exception:
        return None


def _handle(nvml, device_index: int):
    handles = _NVML["handles"]
    if device_index not in handles:
        bus_id = _pci_bus_id(device_index)
        handle = None
        if bus_id is not None:
            try:
                handle = nvml.nvmlDeviceGetHandleByPciBusId(bus_id)
            except Exception:
                handle = None
        handles[device_index] = handle or nvml.nvmlDeviceGetHandleByIndex(device_index)
    return handles[device_index]


def gpu_stats(device_index: int = 0) -> dict | None:
    """{utilization_percent, memory_used_bytes, memory_total_bytes} of one GPU, or None."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        handle = _handle(nvml, device_index)
        rates = nvml.nvmlDeviceGetUtilizationRates(handle)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    except Exception:
        return None
    return {
        "utilization_percent": int(rates.gpu),
        "memory_used_bytes": int(memory.used),
        "memory_total_bytes": int(memory.total),
    }


def driver_version() -> str | None:
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        version = nvml.nvmlSystemGetDriverVersion()
    except Exception:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)


class GpuSampler:
    """Polls :func:`gpu_stats` on a background thread while the ``with`` block runs."""

    def __init__(self, device_index: int = 0, interval: float = 0.05):
        self.device_index, self.interval = device_index, interval
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _poll(self) -> None:
        while not self._stop.is_set():
            stats = gpu_stats(self.device_index)
            if stats is None:
                return
            self.samples.append(stats)
            self._stop.wait(self.interval)

    def __enter__(self) -> GpuSampler:
        if gpu_stats(self.device_index) is not None:
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def summary(self) -> dict | None:
        """Mean and max utilisation and the most memory used, or None without samples."""
        if not self.samples:
            return None
        utilisation = [s["utilization_percent"] for s in self.samples]
        return {
            "utilization_mean_percent": sum(utilisation) / len(utilisation),
            "utilization_max_percent": max(utilisation),
            "memory_used_max_bytes": max(s["memory_used_bytes"] for s in self.samples),
            "memory_total_bytes": self.samples[-1]["memory_total_bytes"],
            "samples": len(self.samples),
        }
