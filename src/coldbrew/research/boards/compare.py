"""One table across runs: ``coldbrew compare RUN [RUN ...]``.

A row per run directory (a single run, or a multi-seed run shown as mean ± std over its
seeds): model, data, seeds, the settings that differ between the runs, the best epoch's metrics,
the best epoch, seconds of training and validation to the end of the best epoch, samples/s.
The metrics shown by default are the monitored one and NDCG at the same cut-off, on ``report``
(the validation items no choice read, ``coldbrew.data.splits.selection``; ``val`` for a run without
it, its column marked as also the items that chose) and (where the runs have it) on test;
``metrics`` names others as ``split/section/metric``.
A run whose cold scores were all equal shows "no cold signal" in its cold columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coldbrew.errors import ColdbrewError
from coldbrew.research.summary import (
    format_mean_std,
    is_aggregate,
    reported_split,
    run_summary,
)

NO_COLD_SIGNAL = "no cold signal"
IGNORED_SETTINGS = {"seed", "data", "model", "quiet", "log_every", "notes", "device"}


def load_results(run_dir: Path | str) -> dict[str, Any]:
    path = Path(run_dir) / "results.json"
    if not path.exists():
        seeds = sorted(Path(run_dir).glob("seed-*/results.json"))
        if seeds:  # the leaderboard's blends: one run per seed, no aggregate
            raise ColdbrewError(
                f"{run_dir} holds one run per seed, no aggregate: compare those runs "
                f"(e.g. {seeds[0].parent}) or read the leaderboard's table"
            )
        raise ColdbrewError(
            f"{run_dir} has no results.json (not a finished coldbrew run: interrupted? finish "
            f"it with coldbrew train --resume {run_dir})"
        )
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ColdbrewError(f"cannot read {path}: {error}") from None


def flat_config(results: Mapping[str, Any]) -> dict[str, Any]:
    """The run's settings and its model's options in one mapping."""
    config = dict(results.get("config") or {})
    model = config.get("model") or results.get("model")
    section = config.pop(model, None) if model else None
    return {**config, **(section if isinstance(section, Mapping) else {})}


def summary_of(results: Mapping[str, Any]) -> dict[str, Any]:
    """A single run's summary, or a multi-seed run's aggregates (the same nesting)."""
    return dict(results) if "seeds" in results else run_summary(results)


def default_metrics(all_results: Sequence[Mapping[str, Any]]) -> list[str]:
    """``split/section/metric`` keys: each run's monitored metric and NDCG at its cut-off, on
    report (val where the run has no report), then on test where a run has test metrics."""
    keys: list[str] = []
    for results in all_results:
        monitor = (results.get("early_stop") or {}).get("monitor") or ""
        section, _, metric = monitor.partition("/")
        _, at, cutoff = metric.partition("@")
        names = [metric] + ([f"ndcg@{cutoff}"] if at and not metric.startswith("ndcg") else [])
        recorded = summary_of(results).get("metrics") or {}
        splits = [reported_split(recorded)[0]] + (["test"] if "test" in recorded else [])
        keys += [f"{split}/{section}/{name}" for split in splits for name in names if section]
    return list(dict.fromkeys(keys))


def metric_value(summary: Mapping[str, Any], key: str) -> Any:
    split, _, rest = key.partition("/")
    section, _, name = rest.partition("/")
    return (((summary.get("metrics") or {}).get(split) or {}).get(section) or {}).get(name)


def check_metric_keys(keys: Sequence[str], summaries: Sequence[Mapping[str, Any]]) -> None:
    """Refuse a ``--metric`` that no run records (it showed as an empty column)."""
    recorded = [
        f"{split}/{section}/{name}"
        for summary in summaries
        for split, sections in (summary.get("metrics") or {}).items()
        for section, values in (sections or {}).items()
        for name in values or {}
    ]
    for key in keys:
        if key not in recorded:
            example = ", ".join(dict.fromkeys(recorded[:3])) or "none recorded"
            raise ColdbrewError(
                f"--metric {key!r} is in none of these runs' results: give split/group/metric "
                f"as they record it (e.g. {example})"
            )


def differing_settings(all_results: Sequence[Mapping[str, Any]]) -> list[str]:
    configs = [flat_config(results) for results in all_results]
    keys = list(dict.fromkeys(key for config in configs for key in config))
    differing = []
    for key in keys:  # a key a run does not record (an older run) is not counted as differing
        values = {json.dumps(config[key], sort_keys=True) for config in configs if key in config}
        if key not in IGNORED_SETTINGS and len(values) > 1:
            differing.append(key)
    return differing


def column_name(key: str) -> str:
    """A metric key as a column title: ``val`` is marked as the items that chose."""
    split, _, rest = key.partition("/")
    return f"val (chose)/{rest}" if split == "val" else key


def _number(value: Any, digits: int) -> str:
    if is_aggregate(value):
        return format_mean_std(value, digits)
    return format_mean_std(value, digits) if value is not None else "-"


def no_cold_signal(summary: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` (``split/section/metric``) is a cold metric of a run (or some seed of a
    multi-seed run) whose cold scores were all equal: it then measures how ties fell."""
    split, _, rest = key.partition("/")
    if rest.partition("/")[0] != "cold":
        return False
    flag = metric_value(summary, f"{split}/cold/cold_signal")
    flags = flag["values"] if is_aggregate(flag) else [flag]
    return any(value == 0.0 for value in flags)


def compare_table(
    run_dirs: Sequence[Path | str], metrics: Sequence[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the comparison, every cell text."""
    if not run_dirs:
        raise ColdbrewError("compare needs at least one run directory")
    all_results = [load_results(run_dir) for run_dir in run_dirs]
    metric_keys = list(metrics) if metrics else default_metrics(all_results)
    if metrics:
        check_metric_keys(metric_keys, [summary_of(results) for results in all_results])
    settings = differing_settings(all_results)
    header = ["run", "model", "data", "seeds", *settings, *map(column_name, metric_keys)]
    header += ["best epoch", "s to best", "samples/s"]
    rows = []
    for run_dir, results in zip(run_dirs, all_results, strict=True):
        summary, config = summary_of(results), flat_config(results)
        seeds = results.get("seeds") or [config.get("seed", "-")]
        timing = summary.get("timing") or {}
        row = [str(run_dir), str(results.get("model", "-"))]
        row += [str((results.get("dataset") or {}).get("name", "-"))]
        row += [",".join(str(seed) for seed in seeds)]
        row += [
            json.dumps(config.get(key))
            if isinstance(config.get(key), list)
            else str(config.get(key, "-"))
            for key in settings
        ]
        row += [
            NO_COLD_SIGNAL
            if no_cold_signal(summary, key)
            else _number(metric_value(summary, key), 4)
            for key in metric_keys
        ]
        row += [
            _number(summary.get("best_epoch"), 1 if "seeds" in results else 0),
            _number(timing.get("seconds_to_best"), 1),
            _number(timing.get("samples_per_second"), 0),
        ]
        rows.append(row)
    return header, rows


def unscored_runs(run_dirs: Sequence[Path | str]) -> list[str]:
    """The runs among ``run_dirs`` with no metric at all: trained on data with no cold split
    (no val/test files, no ``--cold-split``), or a board's final runs on such data."""
    return [
        str(run_dir) for run_dir in run_dirs if not summary_of(load_results(run_dir)).get("metrics")
    ]


def format_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, markdown: bool = False
) -> str:
    """Aligned text, or a Markdown table (``markdown``)."""
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(line[column]) for line in (header, *rows)) for column in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in (header, *rows)
    )
