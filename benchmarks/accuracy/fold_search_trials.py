"""A fold search's trials, fold by fold: each trial's settings, its cold Recall@20 on every fold
under both conventions, and the joint score (their geometric mean), best first.

    python benchmarks/accuracy/fold_search_trials.py runs/aldi-search [--top 5] [--also 0]

The study comes from ``coldbrew search --folds K --objective joint``; each trial's folds are
read from ``TRIAL/fold-k/seed-S`` as a board reads a run under each convention
(``convention_metrics``: its own metrics, or its saved evaluation). The columns are the
settings the study searched (its ``trials.json``), or ``--settings a,b``. ``--also`` adds trials
by number (trial 0 is the starting settings, the defaults) whatever their rank.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from coldbrew.research.boards.board import convention_metrics
from coldbrew.research.search.study import joint_value

METRIC = "recall@20"


def fold_score(run: Path, convention: str) -> float | None:
    """A fold run's val cold Recall@20 under ``convention``, as the board reads it (None: the
    run is unfinished)."""
    if not (run / "results.json").exists():
        return None
    return convention_metrics(run, convention)["val"]["cold"][METRIC]


def searched(study: Path) -> list[str]:
    """The settings the study's trials drew, in the space's order."""
    trials = json.loads((study / "trials.json").read_text())["trials"]
    return list(trials[0]["params"]) if trials else []


def trial_row(trial: Path, settings: list[str]) -> dict | None:
    """Settings, per-fold scores and their means, or None for a trial with a fold unfinished."""
    folds = sorted(trial.glob("fold-*"), key=lambda path: int(path.name.split("-")[1]))
    runs = [next(iter(sorted(fold.glob("seed-*"))), None) for fold in folds]
    if not runs or None in runs:
        return None
    scores = {c: [fold_score(run, c) for run in runs] for c in ("all", "split")}
    if any(None in values for values in scores.values()):
        return None
    config = yaml.safe_load((runs[0] / "config.yaml").read_text())
    section = config.get(config.get("model"), config)
    means = {c: sum(values) / len(values) for c, values in scores.items()}
    return {
        "trial": int(trial.name.split("-")[1]),
        "settings": {name: section.get(name, config.get(name)) for name in settings},
        "scores": scores,
        "means": means,
        "joint": joint_value({c: {"val": mean} for c, mean in means.items()}, "val"),
    }


def shown(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def table(rows: list[dict], settings: list[str]) -> list[str]:
    head = ["trial", *settings, "folds all", "folds split", "joint"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [str(row["trial"]), *(shown(row["settings"][name]) for name in settings)]
        for convention in ("all", "split"):
            folds = " ".join(f"{value:.3f}" for value in row["scores"][convention])
            cells.append(f"{row['means'][convention]:.4f} ({folds})")
        cells.append(f"{row['joint']:.4f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--also", type=int, nargs="*", default=[0])
    parser.add_argument("--settings", help="columns, comma-separated (default: those searched)")
    args = parser.parse_args()
    settings = args.settings.split(",") if args.settings else searched(args.study)
    rows = [row for trial in args.study.glob("trial-*") if (row := trial_row(trial, settings))]
    rows.sort(key=lambda row: -row["joint"])
    chosen = rows[: args.top] + [row for row in rows[args.top :] if row["trial"] in set(args.also)]
    print(f"{len(rows)} finished trials in {args.study}")
    print("\n".join(table(chosen, settings)))


if __name__ == "__main__":
    main()
