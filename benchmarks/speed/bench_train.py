"""Side by side, in one run: the original CLCRec training hot path vs coldbrew.

Measures on the CLCRec MovieLens split (or any dataset) with generated features of the
original shapes (2048, 128, 100) and 128 negatives:
  1. the original per-sample sampler alone vs coldbrew's device sampler (samples/s);
  2. the original end-to-end loop (DataLoader + all items encoded + .item(), batch 256)
     vs coldbrew training steps at batch 4096 (samples/s).
Prints one JSON line per measurement and a summary line with the ratios.

Why not ``coldbrew bench`` alone: the other side is the original system's pipeline
(``original_pipeline.py``), which is no coldbrew configuration; coldbrew's side is
``coldbrew bench sample|train``, called here in the same process.

  python benchmarks/speed/bench_train.py --data clcrec-movielens --seconds 30
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the originals beside it
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from original_pipeline import time_original_sampler, time_original_training  # noqa: E402
from shared_data import use_shared_data  # noqa: E402

from coldbrew import load_dataset  # noqa: E402
from coldbrew.perf.bench import random_features  # noqa: E402
from coldbrew.system.runtime import keep_freed_memory_for_reuse  # noqa: E402


def coldbrew_bench(what: str, args) -> dict:
    import contextlib
    import io

    from coldbrew.cli import main

    buffer = io.StringIO()
    argv = [
        "bench",
        what,
        "--data",
        args.data,
        "--num-neg",
        str(args.num_neg),
        "--batch-size",
        str(args.batch_size),
        "--feature-dims",
        args.feature_dims,
        "--seconds",
        str(args.seconds),
        "--json",
    ]
    if args.trust_pickle:
        argv.append("--trust-pickle")
    with contextlib.redirect_stdout(buffer):
        main(argv)
    return json.loads(buffer.getvalue().strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="clcrec-movielens")
    parser.add_argument("--trust-pickle", action="store_true", default=True)
    parser.add_argument("--feature-dims", default="2048,128,100")
    parser.add_argument("--num-neg", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--original-batch-size", type=int, default=256)
    parser.add_argument(
        "--original-workers",
        type=int,
        default=1,
        help="DataLoader workers for the original (its default is 1)",
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    use_shared_data()
    # coldbrew's trainer sets this on the CPU; set it first so both sides run with it.
    allocator_kept = keep_freed_memory_for_reuse()
    dataset = load_dataset(args.data, trust_pickle=args.trust_pickle, features=[])
    features = list(
        random_features(
            dataset.num_items, [int(w) for w in args.feature_dims.split(",")], seed=1
        ).values()
    )
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    common = {
        "dataset": dataset.name,
        "num_neg": args.num_neg,
        "feature_dims": args.feature_dims,
        "threads": torch.get_num_threads(),
        "keep_freed_memory": allocator_kept,
        "date": date,
    }

    original_sampler = time_original_sampler(dataset, args.num_neg, args.seconds)
    ours_sampler = coldbrew_bench("sample", args)
    original_train = time_original_training(
        dataset,
        features,
        args.num_neg,
        args.original_batch_size,
        args.seconds,
        args.original_workers,
    )
    ours_train = coldbrew_bench("train", args)
    rows = [
        {
            "measure": "sampler",
            "impl": "original",
            "samples_per_second": original_sampler,
            **common,
        },
        {
            "measure": "sampler",
            "impl": "coldbrew",
            **{
                k: ours_sampler[k]
                for k in ("samples_per_second", "batch_size", "device", "peak_memory_bytes")
            },
            **common,
        },
        {
            "measure": "train",
            "impl": "original",
            "batch_size": args.original_batch_size,
            "workers": args.original_workers,
            **original_train,
            **common,
        },
        {
            "measure": "train",
            "impl": "coldbrew",
            **{
                k: ours_train[k]
                for k in (
                    "samples_per_second",
                    "batch_size",
                    "device",
                    "peak_memory_bytes",
                    "epoch_seconds_estimate",
                )
            },
            **common,
        },
    ]
    for row in rows:
        print(json.dumps(row))
    print(
        json.dumps(
            {
                "summary": "coldbrew / original",
                "sampler_speedup": ours_sampler["samples_per_second"] / original_sampler,
                "train_speedup": ours_train["samples_per_second"]
                / original_train["samples_per_second"],
                **common,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
