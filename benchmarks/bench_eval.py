"""Evaluation speed: the original CLCRec ranking loop vs coldbrew's vectorized full ranking.

Both evaluate the same seeded random 64-d user/item vectors on the CLCRec MovieLens split,
val cold group, top 20 (the original's setting: users in chunks of 2000, cold items only).
The original gets its data in its own form (dict of sets, the ``val_cold`` rows, warm item ids
offset by the number of users); coldbrew gets ``coldbrew.load_dataset``'s ``Dataset``. Each is
warmed up once and timed over several calls (median seconds per call; CUDA synchronized).
Then a full coldbrew evaluation (val + test, every group, K = 10, 20, 50) is timed too.

    .venv/bin/python benchmarks/bench_eval.py [--device cuda] [--repeats 10] [--threads 1]

Prints one JSON line. Needs ../shared/data/clcrec-movielens (or ``$COLDBREW_DATA``).
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

from original_eval import original_evaluate  # noqa: E402
from shared_data import dataset_path  # noqa: E402

import coldbrew  # noqa: E402
from coldbrew.evaluation import evaluate_embeddings, full_ranking, group_candidates  # noqa: E402

DATASET = "clcrec-movielens"
TOP_K = 20
DIM = 64


def timed(function, device: torch.device, repeats: int) -> tuple[float, object]:
    """Median seconds per call after one warm-up call, and the last call's result."""
    result = function()  # warm-up
    seconds = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        result = function()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=10, help="timed coldbrew calls")
    parser.add_argument("--original-repeats", type=int, default=3, help="timed original calls")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (both sides)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    path = dataset_path(DATASET)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no feature file": features are not needed here
        dataset = coldbrew.load_dataset(path, trust_pickle=True)
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
    coldbrew_seconds, metrics = timed(
        lambda: full_ranking(
            dataset.train,
            positives,
            user_vectors=coldbrew_users,
            item_vectors=coldbrew_items,
            candidates=group_candidates(dataset, "cold"),
            ks=(TOP_K,),
        ),
        device,
        args.repeats,
    )
    ours = (metrics[f"precision@{TOP_K}"], metrics[f"recall@{TOP_K}"], metrics[f"ndcg@{TOP_K}"])
    differences = [abs(a - b) for a, b in zip(original_metrics, ours, strict=True)]

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    full_ks = (10, 20, 50)
    full_seconds, _ = timed(
        lambda: {
            split: evaluate_embeddings(dataset, coldbrew_users, coldbrew_items, split, full_ks)
            for split in ("val", "test")
        },
        device,
        max(1, args.repeats // 3),
    )
    peak_mib = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None

    print(
        json.dumps(
            {
                "benchmark": "eval",
                "dataset": DATASET,
                "group": "val/cold",
                "top_k": TOP_K,
                "users": int(np.count_nonzero(np.diff(positives.indptr))),
                "items": int(len(dataset.cold_items)),
                "catalogue_items": num_items,
                "original_seconds": round(original_seconds, 4),
                "coldbrew_seconds": round(coldbrew_seconds, 5),
                "speedup": round(original_seconds / coldbrew_seconds, 1),
                "device": _device_name(device),
                "torch_threads": torch.get_num_threads(),
                "metrics_match": max(differences) <= 1e-6,
                "max_metric_difference": max(differences),
                "original_precision_recall_ndcg": [round(value, 6) for value in original_metrics],
                "coldbrew_precision_recall_ndcg": [round(value, 6) for value in ours],
                "full_eval_seconds": round(full_seconds, 4),
                "full_eval": "val+test, groups all/warm/cold, ks 10/20/50",
                "full_eval_peak_cuda_mib": None if peak_mib is None else round(peak_mib, 1),
                "timing": f"median of {args.original_repeats} (original) / {args.repeats} "
                "(coldbrew) calls after one warm-up",
                "date": datetime.date.today().isoformat(),
            }
        )
    )


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
