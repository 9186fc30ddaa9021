"""A search trial's values: the monitored metric of its results on either half of validation,
the joint objective (the geometric mean under both cold-candidate conventions), what its run
took (trial attributes), and its one-line summary."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coldbrew.research.search.space import SearchSpace


def convention_values(results: dict, run_dirs: Sequence[Path], own: str, monitor) -> dict:
    """``{convention: {"val": value, "report": value}}``: the monitored metric on each half under
    the run's own convention (from ``results``) and the other (each of ``run_dirs``' best
    checkpoint scored again under it; the mean over them)."""
    from coldbrew.research.boards.board import convention_metrics
    from coldbrew.research.summary import is_aggregate, mean_std

    other = "split" if own == "all" else "all"
    values: dict[str, dict[str, float | None]] = {own: {}, other: {}}
    scored = [convention_metrics(path, other) for path in run_dirs]
    for half in ("val", "report"):
        value = monitored(results, half, monitor)
        values[own][half] = value["mean"] if is_aggregate(value) else value
        again = [run.get(half, {}).get(monitor.section, {}).get(monitor.metric) for run in scored]
        values[other][half] = None if None in again else mean_std(again)["mean"]
    return values


def joint_value(values: dict, half: str) -> float | None:
    """The geometric mean of both conventions' values on ``half`` (None where one is missing)."""
    both = [entry.get(half) for entry in values.values()]
    if any(value is None for value in both):
        return None
    return math.prod(both) ** (1 / len(both))


def monitored(results: dict, half: str, monitor) -> Any:
    """The monitored metric of a run's (or multi-seed run's) ``results`` on ``half`` (``val``,
    the select half, or ``report``): a value, a mean ± std mapping, or None."""
    section = (results.get("metrics") or {}).get(half, {}).get(monitor.section, {})
    return section.get(monitor.metric)


def record_results(trial, results: dict, monitor=None) -> None:
    """What the trial's run took, and with ``monitor`` its value on the report half (shown
    beside the select half's, never read to choose)."""
    from coldbrew.research.summary import is_aggregate, run_summary

    summary = results if "seeds" in results else run_summary(results)
    timing = summary.get("timing") or {}
    report = None if monitor is None else monitored(results, "report", monitor)
    for name, value in (
        ("best_epoch", summary.get("best_epoch")),
        ("epochs_run", summary.get("epochs_run")),
        ("seconds_to_best", timing.get("seconds_to_best")),
        ("samples_per_second", timing.get("samples_per_second")),
        ("report", report),
    ):
        trial.set_user_attr(name, value["mean"] if is_aggregate(value) else value)


def trial_line(
    trial, key: str, reported_key: str | None = None, space: SearchSpace | None = None
) -> str:
    """One finished trial: its state, value (``key``) and settings (``space``'s, where given:
    a drawn 0 as 0); a pruned trial's last reported value is named ``reported_key`` (the
    monitored metric, which a joint objective's pruning reads), or ``key``."""
    params = space.settings(trial.params) if space is not None else trial.params
    shown = ", ".join(f"{name}={format_value(value)}" for name, value in params.items())
    value = "" if trial.value is None else f" val {key} {trial.value:.4f}"
    if trial.state.name == "PRUNED" and trial.intermediate_values:
        best = trial.intermediate_values[max(trial.intermediate_values)]
        epoch = trial.user_attrs.get("pruned_at_epoch")
        value = f" after epoch {epoch}: best val {reported_key or key} so far {best:.4f}"
    return f"trial {trial.number} {trial.state.name.lower()}{value} ({shown})"


def format_value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
