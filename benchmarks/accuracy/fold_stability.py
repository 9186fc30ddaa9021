"""How stable the fold scores are when the folds are redrawn, and how they rank against the
held-out test items.

    python benchmarks/accuracy/fold_stability.py runs/f0/leaderboard.json runs/f1/leaderboard.json

Boards of the same models made with ``--fold-seed`` 0, 1, ... (``coldbrew leaderboard
--folds 5``). Prints, per convention: each model's fold mean under every fold seed and their
standard deviation (the noise of redrawing the folds), Kendall's tau between the rankings of
every pair of boards, and tau against the test ranking of the models named in ``TEST`` (the
ml-1m-coldstart held-out test items, MiniLM defaults, seed 1, scored by the planners outside this
repository, which does not hold them: the cross-validation issue's figures).
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from pathlib import Path

from scipy.stats import kendalltau

# cold Recall@20 on the 905 held-out test items (own-split, all-cold), MiniLM defaults, seed 1;
# None where the planners gave no figure
TEST: dict[str, tuple[float, float | None]] = {
    "clcrec": (0.145, None),
    "aldi": (0.1397, 0.1130),
    "ridge": (0.1374, 0.1122),
    "deepmusic": (0.128, 0.102),
    "gar": (0.129, 0.101),
    "heater": (0.115, 0.086),
    "knn": (0.109, 0.084),
    "dropoutnet": (0.104, 0.079),
}


def fold_means(board: dict, convention: str) -> dict[str, float]:
    return {
        row["model"]: row["folds"][convention]["recall@20"]["mean"]
        for row in board["rows"]
        if row.get("folds") and not row["model"].startswith("blend-")
    }


def report_means(board: dict, convention: str) -> dict[str, float]:
    """The final runs' cold Recall@20 on validation (the report), for the same comparison."""
    out = {}
    for row in board["rows"]:
        value = row["metrics"].get(convention, {}).get("report", {}).get("cold", {})
        if "recall@20" in value and not row["model"].startswith("blend-"):
            out[row["model"]] = value["recall@20"]["mean"]
    return out


def tau(first: dict[str, float], second: dict[str, float]) -> tuple[float, int]:
    shared = sorted(set(first) & set(second))
    value = kendalltau([first[m] for m in shared], [second[m] for m in shared]).statistic
    return float(value), len(shared)


def main(paths: list[str]) -> None:
    boards = [json.loads(Path(path).read_text()) for path in paths]
    for convention, test_column in (("all", 1), ("split", 0)):
        means = [fold_means(board, convention) for board in boards]
        print(f"\n{convention}: fold mean cold Recall@20 per fold seed")
        for model in means[0]:
            values = [each[model] for each in means if model in each]
            spread = statistics.stdev(values) if len(values) > 1 else float("nan")
            shown = "  ".join(f"{value:.4f}" for value in values)
            print(f"  {model:<12} {shown}  std {spread:.4f}")
        for (i, a), (j, b) in itertools.combinations(enumerate(means), 2):
            if len(set(a) & set(b)) > 2:
                value, count = tau(a, b)
                print(f"  tau(board {i}, board {j}) = {value:.2f} over {count} models")
        test = {m: pair[test_column] for m, pair in TEST.items() if pair[test_column] is not None}
        for i, each in enumerate(means):
            if len(set(each) & set(test)) <= 2:
                continue
            value, count = tau(each, test)
            print(f"  tau(board {i} folds, test) = {value:.2f} over {count} models")
            value, count = tau(report_means(boards[i], convention), test)
            print(f"  tau(board {i} report: all of validation, test) = {value:.2f} ({count})")


if __name__ == "__main__":
    main(sys.argv[1:])
