"""Training-step time of this engine against an older commit's, side by side in one process.

    python benchmarks/engine_overhead.py --commit e6ed567 --data ml-1m-coldstart --features genre

The older commit's ``src/coldbrew`` is exported into a temporary folder as the package
``coldbrew_previous`` (its absolute imports rewritten to that name), so both engines run in this
process on the same data, alternating step by step: machine noise hits both alike. Each side
loads the dataset with its own loader (same name, seed and features), builds its trainer with
the same configuration, and times ``train_step`` on the same sample rows. Prints one JSON line:
median step milliseconds of each, samples/s, and the ratio new / previous.

Why not ``coldbrew bench --against``: its variants are options of today's code; this times two
versions of the code itself.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch
from shared_data import use_shared_data

from coldbrew.system.timing import time_in_turn

ROOT = Path(__file__).resolve().parents[1]

PREVIOUS = "coldbrew_previous"


def export_previous(commit: str, folder: Path) -> None:
    """``src/coldbrew`` at ``commit`` as ``folder/coldbrew_previous``, imports renamed."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "src/coldbrew"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    package = folder / PREVIOUS
    (folder / "src" / "coldbrew").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text()
        path.write_text(
            re.sub(r"\bcoldbrew\.", f"{PREVIOUS}.", text)
            .replace("from coldbrew import", f"from {PREVIOUS} import")
            .replace("import coldbrew\n", f"import {PREVIOUS} as coldbrew\n")
        )


def previous_step(args, settings: dict, rows: torch.Tensor):
    config = importlib.import_module(f"{PREVIOUS}.config").make_config(settings)
    data = importlib.import_module(f"{PREVIOUS}.data")
    trainer_module = importlib.import_module(f"{PREVIOUS}.training.trainer")
    dataset = data.load_dataset(args.data, features=args.features, seed=args.seed)
    trainer = trainer_module.Trainer(config, dataset)
    users, items = trainer.train_users[rows], trainer.train_items[rows]
    return lambda: trainer.train_step(users, items)


def current_step(args, settings: dict, rows: torch.Tensor):
    from coldbrew.config import make_config
    from coldbrew.data import load_dataset
    from coldbrew.training.run import build_trainer

    dataset = load_dataset(args.data, features=args.features, seed=args.seed)
    trainer = build_trainer(make_config(settings), dataset)
    return lambda: trainer.train_step(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", default="e6ed567")
    parser.add_argument("--data", default="ml-1m-coldstart")
    parser.add_argument("--features", default="genre")
    parser.add_argument("--batch-size", type=int, default=2048)
    parser.add_argument("--num-neg", type=int, default=128)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per engine")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    use_shared_data()
    settings = {
        "data": args.data,
        "batch_size": args.batch_size,
        "num_neg": args.num_neg,
        "quiet": True,
        "device": "cpu",
        "seed": args.seed,
    }
    with tempfile.TemporaryDirectory() as folder:
        export_previous(args.commit, Path(folder))
        sys.path.insert(0, folder)
        generator = torch.Generator().manual_seed(0)
        # the same rows for both engines (both order training pairs the same way)
        from coldbrew.data import load_dataset

        count = load_dataset(args.data, features=args.features, seed=args.seed).num_train
        rows = torch.randint(count, (args.batch_size,), generator=generator)
        steps = {
            "previous": previous_step(args, settings, rows),
            "current": current_step(args, settings, rows),
        }
        times = time_in_turn(steps, torch.device("cpu"), warmup=3, seconds=0, min_rounds=args.steps)
        median = {name: statistics.median(values) * 1e3 for name, values in times.items()}
    print(
        json.dumps(
            {
                "benchmark": "engine_overhead",
                "previous_commit": args.commit,
                "data": args.data,
                "features": args.features,
                "batch_size": args.batch_size,
                "num_neg": args.num_neg,
                "steps": args.steps,
                "previous_step_ms": median["previous"],
                "current_step_ms": median["current"],
                "previous_samples_per_second": args.batch_size / median["previous"] * 1e3,
                "current_samples_per_second": args.batch_size / median["current"] * 1e3,
                "throughput_ratio_current_over_previous": median["previous"] / median["current"],
                "threads": torch.get_num_threads(),
                "load_average": os.getloadavg(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    )


if __name__ == "__main__":
    main()
