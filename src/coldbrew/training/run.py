"""A training run on disk: ``train`` writes RUN_DIR/{config.yaml, train.log, best.pt, last.pt,
results.json, ids.json}; ``evaluate_run`` reloads the best checkpoint and evaluates it.

Everything that can be refused is refused before data is loaded or anything is written: the
options (typed and bounded by ``make_config``), the run directory (writable, empty, not in use
by another process), and on resume the flags given now (only those that cannot change the data,
the split or the model may change).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from coldbrew.config import TrainConfig, config_yaml, load_saved_config, make_config
from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.system.runtime import configure_process, device_name
from coldbrew.training.build import build_trainer, load_run_dataset
from coldbrew.training.checkpoint import BEST, LAST, RunLock, atomic_write, load_checkpoint
from coldbrew.training.distributed import Distributed
from coldbrew.training.hooks import RunHook, as_hooks
from coldbrew.training.run_dir import absolute_data, check_new_run_dir, check_out_dir
from coldbrew.training.run_ids import check_ids, write_ids
from coldbrew.training.run_layout import check_run_layout
from coldbrew.training.trainer import NonFiniteLoss, Trainer

RESULTS = "results.json"
CONFIG = "config.yaml"
# what a resumed run may change: none of these changes its data, split, model or optimisation
RESUMABLE_OVERRIDES = {
    "epochs",
    "patience",
    "min_gain",
    "min_epochs",
    "time_budget",
    "quiet",
    "log_every",
    "device",
    "precision",
    "compile",
    "compile_mode",
    "fused_optimizer",  # the same update, one kernel: its state loads either way
    "deterministic",
    "eval_chunk_elements",
    "trust_pickle",
}


def versions() -> dict:
    import numpy
    import scipy

    from coldbrew.version import __version__

    return {
        "coldbrew": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "cuda": torch.version.cuda,
    }


def finite_or_none(value):
    """JSON has no infinities or NaN: such numbers are written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_none(item) for item in value]
    return value


def write_json(payload: dict, path: Path) -> None:
    text = json.dumps(finite_or_none(payload), indent=2, default=float, allow_nan=False).encode()
    atomic_write(path, lambda handle: handle.write(text))


def write_text(text: str, path: Path) -> None:
    atomic_write(path, lambda handle: handle.write(text.encode()))


def train(
    config: TrainConfig,
    run_dir: Path | str,
    *,
    resume: bool = False,
    dataset: Dataset | None = None,
    hooks: Sequence[RunHook] = (),
    on_epoch_end: Callable | None = None,
    distributed: Distributed | None = None,
) -> dict:
    """Train, evaluate the best checkpoint on val and test, write results.json; return it.

    The one way in: every kind of run (``coldbrew train``, each seed of a multi-seed run, a
    search trial, a forecast) comes through here; what a kind adds (curves, baselines) are
    ``hooks`` (``coldbrew.training.hooks.RunHook``); ``on_epoch_end(state)`` is a plain one.

    With ``resume``, ``config`` should be the run's own (``resume_config`` reads it back) so the
    continued run trains exactly as the interrupted one would have. A run directory with a
    configuration but no checkpoint (stopped in its first epoch) starts again from epoch 1.

    Under ``torchrun`` (``RANK`` set) every process calls this; rank 0 alone checks and writes
    the run directory, and a worker restarted by ``torchrun --max-restarts`` resumes the run
    from ``last.pt``.
    """
    distributed = distributed or Distributed.from_environment()
    run_dir = Path(run_dir)
    hooks = as_hooks(hooks, on_epoch_end)
    try:
        if restarted_by_torchrun() and (run_dir / CONFIG).exists():
            resume = True
        main = distributed.is_main
        if main:
            check_run_dir(run_dir, resume)
        if not resume:
            config = absolute_data(config)
        if resume and main:
            with RunLock(run_dir):  # a second process on the run fails here, before loading data
                return _load_build_and_train(config, dataset, run_dir, resume, hooks, distributed)
        return _load_build_and_train(config, dataset, run_dir, resume, hooks, distributed)
    finally:
        for hook in hooks:
            hook.close()


def resolve_auto_batch(config: TrainConfig, dataset, distributed: Distributed) -> None:
    """``--batch-size auto``: rank 0 estimates the largest micro-batch that fits this device
    (``coldbrew.training.memory.estimate``), every rank takes it, with the square-root-scaled lr;
    the run's config.yaml records the result."""
    from coldbrew.system.runtime import resolve_device
    from coldbrew.training.memory.estimate import auto_batch

    device = resolve_device(distributed.device_name(config.device))
    distributed.start(device)
    chosen = None
    if distributed.is_main:
        chosen = auto_batch(config, dataset, device, distributed.world_size)
    batch, lr, note = distributed.broadcast(chosen)
    config.batch_size, config.lr, config.auto_batch_size = batch, lr, False
    config.notes.append(note)


def restarted_by_torchrun() -> bool:
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0


def check_run_dir(run_dir: Path, resume: bool) -> None:
    if not resume:
        check_new_run_dir(run_dir)
        return
    if not (run_dir / CONFIG).exists():
        raise ColdbrewError(f"cannot resume: {run_dir / CONFIG} does not exist")
    check_out_dir(run_dir)


def _load_build_and_train(config, dataset, run_dir, resume, hooks, distributed) -> dict:
    from coldbrew.tasks import select_and_report

    # a dataset given whole (tests, the demo) is cut into select/report here as a loaded one is
    dataset = (
        select_and_report(dataset, config) if dataset is not None else load_run_dataset(config)
    )
    if resume and distributed.is_main:
        check_resume_data(run_dir, dataset, config)  # before config.yaml and ids.json are rewritten
    if config.auto_batch_size:
        resolve_auto_batch(config, dataset, distributed)
    options = {"hooks": hooks, "distributed": distributed}
    trainer = build_trainer(config, dataset, **options)  # refusals come here
    if not distributed.is_main:
        trainer.log = lambda line: None
        distributed.barrier()  # rank 0 prepares the run directory
        return _fit_and_finish(trainer, dataset, run_dir, resume, trainer.log, None)
    if resume:
        return _train_locked(trainer, dataset, run_dir, resume)
    run_dir.mkdir(parents=True, exist_ok=True)  # only once data and model are known to be good
    with RunLock(run_dir):
        return _train_locked(trainer, dataset, run_dir, resume)


def check_resume_data(run_dir: Path, dataset: Dataset, config: TrainConfig) -> None:
    """Refuse to resume RUN_DIR on data whose users, items or feature blocks are not the ones
    it trained on (its checkpoint would not fit), as ``evaluate`` and ``recommend`` do."""
    from coldbrew.registry import model_spec

    check_ids(run_dir, dataset)
    if hasattr(dataset, "feature_layout") and "features" not in model_spec(config.model).ignores:
        check_run_layout(run_dir, dataset)


def _train_locked(trainer: Trainer, dataset: Dataset, run_dir: Path, resume: bool) -> dict:
    config = trainer.config
    with open(run_dir / "train.log", "a") as log_file:

        def log(line: str) -> None:
            log_file.write(line + "\n")
            log_file.flush()
            if not config.quiet:
                print(line, flush=True)

        trainer.run_dir, trainer.log = run_dir, log
        text = config_yaml(config) + layout_comment(dataset)
        write_text(text, run_dir / CONFIG)  # on resume: new epochs, device ...
        if not resume:  # a resumed run's, once its checkpoint has loaded (_fit_and_finish)
            write_ids(run_dir, dataset)  # recommend, export and serve check the data against it
        trainer.distributed.barrier()  # the other ranks may start
        return _fit_and_finish(trainer, dataset, run_dir, resume, log, log_file)


def layout_comment(dataset: Dataset) -> str:
    """YAML comment lines saying the columns of a new item's vector (``recommend
    --item-vector``), so a vector is built in the data's order, not a guessed one."""
    from coldbrew.data.dataset import describe_layout

    if not hasattr(dataset, "feature_layout"):  # a forecasting series has no items
        return ""
    layout = dataset.feature_layout()
    text = describe_layout(layout)
    note = ""
    if any(entry["block"] == "text" for entry in layout):
        note = " (the lm reads its text from --item-text: its vector leaves the text block out)"
    return f"# a new item's vector (recommend --item-vector): {text}{note}\n"


def _fit_and_finish(trainer, dataset, run_dir, resume, log, log_file) -> dict:
    config = trainer.config
    configure_process(trainer.runtime.device, deterministic=config.deterministic)
    for note in config.notes:
        log(f"note: {note}")
    if resume and (run_dir / LAST).exists():
        try:
            trainer.resume(run_dir / LAST)
        except RuntimeError as error:  # a run from before ids.json, on data of other sizes
            last = str(error).strip().splitlines()[-1].strip().rstrip(".")
            raise ColdbrewError(
                f"cannot resume {run_dir}: its checkpoint does not fit the data now at "
                f"{config.data} ({last}); restore the data it trained on, or train a new run "
                "with --out"
            ) from None
        log(f"resuming {run_dir} after epoch {trainer.state.epoch}")
    elif resume:
        log(f"{run_dir} has no checkpoint yet: starting it again from epoch 1 with its config")
    if resume and trainer.distributed.is_main:
        write_ids(run_dir, dataset)  # the same ids (check_resume_data), or a first ids.json
    log(
        f"training {config.model} on {dataset.name}: {dataset.describe()}, "
        f"device {trainer.runtime.device} ({trainer.runtime.precision})"
    )
    stopped, failure = "max_epochs", None
    try:
        trainer.fit()
        stopped = trainer.stop_reason() or stopped
    except NonFiniteLoss as error:  # non-finite, or diverged
        stopped, failure = error.stopped, error
        if log_file is not None:
            log_file.write(f"{error}\n")  # the caller shows the error once; the log keeps it
    started = time.perf_counter()
    metrics = final_metrics(trainer, run_dir)
    if not metrics and hasattr(dataset, "feature_layout"):
        log(f"note: {unscored_note(dataset, config)}")
    results = None
    if trainer.distributed.is_main:
        # the epochs of every session (checkpointed) and this session's final evaluation, so a
        # resumed run counts its whole training and resuming a finished one keeps its time
        wall = trainer.state.wall_seconds + time.perf_counter() - started
        results = finish_run(trainer, dataset, run_dir, stopped, wall, metrics)
    results = trainer.distributed.broadcast(results)
    if failure is not None:
        raise failure
    return results


def unscored_note(dataset: Dataset, config: TrainConfig) -> str:
    """Why a recommendation run has no metrics (its data has no cold split), and what gives
    one: a board's final run is reported by its folds; a plain run needs a cold split."""
    from coldbrew.data.splits.cold_split import cold_split_hint

    cause = f"{dataset.name} has no cold split (no val/test files), so this run is not scored"
    if config.folds:
        return f"{cause}: its folds' runs (--fold 0 to {config.folds - 1}) score the model"
    return f"{cause}; {cold_split_hint(dataset)}"


def resume_config(run_dir: Path | str, *overrides: dict) -> TrainConfig:
    """The configuration RUN_DIR was started with, with ``overrides`` (e.g. more epochs) on top.

    Only ``RESUMABLE_OVERRIDES`` may differ from the run's own values: anything else would
    train the remaining epochs on other data, another split or another model.
    """
    path = Path(run_dir) / CONFIG
    if not path.exists():
        raise ColdbrewError(f"cannot resume: {path} does not exist")
    values = load_saved_config(path)  # read once; make_config does not change its layers
    saved = make_config(values)
    config = make_config(values, *overrides)
    before, after = flat_settings(saved), flat_settings(config)
    changed = sorted(key for key in after if before.get(key) != after[key])
    refused = [key for key in changed if key not in RESUMABLE_OVERRIDES]
    if refused:
        allowed = ", ".join(sorted(RESUMABLE_OVERRIDES))
        raise ColdbrewError(
            f"--resume cannot change {', '.join(refused)} (the run's data, split, model or "
            f"optimisation); only {allowed} may change. Start a new run with --out instead"
        )
    done = epochs_done(Path(run_dir))
    if config.epochs != saved.epochs and done is not None and config.epochs <= done:
        raise ColdbrewError(
            f"{run_dir} has trained {done} epochs: --epochs {config.epochs} would train none and "
            f"rewrite its settings; give more than {done} epochs to continue it"
        )
    return config


def epochs_done(run_dir: Path) -> int | None:
    """Epochs a run has trained (its results, else its last checkpoint); None before any."""
    if (run_dir / RESULTS).exists():
        try:
            return int(json.loads((run_dir / RESULTS).read_text())["epochs_run"])
        except (ValueError, KeyError, TypeError):
            pass  # not a finished single run's results: ask the checkpoint
    if (run_dir / LAST).exists():
        return int(load_checkpoint(run_dir / LAST)["state"]["epoch"])
    return None


def flat_settings(config: TrainConfig) -> dict:
    """Run settings and the model's options in one mapping (the model's under their names)."""
    flat = config.to_dict()
    return {**{k: v for k, v in flat.items() if k != config.model}, **flat[config.model]}


def final_metrics(trainer: Trainer, run_dir: Path) -> dict:
    """Every split's metrics of the best checkpoint (every rank takes part); validation is the
    best epoch's own, the other splits come from one pass."""
    state, task = trainer.state, trainer.task
    trainer.distributed.barrier()  # rank 0 has written best.pt
    if not (run_dir / BEST).exists():
        return {}
    trainer.model.load_state_dict(load_checkpoint(run_dir / BEST, trainer.runtime.device)["model"])
    measured = {entry["epoch"]: entry["val"] for entry in state.history}
    # The best checkpoint is the model of that epoch, whose validation was measured then;
    # ranking is deterministic, so a second pass would only repeat the numbers.
    reuse = "val" in task.splits() and state.best_epoch in measured
    rest = tuple(split for split in task.splits() if not (reuse and split == "val"))
    metrics = trainer.evaluate_splits(rest) if rest else {}
    if reuse:
        metrics = {"val": measured[state.best_epoch], **metrics}
    return {split: metrics[split] for split in task.splits() if split in metrics}


def headline(metrics: dict, monitor) -> dict | None:
    """The figure a run is reported by: its monitored metric on ``report``, the validation
    items no choice read (``coldbrew.data.splits.selection``), else on ``val`` marked as also the
    items that chose (``report_share`` 0, or a task without the cut)."""
    split = "report" if "report" in metrics else "val"
    value = metrics.get(split, {}).get(monitor.section, {}).get(monitor.metric)
    if value is None:
        return None
    key = f"{split}/{monitor.section}/{monitor.metric}"
    return {"key": key, "value": value, "chosen_on_same_items": split == "val"}


def finish_run(
    trainer: Trainer, dataset: Dataset, run_dir: Path, stopped: str, wall: float, metrics: dict
) -> dict:
    state, config, monitor = trainer.state, trainer.config, trainer.task.monitor
    results = {
        "model": config.model,
        "dataset": dataset.summary(),
        "notes": dataset.notes + config.notes,
        "metrics": metrics,
        "selection": getattr(dataset, "selection", None),
        "best_epoch": state.best_epoch,
        "epochs_run": state.epoch,
        "stopped": stopped,
        "early_stop": {
            "monitor": monitor.key,
            "mode": monitor.mode,
            "best": state.best_score,
            "min_epochs": trainer.stop_rule().min_epochs,
        },
        "headline": headline(metrics, monitor),
        "timing": {
            "train_seconds": state.train_seconds,
            "eval_seconds": state.eval_seconds,
            "wall_seconds": wall,
            # a zoo model's backbone, trained once per setting and cached: counted every time
            "backbone_seconds": getattr(trainer.model, "backbone_seconds", 0.0),
            "samples_per_second": state.samples_seen / max(state.train_seconds, 1e-9),
        },
        "config": config.to_dict(),
        "versions": versions(),
        "device": device_name(trainer.runtime.device),
        "processes": trainer.distributed.world_size,  # DDP processes that trained the run
        "history": state.history,
    }
    if "text" in getattr(dataset, "features", {}) and getattr(dataset, "item_text", None):
        # what evaluate --text-encoder compares against, even after the folder has moved
        results["text_encoder_identity"] = config.text_encoder.identity()
    for hook in trainer.hooks:
        hook.finish(results, run_dir)
    write_json(results, run_dir / RESULTS)
    return results
