"""What a finished search leaves: the table of trials (printed and ``STUDY/trials.json``) and the
best trial's settings as a preset (``STUDY/best.yaml``) for ``coldbrew train --config``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from coldbrew.config import canonical_key, make_config
from coldbrew.research.boards.compare import format_table

TRIALS_JSON = "trials.json"
BEST_PRESET = "best.yaml"


def trial_rows(study, space) -> list[dict[str, Any]]:
    """One row per trial: number, state, objective value, settings (``space.settings``), and
    what its run took; a trial started past a shared study's total (surplus) has none."""
    from coldbrew.research.search.shared_study import SURPLUS, interrupted_trials

    interrupted = interrupted_trials(study)
    rows = []
    for trial in study.trials:
        attrs = trial.user_attrs
        if SURPLUS in attrs:
            continue
        state = "interrupted" if trial.number in interrupted else trial.state.name.lower()
        reported = trial.intermediate_values
        rows.append(
            {
                "trial": trial.number,
                "state": state,
                "value": trial.value,
                "report": attrs.get("report"),  # the report half: shown, never chosen on
                "conventions": attrs.get("conventions"),  # a joint objective's parts
                "params": space.settings(trial.params),
                "best_epoch": attrs.get("best_epoch"),
                "epochs_run": attrs.get("epochs_run", attrs.get("pruned_at_epoch")),
                "last_reported": reported[max(reported)] if reported else None,
                "seconds_to_best": attrs.get("seconds_to_best"),
                "samples_per_second": attrs.get("samples_per_second"),
                "run_dir": attrs.get("run_dir"),
            }
        )
    return rows


def _cell(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return (
            f"{value:.{digits}g}"
            if abs(value) < 1e-3 or abs(value) >= 1e4
            else f"{value:.{digits}f}"
        )
    return str(value)


def format_trials_table(rows: Sequence[Mapping[str, Any]], key: str) -> str:
    """An aligned text table; a pruned trial shows its last reported value, marked ~ (the best
    validation value before it was stopped), which a line under the table names: in a joint
    study (``key`` "joint ...") that value is the monitored metric's, not a joint value."""
    names = list(dict.fromkeys(name for row in rows for name in row["params"]))
    header = ["trial", "state", f"val {key}", "report", "best epoch", "epochs", "s to best"]
    header += names
    cells = []
    for row in rows:
        value = _cell(row["value"])
        if row["state"] == "pruned" and row["last_reported"] is not None:
            value = f"~{_cell(row['last_reported'])}"
        seconds = row["seconds_to_best"]
        cells.append(
            [
                str(row["trial"]),
                row["state"],
                value,
                _cell(row.get("report")),
                _cell(row["best_epoch"]),
                _cell(row["epochs_run"]),
                "-" if seconds is None else f"{seconds:.1f}",
                *(_cell(row["params"].get(name)) for name in names),
            ]
        )
    table = format_table(header, cells)
    if any(row["state"] == "pruned" and row["last_reported"] is not None for row in rows):
        monitored = key.removeprefix("joint ")
        table += f"\n~ pruned: its best val {monitored} before it was stopped"
        if monitored != key:
            table += f" (its own convention's alone, not a {key})"
    return table


# how the search ran, not what the best trial trained: left out of best.yaml
NOT_PRESET = ("model", "quiet", "log_every", "patience")


def best_preset(base_layers: Sequence[dict], params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings given to the search (preset, flags, fixed values of the space) with the
    best trial's values, typed as the configuration has them."""
    from coldbrew.registry import MODELS
    from coldbrew.training.run import flat_settings

    config = make_config(*base_layers, dict(params))
    flat = flat_settings(config)
    given: list[str] = []
    for layer in (*base_layers, params):
        for key, value in layer.items():
            name = canonical_key(str(key))
            if name in MODELS and isinstance(value, Mapping):
                given += [canonical_key(str(inner)) for inner in value]
            else:
                given.append(name)
    keys = [key for key in dict.fromkeys(given) if key in flat and key not in NOT_PRESET]
    return {"model": config.model, **{key: flat[key] for key in keys}}


def finish_study(study, base_layers: Sequence[dict], space, out: Path, key: str) -> dict[str, Any]:
    """Write ``trials.json`` and (when a trial completed) ``best.yaml``; return both."""
    from optuna.trial import TrialState

    from coldbrew.training.run import write_json, write_text

    rows = trial_rows(study, space)
    write_json(
        {"monitor": key, "direction": study.direction.name.lower(), "trials": rows},
        out / TRIALS_JSON,
    )
    completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    result: dict[str, Any] = {"rows": rows, "monitor": key, "best": None, "preset": None}
    if not completed:
        return result
    best = study.best_trial
    params = space.settings(best.params)
    preset = best_preset(base_layers, params)
    header = (
        f"# coldbrew search: the best of {len(completed)} completed trials in {out}: trial "
        f"{best.number}, val {key} = {best.value:.4f}\n"
        f"# searched: {', '.join(space.dimensions)}\n"
    )
    write_text(header + yaml.safe_dump(preset, sort_keys=False), out / BEST_PRESET)
    result.update(best={"trial": best.number, "value": best.value, "params": params})
    result["preset"] = str(out / BEST_PRESET)
    return result
