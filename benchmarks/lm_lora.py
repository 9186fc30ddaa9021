"""LoRA fine-tuning of the text encoder against cache mode, on the users a 2-core CPU can afford.

    python benchmarks/lm_lora.py [--data ml-100k] [--users 150] [--seeds 1,2,3] [--epochs 3]
        [--lora 8,16] [--max-length 32] [--batch-size 128] [--threads 2]

The first ``--users`` users of the data (every item kept, each split cut to those users), the
LM recommender trained once per seed in cache mode and once with ``--lm-mode dynamic --lora``,
every other setting equal (InfoNCE with ``--num-neg`` negatives, cosine score, temperature
``--temperature``), each up to ``--epochs`` epochs with early stopping on validation cold
Recall@20. Prints one JSON line per run (validation cold Recall@20 / NDCG@20 of the best epoch,
training seconds, seconds per step) and one summary line (mean ± sample std per mode, and the
paired LoRA − cache difference). Dynamic mode runs the backbone forward and backward over the
step's distinct items; on a CPU that is what limits the users.

Why not ``coldbrew train --seeds`` and ``coldbrew compare``: the run is on a subset of the
users (no coldbrew option cuts one), and the summary pairs the two modes seed by seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path

from shared_data import load_shared, mean_and_std, seeds_list


def first_users(dataset, count: int):
    """``dataset`` cut to its first ``count`` users (every item kept)."""
    keep = slice(0, count)
    splits = {
        split: {group: matrix[keep] for group, matrix in groups.items()}
        for split, groups in dataset.splits.items()
    }
    return dataclasses.replace(
        dataset,
        name=f"{dataset.name}-first-{count}-users",
        num_users=count,
        train=dataset.train[keep],
        splits=splits,
        user_ids=None if dataset.user_ids is None else dataset.user_ids[keep],
        known=None if dataset.known is None else dataset.known[keep],
        user_text=None if dataset.user_text is None else dataset.user_text[keep],
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="ml-100k")
    parser.add_argument("--users", type=int, default=150)
    parser.add_argument("--seeds", type=seeds_list, default=[1, 2, 3])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lora", default="8,16")
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-neg", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.2)
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    args = parser.parse_args()
    dataset = first_users(load_shared(args.data, ["genre"], args.threads), args.users)
    from coldbrew.config import make_config
    from coldbrew.training.run import train

    common = {
        "data": args.data, "model": "lm", "loss": "infonce", "num_neg": args.num_neg,
        "score": "cosine", "temperature": args.temperature, "max_length": args.max_length,
        "batch_size": args.batch_size, "lr": args.lr, "epochs": args.epochs, "patience": 2,
        "quiet": True, "device": "cpu",
    }  # fmt: skip
    modes = {"cache": {}, "lora": {"lm_mode": "dynamic", "lora": args.lora}}
    values: dict[str, dict[int, dict]] = {mode: {} for mode in modes}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in args.seeds:
            for mode, extra in modes.items():
                config = make_config({**common, **extra, "seed": seed})
                started = time.perf_counter()
                results = train(config, Path(scratch) / f"{mode}-{seed}", dataset=dataset)
                steps = results["epochs_run"] * -(-dataset.num_train // args.batch_size)
                cold = results["metrics"]["val"]["cold"]
                row = {
                    "recall@20": cold["recall@20"],
                    "ndcg@20": cold["ndcg@20"],
                    "best_epoch": results["best_epoch"],
                    "train_seconds": results["timing"]["train_seconds"],
                    "seconds_per_step": results["timing"]["train_seconds"] / steps,
                    "wall_seconds": time.perf_counter() - started,
                }
                values[mode][seed] = row
                print(json.dumps({
                    "benchmark": "lm_lora_run", "data": dataset.name, "mode": mode,
                    "seed": seed, **row, "load_average": os.getloadavg(),
                }), flush=True)  # fmt: skip
    summary = {
        mode: {
            metric: mean_and_std([values[mode][s][metric] for s in args.seeds])
            for metric in ("recall@20", "ndcg@20", "seconds_per_step")
        }
        for mode in modes
    }
    paired = {
        metric: mean_and_std(
            [values["lora"][s][metric] - values["cache"][s][metric] for s in args.seeds]
        )
        for metric in ("recall@20", "ndcg@20")
    }
    print(json.dumps({
        "benchmark": "lm_lora", "data": dataset.name, "users": args.users,
        "items": dataset.num_items, "train_interactions": dataset.num_train,
        "settings": {**common, "lora": args.lora}, "seeds": args.seeds,
        "summary": summary, "lora_minus_cache": paired,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
