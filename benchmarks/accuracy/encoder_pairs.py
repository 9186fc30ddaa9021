"""A board of encoders (``coldbrew leaderboard --text-encoders A,B,C``), encoder against encoder
for each model: B − A paired over the folds, seed by seed and over every seed, under each
convention, by the corrected resampled t-test (``coldbrew.research.boards.paired``). A lead
counts only where it holds on every seed alone.

    python benchmarks/accuracy/encoder_pairs.py runs/encoders [--metric recall@20]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

from coldbrew.research.boards.encoder_rows import split_row
from coldbrew.research.boards.paired import corrected_interval


def fold_scores(row: dict, convention: str) -> dict[tuple[int, int], float]:
    return {(fold, seed): value for fold, seed, value in row["fold_values"][convention]}


def shown(interval: dict) -> str:
    word = "B leads" if interval["low"] > 0 else "A leads" if interval["high"] < 0 else "level"
    return f"{interval['mean']:+.4f} [{interval['low']:+.4f}, {interval['high']:+.4f}] {word}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("board", type=Path)
    args = parser.parse_args()
    board = json.loads((args.board / "leaderboard.json").read_text())
    folds, seeds = board["folds"], board["seeds"]
    by_model: dict[str, dict[str, dict]] = {}
    for row in board["rows"]:
        model, encoder = split_row(row["model"])
        if encoder is not None and row.get("fold_values"):
            by_model.setdefault(model, {})[encoder] = row
    for model, rows in by_model.items():
        for (a, row_a), (b, row_b) in itertools.combinations(rows.items(), 2):
            for convention in ("all", "split"):
                scores_a, scores_b = fold_scores(row_a, convention), fold_scores(row_b, convention)
                keys = sorted(set(scores_a) & set(scores_b))
                cells = []
                for seed in [*seeds, None]:
                    chosen = [key for key in keys if seed is None or key[1] == seed]
                    interval = corrected_interval(
                        [scores_b[key] - scores_a[key] for key in chosen], folds
                    )
                    cells.append(
                        f"{'all seeds' if seed is None else f'seed {seed}'} {shown(interval)}"
                    )
                print(f"{model:<10} A {a:<10} B {b:<10} {convention:<5} " + " | ".join(cells))


if __name__ == "__main__":
    main()
