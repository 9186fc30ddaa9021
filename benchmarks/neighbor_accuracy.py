"""Does the neighbor-graph term help cold items? CLCRec on ml-1m-coldstart without and with it.

Both runs use the same data (genre features), seed and settings; the only difference is
``neighbor_loss``. Each trains up to ``--epochs`` epochs with early stopping on validation cold
Recall@20 (``--patience``), then reports the best checkpoint's cold Recall@20 / NDCG@20 on
every split present. ml-1m-coldstart ships only ``cold_val.csv`` here, so the reported numbers
are on the split that also chose the epoch (optimistic for both runs alike); a test split is
reported too when ``cold_test.csv`` is present.

    .venv/bin/python benchmarks/neighbor_accuracy.py [--epochs 10] [--threads 1]

Prints one JSON line per run and one comparing them. Needs ../shared/data/ml-1m-coldstart (or
``$COLDBREW_DATA``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import warnings
from pathlib import Path

import torch
from shared_data import use_shared_data  # benchmarks/ is on sys.path when run as a script

DATASET = "ml-1m-coldstart"


def cold_metrics(metrics: dict) -> dict:
    return {
        split: {name: groups["cold"][name] for name in ("recall@20", "ndcg@20")}
        for split, groups in metrics.items()
        if "cold" in groups
    }


def run(dataset, neighbor_loss: bool, args: argparse.Namespace, out: Path) -> dict:
    from coldbrew.config import make_config
    from coldbrew.training.run import train

    config = make_config({
        "data": DATASET, "features": ["genre"], "batch_size": args.batch_size, "lr": args.lr,
        "epochs": args.epochs, "patience": args.patience, "seed": args.seed, "quiet": True,
        "neighbor_loss": neighbor_loss, "neighbor_weight": args.neighbor_weight,
    })  # fmt: skip
    results = train(config, out / ("with" if neighbor_loss else "without"), dataset=dataset)
    history = results["history"]
    return {
        "benchmark": "neighbor_accuracy",
        "dataset": DATASET,
        "neighbor_loss": neighbor_loss,
        "neighbor_weight": args.neighbor_weight if neighbor_loss else 0.0,
        "best": cold_metrics(results["metrics"]),
        "best_epoch": results["best_epoch"],
        "epochs_run": results["epochs_run"],
        "val_cold_recall@20_per_epoch": [h["val"]["cold"]["recall@20"] for h in history],
        "final_losses": history[-1]["losses"],
        "train_seconds": results["timing"]["train_seconds"],
        "settings": {
            key: getattr(args, key) for key in ("batch_size", "lr", "epochs", "patience", "seed")
        },
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=0.004)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--neighbor-weight", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    parser.add_argument("--out", type=Path, default=None, help="keep the two run folders here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    use_shared_data()
    from coldbrew import load_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no cold_test.csv: test metrics skipped"
        dataset = load_dataset(DATASET, features=["genre"])
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for neighbor_loss in (False, True):
            results.append(run(dataset, neighbor_loss, args, args.out or Path(scratch)))
            print(json.dumps(results[-1]), flush=True)
    without, with_term = (result["best"]["val"] for result in results)
    print(json.dumps({
        "benchmark": "neighbor_accuracy_delta",
        "val_cold_recall@20": [without["recall@20"], with_term["recall@20"]],
        "val_cold_ndcg@20": [without["ndcg@20"], with_term["ndcg@20"]],
        "relative_recall_change": with_term["recall@20"] / without["recall@20"] - 1,
        "relative_ndcg_change": with_term["ndcg@20"] / without["ndcg@20"] - 1,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
