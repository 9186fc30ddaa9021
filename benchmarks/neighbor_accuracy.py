"""Does the neighbor-graph term help cold items, and at which temperature? Mean ± std over seeds.

CLCRec on ml-1m-coldstart, for every seed: once without the term, and once with it at each
``--neighbor-temps`` value (weight ``--neighbor-weight``). Every other setting is the same in
all runs: ``coldbrew train``'s defaults unless given here. Each run trains up to its epoch cap
with early stopping on validation cold Recall@20 and reports the best checkpoint's cold
Recall@20 / NDCG@20. ml-1m-coldstart ships only ``cold_val.csv`` here, so the numbers are on the
split that also chose the epoch (optimistic for every run alike); a test split is reported
too when ``cold_test.csv`` is present.

    python benchmarks/neighbor_accuracy.py [--seeds 1,2,3] [--neighbor-temps 2.0,0.2]
        [--features genre,text] [--runs DIR] [--threads 1]

With ``--runs DIR`` the run folders are kept as ``DIR/without-seedS`` and
``DIR/with-tempT-seedS`` (``-negativesK`` added with ``--neighbor-negatives K``), and a folder
already holding a run of the same settings is taken instead of trained again
(``trained_runs.py``): split the seeds over processes, then run once more with every seed for
the summary. Prints one JSON line per run, one summary line per variant (mean ± sample std
over the seeds) and one per temperature with the paired change against the run without the
term. Needs ../shared/data/ml-1m-coldstart (or ``$COLDBREW_DATA``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import torch
from shared_data import load_shared  # benchmarks/ is on sys.path when run as a script
from trained_runs import mean_and_std, seeds_list, train_or_take

DATASET = "ml-1m-coldstart"
METRICS = ("recall@20", "ndcg@20")


def cold_metrics(metrics: dict) -> dict:
    return {
        split: {name: groups["cold"][name] for name in METRICS}
        for split, groups in metrics.items()
        if "cold" in groups
    }


def settings(args: argparse.Namespace, seed: int, temperature: float | None) -> dict:
    """``coldbrew train`` options of one run: the given ones, else the defaults."""
    chosen = {"data": DATASET, "features": args.features, "seed": seed}
    for key in ("batch_size", "lr", "epochs", "patience"):
        if getattr(args, key) is not None:
            chosen[key] = getattr(args, key)
    if temperature is not None:
        chosen.update(
            neighbor_loss=True, neighbor_weight=args.neighbor_weight, neighbor_temp=temperature
        )
        if args.neighbor_negatives is not None:
            chosen["neighbor_negatives"] = args.neighbor_negatives
    return chosen


def run(dataset, seed: int, temperature: float | None, args, runs: Path) -> dict:
    name = "without" if temperature is None else f"with-temp{temperature:g}"
    if temperature is not None and args.neighbor_negatives is not None:
        name += f"-negatives{args.neighbor_negatives}"
    chosen = settings(args, seed, temperature)
    results = train_or_take(chosen, runs / f"{name}-seed{seed}", dataset)
    history = results["history"]
    return {
        "benchmark": "neighbor_accuracy",
        "dataset": DATASET,
        "variant": name,
        "seed": seed,
        "best": cold_metrics(results["metrics"]),
        "best_epoch": results["best_epoch"],
        "epochs_run": results["epochs_run"],
        "val_cold_recall@20_per_epoch": [h["val"]["cold"]["recall@20"] for h in history],
        "final_losses": history[-1]["losses"],
        "train_seconds": results["timing"]["train_seconds"],
        "samples_per_second": results["timing"]["samples_per_second"],
        "settings": chosen,
        "taken_from_an_earlier_run": results["taken"],
        "threads": torch.get_num_threads(),
        "load_average": os.getloadavg(),
    }


def summaries(results: list[dict]) -> list[dict]:
    variants = list(dict.fromkeys(result["variant"] for result in results))
    by_variant = {
        variant: {r["seed"]: r["best"]["val"] for r in results if r["variant"] == variant}
        for variant in variants
    }
    lines = []
    for variant, per_seed in by_variant.items():
        line = {"benchmark": "neighbor_accuracy_summary", "variant": variant}
        line["seeds"] = sorted(per_seed)
        for metric in METRICS:
            line[f"val_cold_{metric}"] = mean_and_std(
                [per_seed[s][metric] for s in sorted(per_seed)]
            )
        lines.append(line)
    baseline = by_variant.get("without", {})
    for variant, per_seed in by_variant.items():
        seeds = sorted(set(per_seed) & set(baseline))
        if variant == "without" or not seeds:
            continue
        line = {"benchmark": "neighbor_accuracy_change", "variant": variant, "seeds": seeds}
        for metric in METRICS:  # paired by seed: with − without, and relative to without
            change = [per_seed[s][metric] - baseline[s][metric] for s in seeds]
            relative = [per_seed[s][metric] / baseline[s][metric] - 1 for s in seeds]
            line[f"val_cold_{metric}_change"] = mean_and_std(change)
            line[f"val_cold_{metric}_relative_change"] = mean_and_std(relative)
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=seeds_list, default=[1, 2, 3])
    parser.add_argument(
        "--neighbor-temps", type=lambda text: [float(v) for v in text.split(",")], default=[2.0]
    )
    parser.add_argument("--neighbor-weight", type=float, default=0.1)
    parser.add_argument(
        "--neighbor-negatives",
        type=int,
        default=None,
        help="the term's negatives (default: coldbrew's, 255; 0: every other user)",
    )
    parser.add_argument("--features", type=lambda text: text.split(","), default=["genre", "text"])
    parser.add_argument("--batch-size", type=int, default=None, help="default: coldbrew's")
    parser.add_argument("--lr", type=float, default=None, help="default: coldbrew's")
    parser.add_argument("--epochs", type=int, default=None, help="default: coldbrew's")
    parser.add_argument("--patience", type=int, default=None, help="default: coldbrew's")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    parser.add_argument("--runs", type=Path, default=None, help="keep (and take) run folders here")
    args = parser.parse_args()
    dataset = load_shared(DATASET, args.features, args.threads)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for seed in args.seeds:
            for temperature in [None, *args.neighbor_temps]:
                results.append(run(dataset, seed, temperature, args, args.runs or Path(scratch)))
                print(json.dumps(results[-1]), flush=True)
    for line in summaries(results):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
