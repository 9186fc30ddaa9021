"""Negative sampling with and without replacement, side by side in one process.

For each dataset: batches of ``--batch-size`` training users (drawn from the training
interactions, as an epoch visits them), ``--num-neg`` negatives each, with the CPU default
method (rejection) and the rank method, with replacement (coldbrew's default) and without (the
original's ``random.sample``). The samplers are called in turn, ``--repeats`` times each after a
warm-up; medians. Also counts the repeats per row that sampling with replacement leaves.

    .venv/bin/python benchmarks/bench_sampler.py [--threads 1] [--repeats 20]

Prints one JSON line per dataset. Needs ../shared/data (or ``$COLDBREW_DATA``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared_data import dataset_path  # noqa: E402

import coldbrew  # noqa: E402
from coldbrew.data.sampling import NegativeSampler  # noqa: E402


def repeats_per_row(negatives: torch.Tensor) -> float:
    """Mean of (num_neg - distinct negatives) over rows."""
    ordered = negatives.sort(dim=1).values
    return float((ordered[:, 1:] == ordered[:, :-1]).sum(1).double().mean())


def bench(name: str, args) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = coldbrew.load_dataset(dataset_path(name), trust_pickle=True, features=[])
    exclude, warm = dataset.exclusion_matrix(), dataset.warm_items
    samplers = {
        f"{method}_{'with' if replace else 'without'}": NegativeSampler(
            exclude, warm, method=method, replace=replace
        )
        for method in ("rejection", "rank")
        for replace in (True, False)
    }
    train_users = torch.from_numpy(dataset.train.tocoo().row.astype(np.int64))
    generator = torch.Generator().manual_seed(0)
    batches = [
        train_users[torch.randint(0, len(train_users), (args.batch_size,), generator=generator)]
        for _ in range(args.repeats + 1)
    ]
    for sampler in samplers.values():
        sampler.check_users(np.unique(train_users.numpy()), args.num_neg)
    seconds = {key: [] for key in samplers}
    repeats = {}
    for index, batch in enumerate(batches):
        for key, sampler in samplers.items():
            start = time.perf_counter()
            negatives = sampler.sample(batch, args.num_neg, generator)
            if index:  # the first batch warms up
                seconds[key].append(time.perf_counter() - start)
            repeats[key] = repeats_per_row(negatives)
    median = {key: statistics.median(values) for key, values in seconds.items()}
    return {
        "benchmark": "sampler",
        "dataset": name,
        "warm_items": len(warm),
        "batch_size": args.batch_size,
        "num_neg": args.num_neg,
        "samples_per_second": {
            key: round(args.batch_size / value) for key, value in median.items()
        },
        "without_over_with_time": {
            method: round(median[f"{method}_without"] / median[f"{method}_with"], 2)
            for method in ("rejection", "rank")
        },
        "repeats_per_row": {key: round(value, 2) for key, value in repeats.items()},
        "torch_threads": torch.get_num_threads(),
        "load_average": round(os.getloadavg()[0], 2),
        "timing": f"medians of {args.repeats} batches per sampler, called in turn",
        "date": datetime.date.today().isoformat(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="ml-1m-coldstart,clcrec-movielens")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--num-neg", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    for name in args.datasets.split(","):
        print(json.dumps(bench(name.strip(), args)), flush=True)


if __name__ == "__main__":
    main()
