"""The blend's weight search on a fold board's runs: the fast path against the plain one.

Builds the sets as a fold board does (``coldbrew.research.boards.cross_validation.fold_weights``:
each fold's seed run of every model, the data from one cache), then chooses the weights with
``grid_values`` (each run's standardised scores once) and, unless ``--skip-plain``, with
``plain_grid_values`` (one full evaluation per grid point), in one process. Prints each side's
wall time, its peak resident memory (the process's high-water mark, reset before each side),
the chosen weights and values, and how far the two sides' values are apart at every grid point.

    PYTHONPATH=src OMP_NUM_THREADS=1 nice -n 5 python benchmarks/speed/blend_weights.py \\
        --runs /tmp/bxs/boards/core5-minilm/folds --models aldi,ridge
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def peak_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again


def peak_gib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


def fold_sets(root: Path, models: list[str], folds: int, seed: int):
    from coldbrew.config import load_saved_config, make_config
    from coldbrew.research.search.study import DataCache
    from coldbrew.training.blend import run_vectors

    cache, sets = DataCache(), []
    for fold in range(folds):
        runs = [root / model / f"fold-{fold}" / f"seed-{seed}" for model in models]
        saved = load_saved_config(runs[0] / "config.yaml")
        config = make_config(saved, {"quiet": True, "device": "cpu"})
        dataset = cache(config)
        components = [run_vectors(run, dataset, seed, load_data=cache) for run in runs]
        sets.append((dataset, components))
    return sets, config.cold_candidates


def timed(sets, convention, objective, values_of):
    from coldbrew.research.boards.blend import choose_weights

    captured, lines = {}, []

    def capture(*args):
        captured["values"] = values_of(*args)
        return captured["values"]

    peak_reset()
    start = time.perf_counter()
    weights, value = choose_weights(
        sets, convention, objective=objective, log=lines.append, values_of=capture
    )
    seconds = time.perf_counter() - start
    side = {"seconds": round(seconds, 2), "peak_gib": round(peak_gib(), 3), "weights": weights}
    return side | {"value": value, "log": lines[-1]}, captured["values"][0]


def main() -> None:
    from coldbrew.research.boards.blend import grid_values, plain_grid_values

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True, help="a fold board's folds/ folder")
    parser.add_argument("--models", required=True, help="comma-separated, e.g. aldi,ridge")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--objective", default="joint", choices=("monitored", "joint"))
    parser.add_argument("--skip-plain", action="store_true", help="time the fast path only")
    args = parser.parse_args()
    models = args.models.split(",")
    start = time.perf_counter()
    sets, convention = fold_sets(args.runs, models, args.folds, args.seed)
    report = {"models": models, "folds": args.folds, "objective": args.objective}
    report |= {"load_seconds": round(time.perf_counter() - start, 1), "load": os.getloadavg()}
    report["fast"], fast = timed(sets, convention, args.objective, grid_values)
    if not args.skip_plain:
        report["plain"], plain = timed(sets, convention, args.objective, plain_grid_values)
        report["ratio"] = round(report["plain"]["seconds"] / report["fast"]["seconds"], 1)
        gaps = [
            abs(a - b)
            for point_fast, point_plain in zip(fast, plain, strict=True)
            for convention in point_fast
            for a, b in zip(point_fast[convention], point_plain[convention], strict=True)
        ]
        report["max_value_gap"] = max(gaps)
        report["points_apart"] = sum(gap > 1e-12 for gap in gaps)
        report["values_compared"] = len(gaps)
    report["load_after"] = os.getloadavg()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
