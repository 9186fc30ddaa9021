"""A model's fold score under other stopping rules, replayed on two fold boards' histories.

    python benchmarks/accuracy/fold_floor.py BOARD_A BOARD_B --model aldi --floors 0,5,8,10

Both boards come from ``coldbrew leaderboard --folds K`` on the same items and folds (two copies
of one input, e.g. fp32 and bf16 text vectors). For each floor (``min_epochs``; 0 is the rule
before floors: patience alone) every fold run's history is replayed
(``coldbrew.training.stopping.replay``), and each fold read two ways: at its own best epoch (what
the board reports) and at the epoch the mean fold curve chose (one epoch for every fold). Printed
per floor and reading: each board's fold mean, its seed spread (the std of the per-seed fold
means), the epoch chosen, and B - A paired over (fold, seed) by the corrected resampled t-test.

A replay is exact while the rule stops a run inside the history it trained (a constant learning
rate: a run's first epochs do not depend on how long it goes on). A run that stopped earlier
than a floor lets it is marked ``short`` and its floor is not printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from coldbrew.research.boards.paired import corrected_interval
from coldbrew.training.stopping import StopRule, replay


def fold_runs(board: Path, model: str) -> dict[tuple[int, int], dict]:
    """``{(fold, seed): results.json}`` of every fold run of ``model`` on ``board``."""
    runs = {}
    for path in sorted((board / "folds" / model).glob("fold-*/seed-*/results.json")):
        fold = int(path.parent.parent.name.removeprefix("fold-"))
        seed = int(path.parent.name.removeprefix("seed-"))
        runs[(fold, seed)] = json.loads(path.read_text())
    if not runs:
        raise SystemExit(f"{board} holds no fold run of {model}")
    return runs


def monitored(results: dict) -> tuple[list[float], list[float]]:
    """The monitored values and the cumulative seconds, epoch by epoch."""
    section, metric = results["early_stop"]["monitor"].split("/")
    values = [entry["val"][section][metric] for entry in results["history"]]
    seconds = [entry["train_seconds"] + entry["eval_seconds"] for entry in results["history"]]
    return values, seconds


def under_floor(runs: dict, floor: int) -> dict | None:
    """Each run's own best and its curve up to where ``floor``'s rule stops it, the mean curve's
    epoch and each run's value there; None when a run stopped before this rule would."""
    stops, bests = {}, {}
    for key, results in runs.items():
        config = results["config"]
        rule = StopRule(config["patience"], config.get("min_gain", 0.0), None, floor)
        values, seconds = monitored(results)
        replayed = replay(values, seconds, rule, results["early_stop"]["mode"])
        if replayed.reason == "end" and results["stopped"] != "max_epochs":
            return None  # this rule trains on past what the run trained
        stops[key], bests[key] = replayed.stop_epoch, replayed.best_value
    length = min(stops.values())
    curves = {key: monitored(runs[key])[0][:length] for key in runs}
    mean = [statistics.fmean(column) for column in zip(*curves.values(), strict=True)]
    epoch = max(range(length), key=lambda index: (mean[index], -index)) + 1
    common = {key: curve[epoch - 1] for key, curve in curves.items()}
    return {"own": bests, "common": common, "epoch": epoch, "stops": stops}


def spread(scores: dict[tuple[int, int], float]) -> tuple[float, float]:
    """The fold mean and the std over seeds of each seed's fold mean (0 with one seed)."""
    seeds = sorted({seed for _, seed in scores})
    per_seed = [statistics.fmean(v for (_, s), v in scores.items() if s == seed) for seed in seeds]
    return statistics.fmean(scores.values()), statistics.stdev(per_seed) if len(seeds) > 1 else 0.0


def compare(a: Path, b: Path, model: str, floors: list[int]) -> list[str]:
    runs_a, runs_b = fold_runs(a, model), fold_runs(b, model)
    both = sorted(set(runs_a) & set(runs_b))  # a board still training: the runs both finished
    runs_a, runs_b = ({key: runs[key] for key in both} for runs in (runs_a, runs_b))
    folds = next(iter(runs_a.values()))["config"]["folds"]
    lines = [
        f"{len(both)} runs (fold, seed) on both: {both}",
        "floor reading  A mean (seed sd) epoch  B mean (seed sd) epoch  B-A [95 %]  verdict",
    ]
    patience_alone = [under_floor(runs_a, 0), under_floor(runs_b, 0)]
    for floor in floors:
        replayed = [under_floor(runs_a, floor), under_floor(runs_b, floor)]
        if None in replayed:
            lines.append(f"{floor:5d} short: a run stopped before this floor's rule would")
            continue
        for reading in ("own", "common"):
            cells = []
            for each in replayed:
                mean, seed_sd = spread(each[reading])
                cells.append(f"{mean:.4f} ({seed_sd:.4f}) {each['epoch']:3d}")
            scores_a, scores_b = (each[reading] for each in replayed)
            interval = corrected_interval([scores_b[k] - scores_a[k] for k in scores_a], folds)
            verdict = "level" if interval["low"] <= 0 <= interval["high"] else "apart"
            lines.append(
                f"{floor:5d} {reading:7s}  {cells[0]}  {cells[1]}  {interval['mean']:+.4f} "
                f"[{interval['low']:+.4f}, {interval['high']:+.4f}]  {verdict}"
            )
        stops = [sorted(each["stops"].values()) for each in replayed]
        gains = [
            max(each["own"][key] - alone["own"][key] for key in both)
            for each, alone in zip(replayed, patience_alone, strict=True)
        ]
        lines.append(
            f"      epochs trained: A {stops[0]}  B {stops[1]}; the most a fold's own best "
            f"gains over patience alone: A {gains[0]:+.4f}  B {gains[1]:+.4f}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--model", default="aldi")
    parser.add_argument("--floors", default="0,5,8,10")
    args = parser.parse_args()
    floors = [int(each) for each in args.floors.split(",")]
    print(f"A = {args.a}\nB = {args.b}")
    print("\n".join(compare(args.a, args.b, args.model, floors)))


if __name__ == "__main__":
    main()
