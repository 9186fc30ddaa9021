"""Where the benchmarks find the shared datasets: ``$COLDBREW_DATA``, else ../shared/data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_ROOT = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()


def use_shared_data() -> Path:
    """Point ``COLDBREW_DATA`` at the shared data unless it is set; return the root."""
    os.environ.setdefault("COLDBREW_DATA", str(DEFAULT_ROOT))
    return Path(os.environ["COLDBREW_DATA"]).resolve()


def dataset_path(name: str) -> Path:
    """The folder of dataset ``name`` under the shared root, or exit with what to set."""
    path = use_shared_data() / name
    if not path.is_dir():
        sys.exit(f"{path} not found: set COLDBREW_DATA to the folder holding {name}/")
    return path


def load_shared(name: str, features: list[str], threads: int | None = None):
    """Dataset ``name`` from the shared data, its warnings silenced (ml-1m-coldstart's "no
    cold_test.csv: test metrics skipped"); ``threads`` CPU threads for torch when given."""
    import warnings

    import torch

    if threads:
        torch.set_num_threads(threads)
    use_shared_data()
    from coldbrew import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_dataset(name, features=features)


def time_alternately(steps: dict, repeats: int, warmup: int = 3) -> dict[str, float]:
    """Median seconds of each ``steps[name]()`` over ``repeats`` calls, the steps called in
    turn (so machine noise hits them alike), after ``warmup`` untimed calls of each."""
    import statistics
    import time

    for step in steps.values():
        for _ in range(warmup):
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            started = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}
