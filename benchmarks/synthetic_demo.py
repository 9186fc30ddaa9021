"""Does CLCRec learn on the default synthetic data in the demo's two epochs? And how fast is it made?

For each seed: ``coldbrew train --data synthetic --epochs 2 --seed S`` (default settings
otherwise, as ``make demo`` runs without real data), its val cold Recall@20, and the random
baseline computed exactly as ``coldbrew.demo`` does (random 64-d user and item vectors) on the
same dataset. Prints one JSON line per seed, then one summary line with mean ± std over seeds.
Also times generating the default dataset (the unit tests make no speed claims).

  python benchmarks/synthetic_demo.py [--seeds 1 2 3] [--epochs 2]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import tempfile
import time
from pathlib import Path


def run_seed(seed: int, epochs: int) -> dict:
    from coldbrew.cli import main as cli
    from coldbrew.data import load_dataset
    from coldbrew.demo import random_baseline

    started = time.perf_counter()
    dataset = load_dataset("synthetic", seed=seed)
    generate_seconds = time.perf_counter() - started
    chance = random_baseline(dataset, "cold")
    run = Path(tempfile.mkdtemp(prefix="coldbrew-synthetic-")) / "run"
    argv = ["train", "--data", "synthetic", "--epochs", str(epochs), "--seed", str(seed)]
    started = time.perf_counter()
    if cli([*argv, "--out", str(run), "--quiet"]) != 0:
        raise SystemExit(f"coldbrew {' '.join(argv)} failed")
    wall_seconds = time.perf_counter() - started
    results = json.loads((run / "results.json").read_text())
    recall = results["metrics"]["val"]["cold"]["recall@20"]
    return {
        "benchmark": "synthetic_demo",
        "seed": seed,
        "command": "coldbrew " + " ".join(argv),
        "users": dataset.num_users,
        "items": dataset.num_items,
        "cold_items": len(dataset.cold_items),
        "train_interactions": dataset.num_train,
        "generate_seconds": round(generate_seconds, 3),
        "random_val_cold_recall@20": round(chance, 4),
        "val_cold_recall@20": round(recall, 4),
        "times_random": round(recall / chance, 2),
        "train_seconds": round(results["timing"]["train_seconds"], 1),
        "wall_seconds": round(wall_seconds, 1),
    }


def mean_std(values: list[float]) -> str:
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {spread:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for seed in args.seeds:
        rows.append(run_seed(seed, args.epochs))
        print(json.dumps(rows[-1]), flush=True)
    summary = {
        "benchmark": "synthetic_demo_summary",
        "seeds": args.seeds,
        "epochs": args.epochs,
        **{
            key: mean_std([row[key] for row in rows])
            for key in (
                "random_val_cold_recall@20",
                "val_cold_recall@20",
                "times_random",
                "train_seconds",
                "wall_seconds",
                "generate_seconds",
            )
        },
        "date": datetime.date.today().isoformat(),
    }
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
