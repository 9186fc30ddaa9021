"""Trained runs the accuracy benchmarks share: train a run once, take it again afterwards.

``train_or_take(settings, run_dir, dataset)`` trains ``run_dir`` with ``settings`` (the
options of ``coldbrew train``) unless it already holds a finished run of exactly those
settings, whose ``results.json`` it then returns. So the runs of one script are the runs of
another (the term-free runs of ``neighbor_accuracy.py`` are the runs ``protocol_difference.py``
re-scores), several processes can share the work (each given other seeds), and a script
stopped half-way resumes where it was. A run folder of other settings is an error, never
overwritten.
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path

# settings that change how a run is computed, not what it computes
IGNORED = ("quiet", "device", "log_every")


def flat(config: dict, prefix: str = "") -> dict:
    """``{"clcrec": {"dim": 64}}`` -> ``{"clcrec.dim": 64}``, without the ``IGNORED`` keys."""
    items = {}
    for key, value in config.items():
        if isinstance(value, dict):
            items.update(flat(value, f"{prefix}{key}."))
        elif key not in IGNORED:
            items[prefix + key] = value
    return items


def differences(saved: dict, wanted: dict, defaults: dict) -> list[str]:
    """Settings where a saved run differs from the wanted one. A setting the saved run lacks
    (an option added after it was trained) counts as what such a run was trained with
    (``ModelSpec.absent_options``), else as its default."""
    from coldbrew.config import with_absent_options

    saved = with_absent_options(copy.deepcopy(saved))
    saved, wanted, defaults = flat(saved), flat(wanted), flat(defaults)
    return [key for key, value in wanted.items() if saved.get(key, defaults.get(key)) != value]


def train_or_take(settings: dict, run_dir: Path, dataset) -> dict:
    """``results.json`` of ``run_dir``, trained now with ``settings`` if it has none."""
    from coldbrew.config import make_config
    from coldbrew.training.run import train

    config = make_config({"quiet": True, **settings})
    results_path = run_dir / "results.json"
    if results_path.exists():
        results = json.loads(results_path.read_text())
        defaults = make_config({"model": config.model}).to_dict()
        differ = differences(results["config"], config.to_dict(), defaults)
        if differ:
            raise SystemExit(f"{run_dir} holds a run with other {', '.join(differ)}")
        results["taken"] = True
        return results
    results = train(config, run_dir, dataset=dataset)
    results["taken"] = False
    return results


def mean_and_std(values: list[float]) -> dict:
    """Mean and sample standard deviation (``n − 1``; 0 for one value) with the values."""
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": spread, "values": values}


def seeds_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]
