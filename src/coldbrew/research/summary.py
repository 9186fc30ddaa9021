"""What a finished run is summarised by, and mean ± std of such summaries over seeds.

A run's summary is its best epoch's metrics (``metrics.<split>.<section>.<metric>``), its
timing (``train_seconds``, ``eval_seconds``, ``wall_seconds``, ``samples_per_second``, and
``seconds_to_best``: training plus validation up to the end of the best epoch), ``best_epoch``
and ``epochs_run``. Aggregating replaces every number by ``{"mean", "std", "n", "values"}``:
``std`` is the sample standard deviation (divisor n − 1; None for one value), computed over the
values that are numbers (a metric JSON wrote as null, being NaN, is left out and ``n`` says so).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

SUMMARY_KEYS = ("metrics", "timing", "best_epoch", "epochs_run")


def seconds_to_best(results: Mapping[str, Any]) -> float | None:
    """Training plus validation seconds up to the end of the best epoch (from the history)."""
    for entry in results.get("history") or []:
        if entry.get("epoch") == results.get("best_epoch"):
            return float(entry["train_seconds"]) + float(entry["eval_seconds"])
    return None


def run_summary(results: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of one run's ``results.json`` that seeds are compared on."""
    timing = dict(results.get("timing") or {})
    timing["seconds_to_best"] = seconds_to_best(results)
    return {
        "metrics": results.get("metrics") or {},
        "timing": timing,
        "best_epoch": results.get("best_epoch"),
        "epochs_run": results.get("epochs_run"),
    }


def reported_split(metrics: Mapping[str, Any] | None) -> tuple[str, str]:
    """``(split, label)`` a table reports from a run's ``metrics``: ``"report"`` (the validation
    items no choice read, ``coldbrew.data.splits.selection``) where the run has it, else ``"val"``,
    labelled as also used to choose (a run with ``report_share`` 0)."""
    if "report" in (metrics or {}):
        return "report", "report"
    return "val", "val (also chose)"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def mean_std(values: Sequence[Any]) -> dict[str, Any]:
    """``{"mean", "std", "n", "values"}`` of the numbers in ``values`` (others are skipped)."""
    numbers = [float(value) for value in values if is_number(value)]
    count = len(numbers)
    mean = sum(numbers) / count if count else None
    std = None
    if count > 1:
        std = math.sqrt(sum((value - mean) ** 2 for value in numbers) / (count - 1))
    return {"mean": mean, "std": std, "n": count, "values": list(values)}


def aggregate(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The same nesting as one summary, each number replaced by its ``mean_std`` across
    ``summaries``; a key missing from some summaries counts as None there."""
    keys = list(dict.fromkeys(key for summary in summaries for key in summary))
    merged: dict[str, Any] = {}
    for key in keys:
        values = [summary.get(key) for summary in summaries]
        if any(isinstance(value, Mapping) for value in values):
            merged[key] = aggregate(
                [value if isinstance(value, Mapping) else {} for value in values]
            )
        elif any(is_number(value) for value in values) or all(value is None for value in values):
            merged[key] = mean_std(values)
    return merged


def is_aggregate(value: Any) -> bool:
    return isinstance(value, Mapping) and "mean" in value and "values" in value


def format_mean_std(value: Any, digits: int = 4) -> str:
    """``0.1123 ± 0.0040`` for an aggregate, ``0.1123`` for a number, ``-`` for nothing."""
    if is_aggregate(value):
        if value["mean"] is None:
            return "-"
        if value["std"] is None:
            return f"{value['mean']:.{digits}f}"
        return f"{value['mean']:.{digits}f} ± {value['std']:.{digits}f}"
    if is_number(value):
        return f"{value:.{digits}f}"
    return "-"
