"""Hyper-parameter search with Optuna: TPE over a ``SearchSpace``, pruning by the median rule,
the study stored in ``STUDY/study.db`` (SQLite) so running the same command again continues it,
or with ``storage`` in a database or journal file that many workers share
(``coldbrew.research.search.shared_study``).

Each trial is a training run in ``STUDY/trial-NNN/`` (with ``seeds``, a multi-seed run). Its
objective is the best validation value of the task's monitored metric (the mean over seeds).
After each epoch the trial reports the best monitored value so far to the median pruner (step =
epoch; with seeds, seed k's epochs follow seed k−1's): a trial whose value after an epoch is
worse than the median of earlier trials' at the same epoch stops there. ``startup_trials``
trials are drawn at random before TPE models the space, and none is pruned before that many
have finished or before epoch ``warmup_epochs``. ``trials`` is the study's total: a resumed
study runs the rest; a trial cut short by an interruption is marked failed and its settings are
tried again first (Optuna's retry callback, up to three times). ``timeout`` stops starting trials after that many seconds (a running trial
finishes or is pruned). A trial that fails (e.g. a non-finite loss) is recorded and the search
goes on. At the end: ``STUDY/trials.json`` (the table) and ``STUDY/best.yaml``, the best
trial's settings as a preset for ``coldbrew train --config``.

``objective="joint"`` (recommendation with cold items): a trial's value is the geometric mean of
its select-half cold metric under both cold-candidate conventions, the run's own
(``--cold-candidates``, which early stopping and pruning read) and the other, for which each
seed's best checkpoint is scored again (``evaluation-<convention>.json`` in its run, as the
leaderboard writes). The two conventions' values differ about fourfold in scale; their geometric
mean counts a relative gain in either alike, so neither decides alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.search.report import finish_study
from coldbrew.research.search.shared_study import (
    MAX_RETRIES,
    STORAGE_FILE,
    SURPLUS,
    interrupted_trials,
    mark_interrupted,
    retry_callback,
)
from coldbrew.research.search.space import SearchSpace
from coldbrew.research.search.trial_values import (
    convention_values,
    joint_value,
    monitored,
    record_results,
    trial_line,
)

STUDY_DB = "study.db"
STUDY_NAME = "coldbrew"
UNSEARCHABLE = {"model": "the model", "early_stop_metric": "the objective"}
OBJECTIVES = ("monitored", "joint")
HEARTBEAT = 60  # seconds between a shared study's heartbeats; silent for twice that: dead


class DataCache:
    """Each distinct dataset the trials need, loaded once (a split may depend on the seed), then
    cut as each run says (select/report halves, or a fold: ``coldbrew.tasks.select_and_report``).

    Keyed by what ``coldbrew.tasks.load_data`` reads: the task's kind (not the model, so the
    models of a leaderboard share one load per seed), the data, the series, and
    ``coldbrew.tasks.dataset_options`` (whether the model reads the text block: the LM does
    not; the layout, features, text encoder, seed and pickle trust)."""

    def __init__(self) -> None:
        self.loaded: dict[tuple, Any] = {}
        self.cut: dict[tuple, Any] = {}

    def __call__(self, config: TrainConfig) -> Any:
        from coldbrew.registry import model_spec
        from coldbrew.tasks import cut_options, dataset_options, load_data, select_and_report

        task = model_spec(config.model).task
        key = (task, config.data, getattr(config.model_options, "series", None))
        key += tuple((name, str(value)) for name, value in dataset_options(config).items())
        if key not in self.loaded:
            self.loaded[key] = load_data(task, config, select=False)
        cut = cut_options(config)
        if (key, cut) not in self.cut:
            self.cut[key, cut] = select_and_report(self.loaded[key], config)
        return self.cut[key, cut]


class PruningHook:
    """``on_epoch_end``: report the best monitored value so far; stop the trial when the
    pruner says so. A new seed's run (its epochs start again) continues the steps. A model that
    trains nothing (``prune=False``: one evaluation per run) is reported but never stopped:
    its run is already over, and stopping it would only lose its results."""

    def __init__(self, trial, epochs: int, prune: bool = True):
        self.trial, self.epochs, self.prune = trial, epochs, prune
        self.offset, self.last_epoch = 0, 0

    def __call__(self, state) -> None:
        import optuna

        if state.epoch <= self.last_epoch:
            self.offset += self.epochs
        self.last_epoch = state.epoch
        if state.best_score is None:
            return
        self.trial.report(state.best_score, self.offset + state.epoch)
        if self.prune and self.trial.should_prune():
            self.trial.set_user_attr("pruned_at_epoch", state.epoch)
            raise optuna.TrialPruned(f"pruned after epoch {state.epoch}")


def check_study_dir(out: Path) -> None:
    from coldbrew.training.run_dir import check_out_dir

    check_out_dir(out)
    if (out / STORAGE_FILE).exists():
        raise ColdbrewError(
            f"{out} holds trials of a shared study ({out / STORAGE_FILE} names it); "
            "give its --storage, or choose another --out"
        )
    if out.exists() and not (out / STUDY_DB).exists():
        if any(path.name != ".lock" for path in out.iterdir()):
            raise ColdbrewError(f"{out} is not empty and holds no study; choose another --out")


def task_monitor(config: TrainConfig, dataset: Any):
    """The monitored metric (key and direction) of ``config``'s task on ``dataset``."""
    import torch

    from coldbrew.registry import model_spec
    from coldbrew.tasks import build_task

    return build_task(model_spec(config.model).task, dataset, config, torch.device("cpu")).monitor


# the study's identity: what a trial trains, so its trials stay comparable (a run may resume
# with more epochs, but a study whose trials had another budget would mix two searches)
STUDY_BUDGET = ("epochs", "patience", "min_epochs")


def search_settings(
    base: TrainConfig,
    space: SearchSpace,
    seeds: Sequence[int] | None,
    objective: str = "monitored",
) -> dict:
    """What identifies a study: settings that change what a trial trains (its epochs and
    patience included), the space, the seeds, and the objective where it is not the default
    (so a study saved before objectives existed still resumes)."""
    from coldbrew.training.run import RESUMABLE_OVERRIDES, flat_settings

    runtime_only = RESUMABLE_OVERRIDES - set(STUDY_BUDGET)
    flat = {k: v for k, v in flat_settings(base).items() if k not in runtime_only}
    settings = {"base": flat, "space": space.to_dict(), "seeds": seeds}
    if objective != "monitored":
        settings["objective"] = objective
    return json.loads(json.dumps(settings))


def open_study(
    out: Path,
    direction: str,
    settings: dict,
    startup: int,
    warmup: int,
    seed: int,
    storage=None,
    name: str = STUDY_NAME,
):
    """The study ``name`` in ``storage`` (an Optuna storage; default ``out/study.db``), created
    with ``settings`` or checked against them; its TPE sampler seeded by ``seed`` and how far
    the study got (and, in shared storage, by the worker: workers starting together draw
    differently). ``(study, created)``."""
    import zlib

    import optuna

    from coldbrew.research.claims.units import worker_name
    from coldbrew.research.search.shared_study import create_or_load, saved_settings

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    shared = storage is not None
    storage = storage if shared else f"sqlite:///{(out / STUDY_DB).resolve()}"
    pruner = optuna.pruners.MedianPruner(n_startup_trials=startup, n_warmup_steps=warmup)
    study, created = create_or_load(name, storage, direction, pruner)
    saved = None if created else saved_settings(study, wait=10.0 if shared else 0.0)
    if saved is not None and not any(key in saved["base"] for key in STUDY_BUDGET):
        # saved before the budget was part of a study's identity: it cannot be checked
        saved["base"].update({key: settings["base"][key] for key in STUDY_BUDGET})
        study.set_user_attr("settings", saved)
    if saved is None:
        study.set_user_attr("settings", settings)
    elif saved != settings:
        raise ColdbrewError(
            f"{'the study ' + repr(name) if shared else out} holds a study with other settings "
            f"({', '.join(changed_settings(saved, settings))}); run it with its own settings or "
            f"choose another {'--study-name' if shared else '--out'}"
        )
    if study.direction.name.lower() != direction:
        raise ColdbrewError(f"{out} holds a study that does not {direction} the metric")
    # seeded by how far the study got, so a resumed study does not redraw its first trials
    seed += len(study.trials) + (zlib.crc32(worker_name().encode()) if shared else 0)
    study.sampler = optuna.samplers.TPESampler(n_startup_trials=startup, seed=seed % 2**32)
    return study, created


def changed_settings(saved: dict, settings: dict) -> list[str]:
    """The settings (``part.key``, or ``part``) where ``saved`` and ``settings`` differ."""
    parts = set(saved) | set(settings)
    return sorted(
        f"{part}.{key}"
        for part in parts
        if isinstance(settings.get(part), dict)
        for key in set(saved.get(part) or {}) | set(settings[part])
        if (saved.get(part) or {}).get(key) != settings[part].get(key)
    ) + sorted(
        part
        for part in parts
        if not isinstance(settings.get(part), dict) and saved.get(part) != settings.get(part)
    )


def retry_interrupted(study, log: Callable[[str], None]) -> None:
    """Trials left running by an interrupted search are marked failed and queued again with
    their settings by Optuna's retry callback (at most ``MAX_RETRIES`` times: a trial that
    keeps killing the search is given up). No heartbeat is needed to know they are stale:
    this process holds the study's lock, so nothing else runs them."""
    from optuna.trial import TrialState

    retry = retry_callback()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study.tell(trial.number, state=TrialState.FAIL)
        mark_interrupted(study, trial.number)
        before = len(study.get_trials(deepcopy=False))
        retry(study, trial)  # adds a waiting trial with the same settings, or gives up
        queued = len(study.get_trials(deepcopy=False)) > before
        log(
            f"trial {trial.number} was interrupted: marked failed, "
            + ("its settings queued again" if queued else f"given up after {MAX_RETRIES} retries")
        )


def enqueue_starting_point(study, base: TrainConfig, space: SearchSpace, log) -> None:
    """A new study's first trial trains the settings the search starts from (the defaults and
    the presets given), where the space can draw them: the study's best is then never worse, on
    the select half, than not searching at all. A value outside its dimension is drawn (0 in a
    log range without ``zero: true``)."""
    from coldbrew.training.run import flat_settings

    settings = flat_settings(base)
    start = {
        name: settings[name]
        for name, dimension in space.dimensions.items()
        if dimension.contains(settings.get(name))
    }
    if start:
        study.enqueue_trial(
            {
                key: value
                for name, setting in start.items()
                for key, value in space.dimensions[name].start(setting).items()
            }
        )
        shown = ", ".join(f"{name}={value}" for name, value in start.items())
        log(f"trial 0 trains the starting settings ({shown})")


def finished_trials(study) -> int:
    """Trials that count towards ``trials``: complete, pruned or failed, neither interrupted
    nor surplus (``shared_study.counted``)."""
    from coldbrew.research.search.shared_study import counted

    interrupted = interrupted_trials(study)
    return sum(1 for t in study.trials if t.state.is_finished() and counted(t, interrupted))


def search(
    base_layers: Sequence[dict],
    space: SearchSpace,
    out: Path | str,
    *,
    trials: int,
    timeout: float | None = None,
    seeds: Sequence[int] | None = None,
    startup_trials: int = 5,
    warmup_epochs: int = 1,
    objective: str = "monitored",
    tensorboard: bool = True,
    plot: bool = True,
    storage: str | None = None,
    study_name: str = STUDY_NAME,
    heartbeat: int = HEARTBEAT,
    log: Callable[[str], None] = print,
) -> dict:
    """Run the study in ``out`` to ``trials`` trials; ``{"rows", "best", "preset", "monitor"}``.

    With ``storage`` (a database URL or ``journal:PATH``) the study ``study_name`` lives there,
    shared with every worker started with the same arguments (``coldbrew.research.search.shared_study``);
    this worker's trials are written in ``out``, which workers on one machine may share."""
    from coldbrew.research.search.shared_study import check_shared_folder, open_storage
    from coldbrew.training.checkpoint import RunLock
    from coldbrew.training.run_dir import check_out_dir

    out = Path(out)
    for name, what in UNSEARCHABLE.items():
        if name in space.dimensions:
            raise ColdbrewError(f"{name} cannot be searched (it changes {what}); fix it instead")
    if trials < 1:
        raise ColdbrewError(f"--trials must be at least 1, not {trials}")
    if objective not in OBJECTIVES:
        raise ColdbrewError(f"--objective is {objective!r}; expected {' or '.join(OBJECTIVES)}")
    if objective == "joint" and "cold_candidates" in space.dimensions:
        raise ColdbrewError("cold_candidates cannot be searched with --objective joint")
    if storage is None:
        check_study_dir(out)
    else:
        check_out_dir(out)  # whose study it is: check_shared_folder, once the storage is open
    base_layers = (*base_layers, space.fixed)
    base = make_config(*base_layers)
    cache = DataCache()
    monitor = task_monitor(base, cache(base))
    if objective == "joint" and monitor.section != "cold":
        raise ColdbrewError(
            f"--objective joint needs cold items to rank (this run monitors {monitor.key}): "
            "give data with cold validation items, or leave --objective out"
        )
    direction = "maximize" if monitor.mode == "max" else "minimize"
    settings = search_settings(base, space, seeds, objective)
    study_options = (direction, settings, startup_trials, warmup_epochs, base.seed)
    trial_value = make_objective(
        base_layers, space, out, monitor, seeds, cache, tensorboard, plot, log, objective
    )
    key = monitor.key if objective == "monitored" else f"joint {monitor.key}"
    run = {"keys": (key, monitor.key), "trials": trials, "timeout": timeout, "log": log}
    run["heartbeat"] = heartbeat
    if storage is not None:
        place = open_storage(storage, heartbeat, log)
        check_shared_folder(out, storage, study_name, STUDY_DB)
        study = open_study(out, *study_options, storage=place, name=study_name)
        return run_study(study, base, base_layers, space, out, trial_value, place=place, **run)
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out):
        study = open_study(out, *study_options)
        return run_study(study, base, base_layers, space, out, trial_value, **run)


def run_study(
    opened,
    base,
    base_layers,
    space,
    out,
    trial_value,
    *,
    keys,
    trials,
    timeout,
    heartbeat,
    log,
    place=None,
) -> dict:
    """Run ``opened`` (``open_study``'s study and whether it was created) to ``trials``
    trials of ``trial_value``: a local study (``place`` None) or this worker's share of one in
    ``place``; then write its table and best preset into ``out``. ``keys``: the objective's
    name and the monitored metric's."""
    from coldbrew.research.search.shared_study import beats, run_trials

    study, created = opened
    key, monitor_key = keys
    if place is None:
        retry_interrupted(study, log)
    if not study.trials and (created or place is None):
        enqueue_starting_point(study, base, space, log)
    remaining = trials - finished_trials(study)
    if remaining > 0:
        where = out if place is None else f"{study.study_name} (shared; trials written in {out})"
        log(f"study {where}: {remaining} trial(s) to run, {study.direction.name.lower()} val {key}")

        def report(study, trial) -> None:
            if SURPLUS not in trial.user_attrs:
                log(trial_line(trial, key, monitor_key, space))

        run_trials(
            study,
            trial_value,
            trials,
            timeout=timeout,
            wait=place is not None and beats(place),
            poll=min(1.0, heartbeat),
            catch=(ColdbrewError,),
            callbacks=[report],
        )
    return finish_study(study, base_layers, space, out, key)


def make_objective(
    base_layers, space, out, monitor, seeds, cache, tensorboard, plot, log, kind="monitored"
):
    """The trial's value: ``kind`` ``"monitored"`` or ``"joint"`` (``OBJECTIVES``)."""
    from coldbrew.registry import model_spec
    from coldbrew.research.curves import train_with_curves
    from coldbrew.research.seeds import train_seeds

    def objective(trial) -> float:
        params = {name: dimension.suggest(trial) for name, dimension in space.dimensions.items()}
        config = make_config(*base_layers, params)
        run_dir = out / f"trial-{trial.number:03d}"
        trial.set_user_attr("run_dir", run_dir.name)
        hook = PruningHook(trial, config.epochs, prune=model_spec(config.model).trains)
        options = {"on_epoch_end": hook, "tensorboard": tensorboard, "plot": plot, "log": log}
        if (
            config.folds
        ):  # every fold, its value the folds' mean (coldbrew.research.search.fold_trials)
            from coldbrew.research.search.fold_trials import fold_trial

            value, values = fold_trial(
                config, run_dir, seeds, cache=cache, monitor=monitor, kind=kind, options=options
            )
            if values:
                trial.set_user_attr("conventions", values)
            if value is None:
                raise ColdbrewError(f"trial {trial.number}: {monitor.key} was not measured")
            return value
        if seeds:
            results = train_seeds(config, run_dir, seeds, load_data=cache, **options)
        else:
            results = train_with_curves(config, run_dir, dataset=cache(config), **options)
        record_results(trial, results, monitor)
        if kind == "joint":
            dirs = [run_dir / f"seed-{seed}" for seed in seeds] if seeds else [run_dir]
            values = convention_values(results, dirs, config.cold_candidates, monitor)
            trial.set_user_attr("conventions", values)
            trial.set_user_attr("report", joint_value(values, "report"))
            value = joint_value(values, "val")
            if value is None:
                raise ColdbrewError(f"trial {trial.number}: {monitor.key} was not measured")
            return value
        value = monitored(results, "val", monitor)
        return float(value["mean"] if isinstance(value, dict) else value)

    return objective
