"""Own-split fold scores with each fold's items alone, and with other cold items drawn beside
them up to test's count (``fold_candidates: 905`` on ml-1m-coldstart): which ranks models as the
held-out test items do.

    python benchmarks/accuracy/fold_candidates.py runs/f0 [runs/f1 ...] [--count 905]

Each folder is a ``coldbrew leaderboard --folds K`` board. Every fold run's best checkpoint (the
one the board scores) is ranked again under own-split candidates both ways, on the same users.
Prints each model's fold mean cold Recall@20 both ways and Kendall's tau against the test
ranking of ``fold_stability.TEST`` (MiniLM defaults, seed 1). Nothing is trained; a board of
8 models and 5 folds takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch
from fold_stability import TEST, tau

from coldbrew.evaluation.model import evaluate_model
from coldbrew.research.boards.cross_validation import FOLDS_DIR, fold_dir
from coldbrew.research.search.study import DataCache
from coldbrew.research.seeds import seed_dir
from coldbrew.system.runtime import configure_process
from coldbrew.training.run_evaluation import load_best_model

TEST_ITEMS = 905  # ml-1m-coldstart's held-out test items (cold_test.csv, not in ../shared/data)


def fold_scores(out: Path, model: str, folds: int, seeds: list[int], count: int, cache):
    """``{fold_candidates: mean cold Recall@20 over every fold and seed}`` of one board row,
    for 0 (a fold's own items) and ``count``."""
    values: dict[int, list[float]] = {0: [], count: []}
    for fold in range(folds):
        for seed in seeds:
            run = seed_dir(fold_dir(out, model, fold), seed)
            config, _, recommender, _ = load_best_model(run, device="cpu", load_data=cache)
            for name, each in values.items():
                data = cache(config.copy_with(fold_candidates=name))
                metrics = evaluate_model(
                    recommender, data, ("val",), ks=(20,), cold_candidates="split"
                )
                each.append(metrics["val"]["cold"]["recall@20"])
    return {name: statistics.fmean(each) for name, each in values.items()}


def board_shape(out: Path, model: str) -> tuple[int, list[int]]:
    """The board's fold count and run seeds, from ``model``'s first fold run (so a board whose
    final runs are still training can be read)."""
    results = json.loads((fold_dir(out, model, 0) / "results.json").read_text())
    return results["config"]["folds"], sorted(results["seeds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("boards", nargs="+", help="leaderboard folders made with --folds")
    parser.add_argument("--count", type=int, default=TEST_ITEMS, help="fold_candidates to try")
    args = parser.parse_args()
    configure_process(torch.device("cpu"))  # threads chosen for the machine's load
    cache = DataCache()
    test = {model: pair[0] for model, pair in TEST.items()}
    for path in args.boards:
        out = Path(path)
        rows = sorted(path.name for path in (out / FOLDS_DIR).iterdir() if path.is_dir())
        models = [row for row in rows if not row.startswith("blend-")]
        folds, seeds = board_shape(out, models[0])
        scores = {m: fold_scores(out, m, folds, seeds, args.count, cache) for m in models}
        print(f"\n{out}: own-split fold mean cold Recall@20 ({folds} folds, seeds {seeds})")
        print(f"  {'model':<12} {'own':>7} {args.count:>7}  held-out test")
        for model, pair in scores.items():
            held = f"{test[model]:.4f}" if model in test else "-"
            print(f"  {model:<12} {pair[0]:.4f}  {pair[args.count]:.4f}  {held}")
        for name in (0, args.count):
            value, shared = tau({m: pair[name] for m, pair in scores.items()}, test)
            print(f"  tau(fold_candidates {name}, test) = {value:.2f} over {shared} models")


if __name__ == "__main__":
    main()
