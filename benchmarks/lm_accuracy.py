"""Val cold Recall@20 of the LM recommender (cache mode, all-MiniLM-L6-v2) on ml-1m-coldstart.

Until ``--model lm`` is registered with the engine, this script hands the engine's ``Trainer``
an LM model by replacing its ``build_model`` for the run; nothing else of the loop changes.
Compares settings side by side over several seeds and prints one JSON line per run, then one
per setting with mean ± std (sample std) of the best val cold Recall@20 and NDCG@20.

  python benchmarks/lm_accuracy.py --id-dropout 0,0.5 --seeds 1,2,3 --epochs 10
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import dataset_path  # noqa: E402

from coldbrew import load_dataset  # noqa: E402
from coldbrew.config import make_config  # noqa: E402
from coldbrew.models.lm import LMConfig, build  # noqa: E402
from coldbrew.training import trainer as trainer_module  # noqa: E402


def run(dataset, lm_config: LMConfig, seed: int, args) -> dict:
    train_config = make_config(
        {
            "data": "ml-1m-coldstart",
            "num_neg": lm_config.resolved_num_neg(),
            "dim": lm_config.dim,
            "lr": args.lr,
            "batch_size": args.batch_size,
            "epochs": args.epochs,
            "patience": args.patience,
            "seed": seed,
            "quiet": True,
        }
    )
    original = trainer_module.build_model
    trainer_module.build_model = lambda _name, data, _config: build(data, lm_config, progress=False)
    try:
        engine = trainer_module.Trainer(train_config, dataset)
    finally:
        trainer_module.build_model = original
    state = engine.fit(log=lambda _line: None)
    best = state.history[state.best_epoch - 1]["val"]["cold"]
    return {
        "seed": seed,
        "best_epoch": state.best_epoch,
        "epochs_run": state.epoch,
        "recall@20": best["recall@20"],
        "ndcg@20": best["ndcg@20"],
        "train_seconds": round(state.train_seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--id-dropout", default="0,0.5", help="comma-separated values to compare")
    parser.add_argument("--loss", default="bpr", choices=["bpr", "infonce"])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no cold_test.csv" is expected here
        dataset = load_dataset(dataset_path("ml-1m-coldstart"), features=[], progress=False)
    seeds = [int(seed) for seed in args.seeds.split(",")]
    for id_dropout in [float(value) for value in args.id_dropout.split(",")]:
        lm_config = LMConfig(loss=args.loss, id_dropout=id_dropout)
        runs = []
        for seed in seeds:
            runs.append(run(dataset, lm_config, seed, args))
            print(json.dumps({"kind": "run", "id_dropout": id_dropout, **runs[-1]}), flush=True)
        summary = {"kind": "summary", "id_dropout": id_dropout, "loss": args.loss}
        for metric in ("recall@20", "ndcg@20"):
            values = [entry[metric] for entry in runs]
            summary[metric] = {"mean": statistics.mean(values), "std": statistics.stdev(values)}
        summary.update(
            batch_size=args.batch_size,
            lr=args.lr,
            epochs=args.epochs,
            seeds=seeds,
            date=datetime.date.today().isoformat(),
        )
        print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
