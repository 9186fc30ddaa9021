"""Neighbor-graph loss: precompute time, and training throughput with the term off vs on.

On the CLCRec MovieLens split (55,485 users, 922,007 training interactions):

1. the neighbor lists (top 50 by items in common) and common-item lists (top 20) are built
   from the training matrix, each part timed once (``time.perf_counter``, progress bar off);
2. ``coldbrew bench train`` runs in a fresh process with the term off, then on, ``--repeats``
   times alternately (batch 4096, 128 negatives, generated 2048/128/100-d features, the graph
   precomputed before the timed region); the ratio of the median throughputs is printed;
   the term runs at its defaults, or with ``--neighbor-negatives K`` (0: every other user);
3. ``--alternate STEPS``: instead of 2, one process builds a trainer without the term, one with
   it over every user of the step (``--neighbor-negatives 0``), and one for each value of
   ``--neighbor-negatives`` (comma-separated), then times their steps in turn on the same rows
   (median of STEPS each), so the machine's load hits them alike.

    .venv/bin/python benchmarks/bench_neighbors.py [--seconds 20] [--repeats 2] [--threads N]
    .venv/bin/python benchmarks/bench_neighbors.py --alternate 30 --neighbor-negatives 255,1023

Prints JSON lines. Needs ../shared/data/clcrec-movielens (or ``$COLDBREW_DATA``). The machine's
load averages are recorded with each line, since a shared CPU skews every number.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from shared_data import dataset_path, time_alternately  # noqa: E402

DATASET = "clcrec-movielens"
BENCH = "import sys\nfrom coldbrew.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def precompute(path: Path) -> dict:
    from coldbrew import load_dataset
    from coldbrew.models.neighbors import common_items, top_neighbors

    dataset = load_dataset(str(path), trust_pickle=True, features=[])
    started = time.perf_counter()
    neighbors = top_neighbors(dataset.train, progress=False)
    middle = time.perf_counter()
    common = common_items(dataset.train, neighbors, progress=False)
    finished = time.perf_counter()
    return {
        "benchmark": "neighbor_precompute",
        "dataset": dataset.name,
        "users": dataset.num_users,
        "items": dataset.num_items,
        "train_interactions": dataset.num_train,
        "neighbor_seconds": middle - started,
        "common_item_seconds": finished - middle,
        "total_seconds": finished - started,
        "users_without_neighbors": int((neighbors.lengths == 0).sum()),
        "users_without_common_items": int((common.lengths == 0).sum()),
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
    }


def train_throughput(path: Path, neighbor_loss: bool, args: argparse.Namespace) -> dict:
    command = [
        sys.executable, "-c", BENCH, "bench", "train", "--data", str(path), "--trust-pickle",
        "--feature-dims", "2048,128,100", "--num-neg", "128", "--batch-size", "4096",
        "--seconds", str(args.seconds), "--device", args.device, "--json",
    ]  # fmt: skip
    if neighbor_loss:
        command.append("--neighbor-loss")
        if args.neighbor_negatives:
            command += ["--neighbor-negatives", args.neighbor_negatives]
    environment = dict(os.environ)
    if args.threads:
        environment["OMP_NUM_THREADS"] = str(args.threads)  # torch's CPU thread count
    done = subprocess.run(command, capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        sys.exit(f"bench train failed ({done.returncode}):\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_average"] = os.getloadavg()
    return result


def alternate(path: Path, args: argparse.Namespace) -> dict:
    """Step milliseconds of the trainers without the term, with it over every user, and with
    each ``--neighbor-negatives`` value: one process, steps in turn, the same rows."""
    from coldbrew import load_dataset
    from coldbrew.config import make_config
    from coldbrew.perf.bench import random_features
    from coldbrew.training.run import build_trainer

    dataset = load_dataset(str(path), trust_pickle=True, features=[])
    dataset.features = random_features(dataset.num_items, [2048, 128, 100], seed=1)
    run = {"data": str(path), "batch_size": 4096, "num_neg": 128, "quiet": True, "device": "cpu"}
    variants = {"off": {}, "all": {"neighbor_loss": True, "neighbor_negatives": 0}}
    for count in filter(None, (args.neighbor_negatives or "").split(",")):
        variants[f"negatives={count}"] = {"neighbor_loss": True, "neighbor_negatives": int(count)}
    rows = torch.randint(dataset.num_train, (4096,), generator=torch.Generator().manual_seed(0))
    steps = {}
    for name, settings in variants.items():
        trainer = build_trainer(make_config({**run, **settings}), dataset)
        steps[name] = lambda trainer=trainer: trainer.train_step(rows)
    step_ms = {name: s * 1e3 for name, s in time_alternately(steps, args.alternate).items()}
    return {
        "benchmark": "neighbor_train_ratio_alternating",
        "median_step_ms": step_ms,
        "ratio_on_over_off": {
            name: step_ms["off"] / ms for name, ms in step_ms.items() if name != "off"
        },
        "steps": args.alternate,
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="timed region of each bench run"
    )
    parser.add_argument("--repeats", type=int, default=2, help="off/on pairs, run alternately")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    parser.add_argument("--skip-precompute", action="store_true")
    parser.add_argument(
        "--neighbor-negatives", help="K (comma-separated with --alternate): the term's negatives"
    )
    parser.add_argument(
        "--alternate", type=int, metavar="STEPS", help="one process, steps in turn (see above)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    path = dataset_path(DATASET)
    if not args.skip_precompute:
        print(json.dumps(precompute(path)), flush=True)
    if args.alternate:
        print(json.dumps(alternate(path, args)), flush=True)
        return
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeats):
        for neighbor_loss in (False, True):
            result = train_throughput(path, neighbor_loss, args)
            rates[neighbor_loss].append(result["samples_per_second"])
            print(json.dumps(result), flush=True)
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    summary = {
        "benchmark": "neighbor_train_ratio",
        "samples_per_second_off": off,
        "samples_per_second_on": on,
        "ratio_on_over_off": on / off,
        "repeats": args.repeats,
        "threads": args.threads or torch.get_num_threads(),
        "load_average": os.getloadavg(),
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
