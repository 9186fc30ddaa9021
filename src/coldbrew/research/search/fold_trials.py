"""A search trial on cold-item folds (``--folds K``): one multi-seed run per fold
(``TRIAL/fold-k``), each early-stopping on its fold (not before a fold run's ``min_epochs``);
the trial's value is the mean over the folds of its monitored validation metric (each fold's
own mean over seeds), or with the joint objective the geometric mean of both conventions' fold
means. A fold's run holds no report split (``coldbrew.data.splits.folds``), so no trial reads
the items that report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coldbrew.config import TrainConfig
from coldbrew.research.search.trial_values import convention_values, joint_value, monitored


def fold_trial(
    config: TrainConfig,
    run_dir: Path,
    seeds: Sequence[int] | None,
    *,
    cache: Callable,
    monitor: Any,
    kind: str,
    options: dict,
) -> tuple[float | None, dict]:
    """``(value, {convention: {"val": fold mean}})`` of ``config`` trained on each of its folds
    (``config.fold`` is ignored: every fold is trained)."""
    from coldbrew.research.seeds import train_seeds

    own, per_fold = [], []
    for fold in range(config.folds):
        fold_config = config.copy_with(fold=fold)
        fold_dir = run_dir / f"fold-{fold}"
        results = train_seeds(
            fold_config, fold_dir, list(seeds or [config.seed]), load_data=cache, **options
        )
        value = monitored(results, "val", monitor)
        own.append(value["mean"] if isinstance(value, dict) else value)
        if kind == "joint":
            dirs = [fold_dir / f"seed-{seed}" for seed in seeds or [config.seed]]
            per_fold.append(convention_values(results, dirs, config.cold_candidates, monitor))
    if kind != "joint":
        return mean(own), {}
    values = {
        convention: {"val": mean([entry[convention]["val"] for entry in per_fold])}
        for convention in per_fold[0]
    }
    return joint_value(values, "val"), values


def mean(values: Sequence[float | None]) -> float | None:
    return None if None in values else sum(values) / len(values)
