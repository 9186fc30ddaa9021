"""Replay stopping rules on finished runs: which epoch each rule would select, and when it stops.

A run's results.json keeps, per epoch, every validation metric and the cumulative training and
evaluation seconds, so any rule that stops no later than the run did can be replayed exactly
with the trainer's own rule (``coldbrew.training.stopping.replay``). Train the runs with a
large patience (they then show what a longer wait would have found), then:

    python benchmarks/speed/replay_stopping.py RUN [RUN ...] [--rules p7,p4,p3g0.02,b90] [--markdown]

RUN: a run directory (its results.json, or last.pt while it trains), a results.json, or a folder
searched for results.json (a leaderboard's MODEL/seed-N). Rules: ``pN`` patience N, ``gX`` minimum relative gain X, ``bS`` a time budget
of S seconds of training + evaluation, ``mN`` no patience stop before epoch N; joined
(``p3g0.02``, ``p4m10``). Per rule and model: the selected
epochs, the mean selected value against the reference rule (the first given), and the seconds
to the stop (mean over the runs, and as a share of the reference's).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

from coldbrew.training.stopping import StopRule, replay

DEFAULT_RULES = "p7,p5,p4,p3,p2,p5g0.01,p4g0.01,p3g0.01,p4g0.02,p3g0.02,p3g0.05"


def parse_rule(text: str) -> StopRule:
    match = re.fullmatch(r"(?:p(\d+))?(?:g([0-9.]+))?(?:b([0-9.]+))?(?:m(\d+))?", text)
    if not match or not text:
        raise SystemExit(f"rule {text!r}: expected [pN][gX][bS][mN], e.g. p3g0.02, b300, p4m10")
    patience, gain, budget, floor = match.groups()
    unlimited = 10**9  # a budget alone: no patience
    return StopRule(
        int(patience or unlimited),
        float(gain or 0),
        float(budget) if budget else None,
        int(floor or 0),
    )


def find_results(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_file():
            found.append(path)
        elif (path / "results.json").is_file() and (path / "config.yaml").is_file():
            found.append(path / "results.json")
        elif (path / "last.pt").is_file():  # a run still training, or stopped before its end
            found.append(path / "last.pt")
        else:  # a leaderboard: MODEL/seed-N/results.json (its MODEL/results.json is a summary)
            found += sorted(
                p for p in path.rglob("results.json") if p.parent.name.startswith("seed")
            )
    return found


def results_of(path: Path) -> dict:
    """results.json, or what a checkpoint (``last.pt``) knows of the same fields."""
    if path.suffix != ".pt":
        return json.loads(path.read_text())
    import torch

    payload = torch.load(path, map_location="cpu", weights_only=True)
    state, config = payload["state"], payload["config"]
    return {
        "model": config["model"],
        "config": config,
        "early_stop": {
            "monitor": config.get("early_stop_metric") or "cold/recall@20",
            "mode": "max",
        },
        "history": state["history"],
        "timing": {"wall_seconds": float("nan")},
        "stopped": f"unfinished (epoch {state['epoch']} of {config['epochs']})",
    }


def history_of(path: Path) -> dict:
    results = results_of(path)
    section, metric = results["early_stop"]["monitor"].split("/", 1)
    history = results["history"]
    values = [epoch["val"][section][metric] for epoch in history]
    values = [float("nan") if value is None else value for value in values]
    seconds = [epoch["train_seconds"] + epoch["eval_seconds"] for epoch in history]
    return {
        "model": results["model"],
        "seed": results["config"]["seed"],
        "mode": results["early_stop"]["mode"],
        "values": values,
        "seconds": seconds,
        "wall": results["timing"]["wall_seconds"],
        "patience_run": results["config"]["patience"],
        "epochs": results["config"]["epochs"],
        "stopped": results["stopped"],
    }


def table(runs: list[dict], rules: list[str]) -> list[list[str]]:
    rows = []
    for model in sorted({run["model"] for run in runs}):
        mine = sorted((run for run in runs if run["model"] == model), key=lambda r: r["seed"])
        reference = None
        for name in rules:
            rule = parse_rule(name)
            results = [replay(r["values"], r["seconds"], rule, r["mode"]) for r in mine]
            # a rule that would train on past a history's end cannot be replayed faithfully
            short = [
                str(r["seed"]) for result, r in zip(results, mine, strict=True)
                if result.reason == "end"
            ]  # fmt: skip
            values = [result.best_value for result in results]
            epochs = [result.best_epoch for result in results]
            seconds = statistics.mean(result.seconds for result in results)
            trained = sum(result.stop_epoch for result in results)
            if reference is None:
                reference = (values, seconds, epochs, trained)
            same = sum(e == ref for e, ref in zip(epochs, reference[2], strict=True))
            mean = statistics.mean(values)
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            rows.append(
                [
                    model,
                    name + (f" (seeds {','.join(short)}: history ends first)" if short else ""),
                    ", ".join(str(result.best_epoch) for result in results),
                    ", ".join(str(result.stop_epoch) for result in results),
                    f"{mean:.4f} ± {spread:.4f}",
                    f"{mean - statistics.mean(reference[0]):+.4f}",
                    f"{same}/{len(values)}",
                    f"{trained} ({trained / reference[3]:.0%})",
                    f"{seconds:.0f} s ({seconds / reference[1]:.0%})",
                ]
            )
    return rows


HEADER = [
    "model",
    "rule",
    "selected epoch per seed",
    "stop epoch per seed",
    "selected val (mean ± std)",
    "vs first rule",
    "same epoch as first rule",
    "epochs trained, all seeds",
    "mean train + eval seconds to stop",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--rules", default=DEFAULT_RULES)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    runs = [history_of(path) for path in find_results(args.runs)]
    if not runs:
        raise SystemExit("no results.json found")
    rows = table(runs, args.rules.split(","))
    if args.markdown:
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in [HEADER, *rows]:
            print("  ".join(row))
    for run in runs:
        trained = run["seconds"][-1]
        print(
            f"# {run['model']} seed {run['seed']}: {len(run['values'])} epochs as run "
            f"(patience {run['patience_run']}, {run['stopped']}), train + eval {trained:.0f} s, "
            f"wall {run['wall']:.0f} s; val " + " ".join(f"{v:.4f}" for v in run["values"])
        )


if __name__ == "__main__":
    main()
