"""Exact expected cold Recall@K of a random ranking, next to the leaderboard's measured cold
Recall@K of each model (mean ± std over seeds), both conventions.

    COLDBREW_DATA=/work/shared/data python benchmarks/random_cold_recall.py BOARD_DIR [K]

A random ranking lists min(K, N_u) of a user's N_u cold candidates (cold candidates not among
its training items), each a positive with probability C_u / N_u (C_u: positives among the
candidates); recall divides by all P_u positives, so E[recall@K] = min(K, N_u) / N_u * C_u / P_u,
averaged over the users with a cold positive.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np


def random_recall(dataset, split: str, cold_candidates: str, k: int) -> float:
    from coldbrew.evaluation.plan import canonical, cold_items_of

    candidates = cold_items_of(dataset, split, cold_candidates)
    positives = canonical(dataset.groups(split)["cold"])
    train = canonical(dataset.train)
    values = []
    for user in np.flatnonzero(np.diff(positives.indptr)):
        seen = train.indices[train.indptr[user] : train.indptr[user + 1]]
        own = np.setdiff1d(candidates, seen)
        held = positives.indices[positives.indptr[user] : positives.indptr[user + 1]]
        among = np.intersect1d(held, own)
        values.append(min(k, len(own)) / max(len(own), 1) * len(among) / len(held))
    return float(np.mean(values))


def main(board: Path, k: int = 20) -> None:
    from coldbrew.config import load_saved_config, make_config
    from coldbrew.training.run import load_run_dataset

    rows = json.loads((board / "leaderboard.json").read_text())["rows"]
    for seed_dir in sorted((board / rows[0]["model"]).glob("seed-*")):
        config = make_config(load_saved_config(seed_dir / "config.yaml"))
        dataset = load_run_dataset(config)
        for convention in ("all", "split"):
            for split in ("val", "test"):
                expected = random_recall(dataset, split, convention, k)
                print(
                    f"{seed_dir.name} {convention:5} {split:4} random cold recall@{k} {expected:.4f}"
                )
    for row in rows:
        for convention, splits in row["metrics"].items():
            for split, groups in splits.items():
                cell = groups.get("cold", {}).get(f"recall@{k}")
                if cell:
                    values = ", ".join(f"{value:.4f}" for value in cell["values"])
                    mean = statistics.mean(cell["values"])
                    print(
                        f"{row['model']:6} {convention:5} {split:4} cold recall@{k} {mean:.4f} ({values})"
                    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), *(int(arg) for arg in sys.argv[2:]))
