"""A training run on disk: ``train`` writes RUN_DIR/{config.yaml, train.log, best.pt, last.pt,
results.json}; ``evaluate_run`` reloads the best checkpoint and evaluates it."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import torch

from coldbrew.config import TrainConfig, load_yaml, make_config, save_yaml
from coldbrew.data import load_dataset
from coldbrew.data.dataset import SPLITS, Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.models import build_model
from coldbrew.training.checkpoint import BEST, LAST, atomic_write, load_checkpoint
from coldbrew.training.runtime import device_name, keep_freed_memory_for_reuse, resolve_device
from coldbrew.training.trainer import NonFiniteLoss, Trainer, evaluate_model

RESULTS = "results.json"


def versions() -> dict:
    import numpy
    import scipy

    import coldbrew

    return {
        "coldbrew": coldbrew.__version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "cuda": torch.version.cuda,
    }


def write_json(payload: dict, path: Path) -> None:
    text = json.dumps(payload, indent=2, default=float).encode()
    atomic_write(path, lambda handle: handle.write(text))


def load_run_dataset(config: TrainConfig) -> Dataset:
    return load_dataset(
        config.data,
        trust_pickle=config.trust_pickle,
        features=config.resolved_features(),
        seed=config.seed,
    )


def prepare_run_dir(run_dir: Path, resume: bool) -> None:
    if resume:
        if not (run_dir / LAST).exists():
            raise ColdbrewError(f"cannot resume: {run_dir / LAST} does not exist")
        return
    if run_dir.exists() and any(run_dir.iterdir()):
        raise ColdbrewError(
            f"{run_dir} already exists and is not empty; pass --resume {run_dir} or choose another --out"
        )


def train(
    config: TrainConfig,
    run_dir: Path | str,
    *,
    resume: bool = False,
    dataset: Dataset | None = None,
    on_epoch_end=None,
) -> dict:
    """Train, evaluate the best checkpoint on val and test, write results.json; return it.

    With ``resume``, ``config`` should be the run's own (``resume_config`` reads it back) so the
    continued run trains exactly as the interrupted one would have.
    """
    run_dir = Path(run_dir)
    prepare_run_dir(run_dir, resume)
    dataset = dataset if dataset is not None else load_run_dataset(config)
    started = time.perf_counter()
    trainer = Trainer(config, dataset, run_dir, on_epoch_end=on_epoch_end)
    run_dir.mkdir(parents=True, exist_ok=True)  # only once data and model are known to be good
    if resume:
        trainer.resume()
    else:
        save_yaml(config, run_dir / "config.yaml")
    log_file = open(run_dir / "train.log", "a")  # noqa: SIM115 - closed below

    def log(line: str) -> None:
        log_file.write(line + "\n")
        log_file.flush()
        if not config.quiet:
            print(line, flush=True)

    log(
        f"training {config.model} on {dataset.name}: {dataset.num_users} users, {dataset.num_items} items, "
        f"{dataset.num_train} interactions, device {trainer.runtime.device} ({trainer.runtime.precision})"
    )
    stopped, failure = "max_epochs", None
    try:
        state = trainer.fit(log)
        if state.epochs_without_improvement >= config.patience:
            stopped = "early_stop"
    except NonFiniteLoss as error:
        stopped, failure = "non_finite", error
        log(str(error))
    finally:
        log_file.close()
    results = finish_run(trainer, run_dir, stopped, time.perf_counter() - started)
    if failure is not None:
        raise failure
    return results


def resume_config(run_dir: Path | str, *overrides: dict) -> TrainConfig:
    """The configuration RUN_DIR was started with, with ``overrides`` (e.g. more epochs) on top."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        raise ColdbrewError(f"cannot resume: {path} does not exist")
    return make_config(load_yaml(path), *overrides)


def finish_run(trainer: Trainer, run_dir: Path, stopped: str, wall_seconds: float) -> dict:
    state, config, dataset = trainer.state, trainer.config, trainer.dataset
    metrics = {}
    if (run_dir / BEST).exists():
        trainer.model.load_state_dict(
            load_checkpoint(run_dir / BEST, trainer.runtime.device)["model"]
        )
        measured = {entry["epoch"]: entry["val"] for entry in state.history}
        for split in SPLITS:
            if split == "val" and state.best_epoch in measured:
                # The best checkpoint is the model of that epoch, whose validation was measured
                # then; ranking is deterministic, so a second pass would only repeat the numbers.
                metrics["val"] = measured[state.best_epoch]
            elif dataset.groups(split):
                metrics[split] = evaluate_model(trainer.model, dataset, split, config)
    results = {
        "model": config.model,
        "dataset": dataset.summary(),
        "notes": dataset.notes,
        "metrics": metrics,
        "best_epoch": state.best_epoch,
        "epochs_run": state.epoch,
        "stopped": stopped,
        "early_stop": {"group": trainer.group, "metric": trainer.metric, "best": state.best_score},
        "timing": {
            "train_seconds": state.train_seconds,
            "eval_seconds": state.eval_seconds,
            "wall_seconds": wall_seconds,
            "samples_per_second": state.samples_seen / max(state.train_seconds, 1e-9),
        },
        "config": config.to_dict(),
        "versions": versions(),
        "device": device_name(trainer.runtime.device),
        "history": state.history,
    }
    write_json(results, run_dir / RESULTS)
    return results


def evaluate_run(
    run_dir: Path | str,
    *,
    data: str | None = None,
    splits=SPLITS,
    device: str = "auto",
    trust_pickle: bool | None = None,
) -> dict:
    """Evaluate RUN_DIR's best checkpoint on its own data (or ``data``); write evaluation.json."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").exists():
        raise ColdbrewError(f"{run_dir} is not a coldbrew run (no config.yaml)")
    overrides = {"device": device, "neighbor_loss": False}  # a training-only term: skip its graph
    if data is not None:
        overrides["data"] = data
    if trust_pickle is not None:
        overrides["trust_pickle"] = trust_pickle
    config = make_config(load_yaml(run_dir / "config.yaml"), overrides)
    dataset = load_run_dataset(config)
    model = build_model(config.model, dataset, config)
    target = resolve_device(config.device)
    state = load_checkpoint(run_dir / BEST, target)["model"]
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        raise ColdbrewError(
            f"checkpoint does not fit dataset {dataset.name}: {str(error).splitlines()[0]}"
        ) from None
    model.to(target)
    if target.type == "cpu":
        keep_freed_memory_for_reuse()  # score chunks are 64 MiB: reuse them, do not refault them
    started = time.perf_counter()
    metrics = {
        split: evaluate_model(model, dataset, split, config)
        for split in splits
        if dataset.groups(split)
    }
    output = {
        "run": str(run_dir),
        "data": config.data,
        "metrics": metrics,
        "eval_seconds": time.perf_counter() - started,  # ranking only, not loading
        "device": device_name(target),
    }
    write_json(output, run_dir / "evaluation.json")
    return output
