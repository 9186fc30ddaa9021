"""``coldbrew leaderboard --folds K``: each model cross-validated over cold-item folds, then
trained once more on every training item; validation, read by no choice, reports.

For each model, fold ``k`` of K (``coldbrew.data.splits.folds``) is a multi-seed run in
``OUT/folds/MODEL/fold-k`` that holds out the fold's training items and early-stops on them,
never before ``min_epochs`` (a fold run's default floor, ``TrainConfig.resolved_min_epochs``).
The number of epochs is then chosen from the mean fold curve: the monitored metric of every fold
run of the model (every fold and seed), epoch by epoch, averaged over the epochs that every one
of them reached; its first maximum is the count (a model with nothing to train has one). The
final run, ``OUT/MODEL`` (a multi-seed run as a leaderboard without folds makes), trains on
every training item for that many epochs and keeps the last: it chooses nothing, and is scored
on the data's whole validation split (``report``) and its test split.

A blend's weights are chosen on the folds: the grid point with the best mean, over every fold
and seed, of the blend's fold score (``coldbrew.research.boards.blend.choose_weights``). The fold runs
blended with those weights are the blend's fold runs (``OUT/folds/BLEND/fold-k``), and the final
runs blended with them its final runs (``OUT/BLEND``), so a blend of blends works as without
folds. Everything is resumable: a finished run is read back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend_names import Member, blend_name, member_name
from coldbrew.research.boards.model_runs import BoardPlan, RunUnit, train_units

FOLDS_DIR = "folds"


def fold_dir(out: Path, name: str, fold: int) -> Path:
    """The multi-seed run of ``name`` (a model or a blend) holding out fold ``fold``."""
    return out / FOLDS_DIR / name / f"fold-{fold}"


def fold_unit(
    config: TrainConfig,
    seeds: Sequence[int],
    out: Path,
    fold: int,
    conventions: Sequence[str] = (),
    row: str = "",
) -> RunUnit:
    """One row's run holding out fold ``fold`` (``config``: the row's board settings; ``row``:
    its name, the model's when empty), scored under ``conventions`` where it is trained."""
    row = row or config.model
    fold_config = config.copy_with(fold=fold)
    return RunUnit(fold_config, tuple(seeds), fold_dir(out, row, fold), tuple(conventions), row)


def final_unit(
    config: TrainConfig,
    seeds: Sequence[int],
    out: Path,
    epochs: int,
    conventions: Sequence[str] = (),
    row: str = "",
) -> RunUnit:
    """One row's final run: every training item, ``epochs`` epochs."""
    row = row or config.model
    final_config = config.copy_with(fold=None, epochs=epochs)
    return RunUnit(final_config, tuple(seeds), out / row, tuple(conventions), row)


def fold_units(plan: BoardPlan) -> dict[str, RunUnit]:
    """``{"clcrec/fold-2": its unit}``: every fold of every row, row by row."""
    units = [
        fold_unit(config, plan.seeds, plan.out, fold, plan.conventions, name)
        for name, config in plan.rows().items()
        for fold in range(plan.folds)
    ]
    return {unit.name: unit for unit in units}


def fold_curve(
    out: Path, row: str, folds: int, seeds: Sequence[int], seen: dict | None = None
) -> tuple[str, list[float]]:
    """The metric ``row``'s folds early-stopped on and its mean fold curve (``mean_curve``),
    from the fold runs' results (``seen``: ``fold_histories``)."""
    monitor = read_monitor(fold_dir(out, row, 0) / "results.json")
    return monitor, mean_curve(fold_histories(out, row, folds, seeds, seen), monitor)


def fold_histories(
    out: Path, name: str, folds: int, seeds: Sequence[int], seen: dict | None = None
) -> list[list[dict]]:
    """Every fold run's epoch history (``results.json``'s ``history``), fold by fold, seed by
    seed. ``seen``, shared by a board's rows: the own-split candidate counts met so far
    (``check_candidates``)."""
    from coldbrew.research.seeds import seed_dir

    histories = []
    for fold in range(folds):
        for seed in seeds:
            path = seed_dir(fold_dir(out, name, fold), seed) / "results.json"
            results = json.loads(path.read_text())
            check_floor(results, path)
            if seen is not None:
                check_candidates(results, path, seen)
            histories.append(results["history"])
    return histories


def check_floor(results: dict, path: Path) -> None:
    """A fold run trained before fold runs had a floor, and stopped below it, is refused: its
    early stop would decide the mean fold curve again."""
    from coldbrew.config.run_options import min_epochs_floor

    if "min_epochs" in results.get("early_stop", {}) or results.get("stopped") != "early_stop":
        return
    config = results["config"]
    floor = min_epochs_floor(config.get("min_epochs"), config["epochs"], fold_run=True)
    if results["epochs_run"] < floor:
        raise ColdbrewError(
            f"{path.parent}: trained before fold runs had a floor, it stopped after epoch "
            f"{results['epochs_run']}, below {floor}; give another --out, or --min-epochs 0 to "
            "keep its rule"
        )


def check_candidates(results: dict, path: Path, seen: dict[int, Path]) -> None:
    """Every fold run of a board ranked its fold's items among as many cold items under
    own-split (``fold_candidates``; ``seen``: each count met so far, and a run that had it). A
    run trained before the option ranked its fold's items alone, on another scale than a padded
    run's: such a mix is refused."""
    cut = results.get("dataset", {}).get("cross_validation", {})
    seen.setdefault(cut.get("fold_candidates", 0), path.parent)
    if len(seen) > 1:
        runs = "; ".join(f"{count} in {run}" for count, run in sorted(seen.items()))
        raise ColdbrewError(
            f"the fold runs ranked own-split among different numbers of cold items "
            f"(fold_candidates: {runs}); runs trained before --fold-candidates ranked a fold's "
            "items alone: give another --out"
        )


def mean_curve(histories: Sequence[Sequence[dict]], monitor: str) -> list[float]:
    """The monitored metric (``"cold/recall@20"``), epoch by epoch, averaged over the runs, up
    to the last epoch every run reached."""
    section, metric = monitor.split("/")
    length = min(len(history) for history in histories)
    if length == 0:
        raise ColdbrewError("a fold run has no evaluated epoch: nothing to choose epochs from")
    curves = [[entry["val"][section][metric] for entry in h[:length]] for h in histories]
    return [sum(values) / len(values) for values in zip(*curves, strict=True)]


def chosen_epochs(curve: Sequence[float]) -> int:
    """The epoch (1-based) of the mean curve's first maximum."""
    return max(range(len(curve)), key=lambda index: (curve[index], -index)) + 1


def cross_validate_models(
    plan: BoardPlan, *, jobs: int | str, cache: Any, log: Callable[[str], None]
) -> dict[str, dict]:
    """``{row: {"final": its final multi-seed results, "epochs", "curve"}}``: every fold of
    every row first (``jobs`` at once), then each row's final run."""
    train_units(fold_units(plan), jobs, cache, log)
    finals, results, seen = {}, {}, {}
    for name, config in plan.rows().items():
        monitor, curve = fold_curve(plan.out, name, plan.folds, plan.seeds, seen)
        epochs = chosen_epochs(curve)
        log(f"{name}: {epochs} epoch(s), the mean fold curve's best ({monitor})")
        results[name] = {"epochs": epochs, "curve": curve, "monitor": monitor}
        finals[name] = final_unit(config, plan.seeds, plan.out, epochs, plan.conventions, name)
    for name, final in train_units(finals, jobs, cache, log).items():
        results[name]["final"] = final
    return results


def read_monitor(results_path: Path) -> str:
    """The monitored metric (``"cold/recall@20"``) a multi-seed run early-stopped on."""
    return json.loads(results_path.read_text())["early_stop"]["monitor"]


def blend_on_folds(
    blends: Sequence[Sequence[Member]],
    seeds: Sequence[int],
    out: Path,
    folds: int,
    *,
    objective: str,
    cache: Any,
    log: Callable[[str], None],
) -> dict[str, dict]:
    """``{blend name: {"weights", "final": {"seeds", "per_seed", "parts"}}}``: each blend's
    weights chosen on every fold and seed at once, then its fold runs and final runs written
    with them (read back when there)."""
    from coldbrew.research.boards.blend import blend, check_objective
    from coldbrew.research.seeds import seed_dir

    check_objective(objective)
    results = {}
    for members in blends:
        name = blend_name(members)
        parts = [member_name(member) for member in members]
        fold_runs = {
            (fold, seed): [seed_dir(fold_dir(out, part, fold), seed) for part in parts]
            for fold in range(folds)
            for seed in seeds
        }
        weights = fold_weights(name, out, fold_runs, objective, cache, log)
        options = {"weights": weights, "resume": True, "chosen_by": objective}
        options |= {"overrides": {"quiet": True}, "log": log, "load_data": cache}
        for (fold, seed), runs in fold_runs.items():
            target = seed_dir(fold_dir(out, name, fold), seed)
            if not (target / "results.json").exists():
                blend(runs, target, **options)
        per_seed = {}
        for seed in seeds:
            target = seed_dir(out / name, seed)
            if (target / "results.json").exists():
                per_seed[seed] = json.loads((target / "results.json").read_text())
            else:
                per_seed[seed] = blend([seed_dir(out / p, seed) for p in parts], target, **options)
        final = {"seeds": list(seeds), "per_seed": per_seed, "parts": parts}
        results[name] = {"weights": weights, "final": final}
    return results


def fold_weights(
    name: str, out: Path, fold_runs: dict, objective: str, cache: Any, log: Callable[[str], None]
) -> list[float]:
    """The blend's weights: read back from a fold run written before (refused if another
    objective chose them), else chosen on the folds."""
    from coldbrew.research.boards.blend import choose_weights
    from coldbrew.research.seeds import seed_dir
    from coldbrew.training.blend import run_vectors
    from coldbrew.training.run import CONFIG

    fold, seed = next(iter(fold_runs))
    written = seed_dir(fold_dir(out, name, fold), seed)
    if (written / CONFIG).exists():
        options = load_saved_config_of(written)["blend"]
        if options.get("chosen_by") != objective:
            raise ColdbrewError(
                f"{written}: its weights were chosen by the {options.get('chosen_by')} "
                f"objective, not {objective}; give another --out, or that --blend-objective"
            )
        return list(options["weights"])
    sets = []
    for (_, seed), runs in fold_runs.items():
        config = make_config(load_saved_config_of(runs[0]), {"quiet": True, "device": "cpu"})
        dataset = cache(config)
        components = [run_vectors(run, dataset, seed, load_data=cache) for run in runs]
        sets.append((dataset, components))
    convention = config.cold_candidates  # the blend's convention: its first run's
    log(f"{name}: weights chosen on {len(sets)} folds x seeds ({objective} objective)")
    weights, _ = choose_weights(sets, convention, objective=objective, log=log)
    return weights


def load_saved_config_of(run_dir: Path) -> dict:
    from coldbrew.config import load_saved_config
    from coldbrew.training.run import CONFIG

    return load_saved_config(run_dir / CONFIG)


def fold_row(
    row: dict,
    out: Path,
    folds: int,
    conventions: Sequence[str],
    *,
    parts: dict[str, list[str]],
    epochs: int | None,
    cache: Any,
) -> dict:
    """``row`` (``coldbrew.research.boards.board.model_row`` of the final runs) with its folds: every
    fold run's best checkpoint scored on its fold under each convention, ``"folds"`` as mean ±
    std over folds × seeds per metric of the cold group, ``"fold_values"`` each fold and
    seed's Recall@20 (what the paired test pairs), ``"fold_seconds"`` per seed (the blended
    runs' with a blend's), and the final runs' ``"epochs"``."""
    from coldbrew.research.boards.board import METRICS, convention_metrics
    from coldbrew.research.seeds import seed_dir
    from coldbrew.research.summary import mean_std

    name, seeds = row["model"], row["seeds"]
    runs = {(f, s): seed_dir(fold_dir(out, name, f), s) for f in range(folds) for s in seeds}
    summary, values = {}, {}
    for convention in conventions:
        cold = {
            key: convention_metrics(run, convention, cache)["val"]["cold"]
            for key, run in runs.items()
        }
        summary[convention] = {
            metric: mean_std([each.get(metric) for each in cold.values()]) for metric in METRICS
        }
        values[convention] = [[f, s, each.get("recall@20")] for (f, s), each in cold.items()]
    seconds = [fold_seconds(name, out, folds, seed, parts) for seed in seeds]
    return row | {
        "folds": summary,
        "fold_values": values,
        "fold_seconds": mean_std(seconds),
        "epochs": epochs,
    }


def fold_seconds(name: str, out: Path, folds: int, seed: int, parts: dict) -> float:
    """One seed's seconds over every fold of ``name``, its blended runs' included."""
    from coldbrew.research.boards.board import run_seconds
    from coldbrew.research.seeds import seed_dir

    own = sum(
        run_seconds(
            json.loads((seed_dir(fold_dir(out, name, f), seed) / "results.json").read_text())
        )
        for f in range(folds)
    )
    return own + sum(fold_seconds(part, out, folds, seed, parts) for part in parts.get(name, ()))


def lead_scores(rows: Sequence[dict], convention: str) -> dict[str, dict[tuple, float]]:
    """Each row's ``{(fold, seed): Recall@20}`` under ``convention``, for the paired test."""
    return {
        row["model"]: {
            (fold, seed): value
            for fold, seed, value in row["fold_values"].get(convention, [])
            if value is not None
        }
        for row in rows
    }


def cross_validated_board(
    plan: BoardPlan,
    conventions: Sequence[str],
    *,
    objective: str,
    jobs: int | str,
    cache: Any,
    log: Callable[[str], None],
) -> dict:
    """A leaderboard's ``{"rows", "leads"}`` on ``plan.folds`` folds: every model
    cross-validated and trained once more (``cross_validate_models``), every blend's weights
    chosen on the folds (``blend_on_folds``); each row's fold scores and its final runs' report,
    and per convention the best row by fold Recall@20 against every other
    (``coldbrew.research.boards.paired``)."""
    from coldbrew.research.boards.board import model_row
    from coldbrew.research.boards.paired import paired_leads

    out, folds = plan.out, plan.folds
    trained = cross_validate_models(plan, jobs=jobs, cache=cache, log=log)
    options = {"objective": objective, "cache": cache, "log": log}
    blended = blend_on_folds(plan.blends, plan.seeds, out, folds, **options)
    finals = {name: entry["final"] for name, entry in (trained | blended).items()}
    parts = {name: entry["final"]["parts"] for name, entry in blended.items()}
    rows = []
    for name in finals:
        row = model_row(name, finals, out, conventions, cache)
        epochs = trained.get(name, {}).get("epochs")
        rows.append(fold_row(row, out, folds, conventions, parts=parts, epochs=epochs, cache=cache))
    leads = {c: paired_leads(lead_scores(rows, c), folds) for c in conventions}
    return {"rows": rows, "leads": leads}
