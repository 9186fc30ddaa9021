"""What the machine offers and how it is measured: device and precision choice, process-wide
settings a run makes, timing, host memory, NVML readings. Training and ``perf`` both sit above
this package; it imports neither."""
