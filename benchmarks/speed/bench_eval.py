"""Evaluation speed on the CLCRec MovieLens split, side by side in one process.

1. The original CLCRec ranking loop vs coldbrew's engine: the same seeded random 64-d
   user/item vectors, val cold group, top 20 (the original's setting: users in chunks of 2000,
   cold items only). The original gets its data in its own form (dict of sets, the
   ``val_cold`` rows, warm item ids offset by the number of users). ``--skip-original``
   leaves this part out.
2. The full evaluation (val + test, groups all/warm/cold, K = 10, 20, 50) of a CLCRec model
   (``coldbrew.models.CLCRec``, seeded, untrained; cold items from generated 2048/128/100-d
   features, as the features were never published): the evaluator of commit ``--baseline``
   (six rankings), this tree's engine (``evaluate_dataset``) and a plain per-user loop (one
   user and one group at a time, a stable sort of the row), called in turn, the order rotating.
   Their metrics must agree (max difference <= 1e-12), else the script exits 1.

Each side is warmed up once (the loop is not: it is slow enough); timings are medians of the
turns (wall and process CPU seconds; CUDA synchronized), with per-turn ratios.

    .venv/bin/python benchmarks/speed/bench_eval.py [--device cuda] [--full-repeats 3] [--threads 1]

Prints one JSON line. Needs ../shared/data/clcrec-movielens (or ``$COLDBREW_DATA``).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the originals beside it
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data

from baseline_eval import load_evaluation_at  # noqa: E402
from original_eval import original_evaluate  # noqa: E402
from shared_data import dataset_path  # noqa: E402

import coldbrew  # noqa: E402
from coldbrew.evaluation import evaluate_dataset  # noqa: E402
from coldbrew.evaluation.metrics import METRICS  # noqa: E402
from coldbrew.models.clcrec.model import CLCRec  # noqa: E402
from coldbrew.perf.bench import random_features  # noqa: E402

DATASET = "clcrec-movielens"
TOP_K = 20
DIM = 64
FULL_KS = (10, 20, 50)
BASELINE = "247dd54"  # the evaluator of issue 22: six rankings, one per (split, group)


def timed(function, device: torch.device, repeats: int) -> tuple[float, object]:
    """Median seconds per call after one warm-up call, and the last call's result."""
    result = function()  # warm-up
    seconds = []
    for _ in range(repeats):
        _synchronize(device)
        start = time.perf_counter()
        result = function()
        _synchronize(device)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def timed_in_turn(
    functions: dict, device: torch.device, repeats: int, unwarmed=()
) -> tuple[dict, dict]:
    """Each function warmed up once (except those ``unwarmed``), then all called in turn
    ``repeats`` times (the order rotating), so every side sees the same machine load. Returns
    per-side wall and CPU seconds lists, and each side's last result."""
    results = {name: f() for name, f in functions.items() if name not in unwarmed}  # warm-up
    seconds = {name: {"wall": [], "cpu": []} for name in functions}
    names = list(functions)
    for repeat in range(repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            _synchronize(device)
            wall, cpu = time.perf_counter(), time.process_time()
            results[name] = functions[name]()
            _synchronize(device)
            seconds[name]["wall"].append(time.perf_counter() - wall)
            seconds[name]["cpu"].append(time.process_time() - cpu)
            wall_seconds, cpu_seconds = seconds[name]["wall"][-1], seconds[name]["cpu"][-1]
            load = os.getloadavg()[0]
            print(
                f"turn {repeat} {name}: {wall_seconds:.2f} s wall, {cpu_seconds:.2f} s CPU, load {load:.1f}",
                file=sys.stderr,
                flush=True,
            )
    return seconds, results


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def max_difference(left: dict, right: dict) -> float:
    """Largest |difference| over every split, group and metric; inf if the keys differ."""
    worst = 0.0
    for split in left.keys() | right.keys():
        for group in left.get(split, {}).keys() | right.get(split, {}).keys():
            a, b = left.get(split, {}).get(group), right.get(split, {}).get(group)
            if a is None or b is None or a.keys() != b.keys():
                return float("inf")
            worst = max([worst, *(abs(a[name] - b[name]) for name in a)])
    return worst


def original_side_by_side(dataset, path: Path, device: torch.device, args) -> dict:
    """Part 1: the original ranking loop vs coldbrew on the val cold group."""
    num_users, num_items = dataset.num_users, dataset.num_items
    # The original's own forms: global ids, items offset by num_users.
    train_items_of = np.load(path / "user_item_train_dict.npy", allow_pickle=True).item()
    val_cold_rows = np.load(path / "val_cold.npy", allow_pickle=True)
    warm_items_global = torch.from_numpy(np.load(path / "warm_set.npy")).to(device)
    # Vectors in the original's (source id) order; coldbrew's rows follow its internal order.
    generator = torch.Generator().manual_seed(0)
    user_vectors = torch.randn(num_users, DIM, generator=generator).to(device)
    item_vectors = torch.randn(num_items, DIM, generator=generator).to(device)
    result = torch.cat([user_vectors, item_vectors])  # the original's model.result
    user_rows = _rows(dataset.user_ids, 0, device)
    item_rows = _rows(dataset.item_ids, num_users, device)
    coldbrew_users = user_vectors if user_rows is None else user_vectors[user_rows]
    coldbrew_items = item_vectors if item_rows is None else item_vectors[item_rows]
    original_seconds, original_metrics = timed(
        lambda: original_evaluate(
            num_users, train_items_of, val_cold_rows, warm_items_global, result, 2000, TOP_K
        ),
        device,
        args.original_repeats,
    )
    positives = dataset.splits["val"]["cold"]
    val_cold = copy.copy(dataset)
    val_cold.splits = {"val": {"cold": positives}}  # the original's one ranking, no other group
    coldbrew_seconds, metrics = timed(
        lambda: evaluate_dataset(
            val_cold,
            user_vectors=coldbrew_users,
            item_vectors=coldbrew_items,
            splits=("val",),
            ks=(TOP_K,),
        )["val"]["cold"],
        device,
        args.repeats,
    )
    ours = (metrics[f"precision@{TOP_K}"], metrics[f"recall@{TOP_K}"], metrics[f"ndcg@{TOP_K}"])
    differences = [abs(a - b) for a, b in zip(original_metrics, ours, strict=True)]
    return {
        "group": "val/cold",
        "top_k": TOP_K,
        "users": int(np.count_nonzero(np.diff(positives.indptr))),
        "items": int(len(dataset.cold_items)),
        "original_seconds": round(original_seconds, 4),
        "coldbrew_seconds": round(coldbrew_seconds, 5),
        "speedup": round(original_seconds / coldbrew_seconds, 1),
        "metrics_match": max(differences) <= 1e-6,
        "max_metric_difference": max(differences),
        "original_precision_recall_ndcg": [round(value, 6) for value in original_metrics],
        "coldbrew_precision_recall_ndcg": [round(value, 6) for value in ours],
    }


def per_user_loop(dataset, user_vectors, item_vectors, splits, ks) -> dict:
    """The plain reference: one user and one group at a time, the user's row scored, training
    items at -inf, a stable sort (equal scores by id), the CLCRec metrics from Python sets."""
    candidates = {
        "all": None,
        "warm": torch.as_tensor(dataset.warm_items, device=item_vectors.device),
        "cold": torch.as_tensor(dataset.cold_items, device=item_vectors.device),
    }
    train = dataset.train
    metrics = {}
    for split in splits:
        metrics[split] = {}
        for group, positives in dataset.groups(split).items():
            totals, num_users = {f"{m}@{k}": 0.0 for k in ks for m in METRICS}, 0
            for user in np.flatnonzero(np.diff(positives.indptr)):
                scores = item_vectors @ user_vectors[user]  # (num_items,)
                seen = train.indices[train.indptr[user] : train.indptr[user + 1]]
                scores[torch.as_tensor(seen, dtype=torch.int64)] = float("-inf")
                items = candidates[group]
                ranked = torch.sort(
                    scores if items is None else scores[items], descending=True, stable=True
                )
                top = (
                    ranked.indices[: max(ks)] if items is None else items[ranked.indices[: max(ks)]]
                )
                finite = ranked.values[: max(ks)] > float("-inf")
                top = top[finite].tolist()
                wanted = set(
                    positives.indices[positives.indptr[user] : positives.indptr[user + 1]].tolist()
                )
                num_users += 1
                for k in ks:
                    hits = [rank for rank, item in enumerate(top[:k]) if item in wanted]
                    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(wanted), k)))
                    totals[f"precision@{k}"] += len(hits) / k
                    totals[f"recall@{k}"] += len(hits) / len(wanted)
                    totals[f"ndcg@{k}"] += sum(1 / math.log2(rank + 2) for rank in hits) / ideal
                    totals[f"hit@{k}"] += float(bool(hits))
            metrics[split][group] = {name: value / num_users for name, value in totals.items()}
    return metrics


def full_evaluation_side_by_side(dataset, device: torch.device, args) -> dict:
    """Part 2: the whole val + test evaluation: before vs the engine vs a per-user loop."""
    dataset.features = random_features(dataset.num_items, [2048, 128, 100], seed=1)
    torch.manual_seed(0)
    model = CLCRec.from_dataset(dataset).to(device).eval()
    with torch.no_grad():
        users, items = model.user_embeddings().detach(), model.item_embeddings().detach()
    baseline = load_evaluation_at(args.baseline)
    splits = ("val", "test")
    functions = {
        "before": lambda: {
            split: baseline.evaluate_embeddings(dataset, users, items, split, FULL_KS)
            for split in splits
        },
        "engine": lambda: evaluate_dataset(
            dataset, user_vectors=users, item_vectors=items, splits=splits, ks=FULL_KS
        ),
        "per_user_loop": lambda: per_user_loop(dataset, users, items, splits, FULL_KS),
    }
    if args.skip_loop:
        functions.pop("per_user_loop")
    seconds, results = timed_in_turn(functions, device, args.full_repeats, ("per_user_loop",))
    wall = {name: statistics.median(times["wall"]) for name, times in seconds.items()}
    cpu = {name: statistics.median(times["cpu"]) for name, times in seconds.items()}
    engine = seconds["engine"]["wall"]
    report = {
        "full_eval": "val+test, groups all/warm/cold, ks 10/20/50, CLCRec model (random init)",
        "baseline_commit": args.baseline,
        "full_eval_wall_seconds": {
            name: [round(t, 3) for t in times["wall"]] for name, times in seconds.items()
        },
        "full_eval_median_wall_seconds": {name: round(value, 3) for name, value in wall.items()},
        "full_eval_median_cpu_seconds": {name: round(value, 3) for name, value in cpu.items()},
        "full_eval_timing": f"{args.full_repeats} turns, order rotating",
    }
    for name in functions:
        if name != "engine":
            paired = [b / o for b, o in zip(seconds[name]["wall"], engine, strict=True)]
            report[f"engine_vs_{name}_per_turn"] = [round(ratio, 2) for ratio in paired]
            report[f"engine_vs_{name}_median_wall"] = round(wall[name] / wall["engine"], 2)
            report[f"max_difference_{name}_vs_engine"] = max_difference(
                results[name], results["engine"]
            )
    report["engine_test_all"] = {
        name: round(value, 5) for name, value in results["engine"]["test"]["all"].items()
    }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=10, help="timed coldbrew calls (part 1)")
    parser.add_argument("--original-repeats", type=int, default=3, help="timed original calls")
    parser.add_argument("--full-repeats", type=int, default=3, help="turns of part 2")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (all sides)")
    parser.add_argument("--skip-original", action="store_true", help="only part 2")
    parser.add_argument("--skip-loop", action="store_true", help="no per-user loop in part 2")
    parser.add_argument("--baseline", default=BASELINE, help="git ref of the 'before' evaluator")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    path = dataset_path(DATASET)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no feature file": generated below where needed
        dataset = coldbrew.load_dataset(path, trust_pickle=True)
    report = {
        "benchmark": "eval",
        "dataset": DATASET,
        "catalogue_items": dataset.num_items,
        "device": _device_name(device),
        "torch_threads": torch.get_num_threads(),
        "load_average_at_start": round(os.getloadavg()[0], 2),
    }
    if not args.skip_original:
        report |= original_side_by_side(dataset, path, device, args)
    report |= full_evaluation_side_by_side(dataset, device, args)
    report["load_average_at_end"] = round(os.getloadavg()[0], 2)
    report["date"] = datetime.date.today().isoformat()
    print(json.dumps(report))
    worst = max(value for key, value in report.items() if key.startswith("max_difference_"))
    if worst > 1e-12:
        sys.exit(f"the engine's metrics differ from another side's by {worst}")


def _rows(source_ids, offset: int, device: torch.device) -> torch.Tensor | None:
    """Row of each internal id in the source-ordered vectors (None: the orders agree)."""
    if source_ids is None:
        return None
    return torch.as_tensor(np.asarray(source_ids, dtype=np.int64) - offset, device=device)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({os.cpu_count()} cores)"


if __name__ == "__main__":
    main()
