"""Two fold boards of the same data and folds, compared model by model: B against A.

For every model on both boards and each convention: A's and B's fold mean ± std, B − A paired
over the (fold, seed) scores with the corrected resampled t-test (``coldbrew.research.boards.paired``),
"B leads", "A leads" or "level", and both report scores. The boards must come from
``coldbrew leaderboard --folds K`` on data with the same items in the same order (the folds
are drawn over item rows), e.g. the text forms of ``benchmarks/accuracy/text_forms.py``.

    python benchmarks/accuracy/paired_boards.py BOARD_A BOARD_B [--metric recall@20]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from coldbrew.research.boards.paired import corrected_interval


def rows(board: Path) -> tuple[dict, dict]:
    payload = json.loads((board / "leaderboard.json").read_text())
    if not payload.get("folds"):
        raise SystemExit(f"{board} is not a fold board (leaderboard --folds K)")
    return payload, {row["model"]: row for row in payload["rows"]}


def report_mean(row: dict, convention: str, metric: str) -> str:
    """The final run's report score, or "none" on data with no validation to report on."""
    cold = row["metrics"].get(convention, {}).get("report", {}).get("cold", {})
    return f"{cold[metric]['mean']:.4f}" if metric in cold else "none"


def compare(a: Path, b: Path, metric: str) -> list[str]:
    board_a, rows_a = rows(a)
    board_b, rows_b = rows(b)
    if (board_a["folds"], board_a["seeds"]) != (board_b["folds"], board_b["seeds"]):
        raise SystemExit("the boards have other folds or seeds: their scores do not pair")
    lines = []
    for model in [name for name in rows_a if name in rows_b]:
        for convention in board_a["conventions"]:
            scores_a = rows_a[model]["folds"][convention][metric]["values"]
            scores_b = rows_b[model]["folds"][convention][metric]["values"]
            interval = corrected_interval(
                [y - x for x, y in zip(scores_a, scores_b, strict=True)], board_a["folds"]
            )
            verdict = (
                "B leads" if interval["low"] > 0 else "A leads" if interval["high"] < 0 else "level"
            )
            report = [
                report_mean(row, convention, metric) for row in (rows_a[model], rows_b[model])
            ]
            lines.append(
                f"{model:12s} {convention:5s} A {np.mean(scores_a):.4f} ± {np.std(scores_a, ddof=1):.4f}"
                f"  B {np.mean(scores_b):.4f} ± {np.std(scores_b, ddof=1):.4f}"
                f"  B-A {interval['mean']:+.4f} [{interval['low']:+.4f}, {interval['high']:+.4f}]"
                f" {verdict:7s}  B/A {np.mean(scores_b) / np.mean(scores_a):.3f}"
                f"  report A {report[0]} B {report[1]}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--metric", default="recall@20")
    args = parser.parse_args()
    print(f"A = {args.a}\nB = {args.b}")
    print("\n".join(compare(args.a, args.b, args.metric)))


if __name__ == "__main__":
    main()
