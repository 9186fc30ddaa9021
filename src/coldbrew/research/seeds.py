"""One configuration trained under several seeds: ``RUN/seed-N/`` each, ``RUN/results.json``
with mean ± std of every metric and timing over the seeds, and each seed's own values.

``RUN`` holds ``config.yaml`` (the settings every seed shares; its ``seed`` is the first),
``seeds.json`` (the seeds asked for), ``results.json`` and one training run per seed. Resuming
(``resume=True``) skips seeds whose ``results.json`` exists, continues a seed stopped midway
from its ``last.pt`` and starts seeds not begun; a resumed run may name more seeds.

Under ``torchrun`` every process runs the seeds one after another, in the same order, each
seed a distributed run of its own; rank 0 alone writes ``RUN``'s files.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coldbrew.config import MAX_SEED, TrainConfig
from coldbrew.errors import ColdbrewError
from coldbrew.research.summary import aggregate, run_summary

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from coldbrew.research.curves import CurveOptions

SEEDS_FILE = "seeds.json"


def parse_seeds(text: str) -> list[int]:
    """``"1,2,3"`` -> ``[1, 2, 3]``; each seed once, each in 0..2**32-1."""
    try:
        seeds = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise ColdbrewError(f"--seeds must be integers like 1,2,3, not {text!r}") from None
    if not seeds:
        raise ColdbrewError("--seeds needs at least one seed, e.g. 1,2,3")
    if len(set(seeds)) != len(seeds):
        raise ColdbrewError(f"--seeds names a seed twice: {text!r}")
    if any(not 0 <= seed <= MAX_SEED for seed in seeds):
        raise ColdbrewError(f"--seeds must each be in 0..{MAX_SEED}, not {text!r}")
    return seeds


def seed_dir(run_dir: Path | str, seed: int) -> Path:
    return Path(run_dir) / f"seed-{seed}"


def is_multi_seed_run(run_dir: Path | str) -> bool:
    return (Path(run_dir) / SEEDS_FILE).exists()


def all_finished(run_dir: Path | str, seeds: Sequence[int]) -> bool:
    """Whether a multi-seed run has every seed it holds and every one of ``seeds`` finished:
    resuming it would only read results back."""
    if not is_multi_seed_run(run_dir):
        return False
    wanted = {*saved_seeds(run_dir), *seeds}
    return all(seed_state(seed_dir(run_dir, seed)) == "finished" for seed in wanted)


def saved_seeds(run_dir: Path | str) -> list[int]:
    path = Path(run_dir) / SEEDS_FILE
    try:
        return parse_seeds(",".join(str(seed) for seed in json.loads(path.read_text())["seeds"]))
    except (OSError, ValueError, KeyError, TypeError):
        raise ColdbrewError(f"{path} is not a list of seeds written by coldbrew") from None


def seed_config(config: TrainConfig, seed: int) -> TrainConfig:
    return config.copy_with(seed=seed)


def train_seeds(
    config: TrainConfig,
    run_dir: Path | str,
    seeds: Sequence[int] | None,
    *,
    resume: bool = False,
    load_data: Callable[[TrainConfig], Any] | None = None,
    distributed=None,
    log: Callable[[str], None] = print,
    **curves: Unpack[CurveOptions],
) -> dict:
    """Train ``config`` once per seed (``seeds``; on resume None keeps the run's own) and
    write ``RUN/results.json``; return it.

    ``load_data(config)``, when given, returns a seed's data (e.g. from a cache); without it
    each seed loads its own, as ``coldbrew train --seed N`` would (a split drawn by coldbrew
    depends on the seed). ``curves`` (``on_epoch_end``, ``tensorboard``, ``plot``) go to every
    seed's ``coldbrew.research.curves.train_with_curves``.
    """
    from coldbrew.training.checkpoint import RunLock
    from coldbrew.training.distributed import Distributed
    from coldbrew.training.run import (
        CONFIG,
        RESUMABLE_OVERRIDES,
        check_run_dir,
        restarted_by_torchrun,
    )
    from coldbrew.training.run_dir import absolute_data

    distributed = distributed or Distributed.from_environment()
    run_dir = Path(run_dir)
    if restarted_by_torchrun() and is_multi_seed_run(run_dir):
        resume = True
    if resume and not is_multi_seed_run(run_dir):
        raise ColdbrewError(f"{run_dir} is not a multi-seed run (no {SEEDS_FILE})")
    seeds = resumed_seeds(run_dir, seeds) if resume else list(seeds)
    if distributed.is_main:
        check_run_dir(run_dir, resume)
    config = absolute_data(copy.deepcopy(config))
    resumable = {key: getattr(config, key) for key in RESUMABLE_OVERRIDES}
    each = {"load_data": load_data, "distributed": distributed, "log": log, **curves}

    # Every rank decides what each seed needs before any trains: no rank writes in a seed's
    # directory before all have joined that seed's first collective.
    plan = {seed: seed_state(seed_dir(run_dir, seed)) for seed in seeds}

    def run_all() -> dict[int, dict]:
        if distributed.is_main:
            _write_root(run_dir, config, seeds, CONFIG)
        return {
            seed: train_seed(config, run_dir, seed, plan[seed], resumable, **each) for seed in seeds
        }

    if distributed.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)
        with RunLock(run_dir):
            return write_seed_results(run_dir, config, seeds, run_all())
    return seed_results(config, seeds, run_all())


def train_seed(
    config: TrainConfig,
    run_dir: Path,
    seed: int,
    state: str,
    resumable: dict,
    *,
    load_data: Callable[[TrainConfig], Any] | None,
    distributed,
    log: Callable[[str], None],
    **curves: Unpack[CurveOptions],
) -> dict:
    """One seed of a multi-seed run by its ``state`` (``seed_state``): its results read back,
    its run continued with the ``resumable`` options (the run's own), or trained afresh."""
    from coldbrew.research.curves import train_with_curves
    from coldbrew.training.run import RESULTS, resume_config

    directory = seed_dir(run_dir, seed)
    if state == "finished":
        log(f"seed {seed}: finished before, results read from {directory / RESULTS}")
        return json.loads((directory / RESULTS).read_text())
    continuing = state == "started"
    own = resume_config(directory, resumable) if continuing else seed_config(config, seed)
    log(f"seed {seed}: {'continuing' if continuing else 'training'} in {directory}")
    dataset = load_data(own) if load_data is not None else None
    options = {"resume": continuing, "dataset": dataset, "distributed": distributed, "log": log}
    return train_with_curves(own, directory, **options, **curves)


def resumed_seeds(run_dir: Path, given: Sequence[int] | None) -> list[int]:
    """The seeds a resumed run trains: its own, then any ``given`` adds. Leaving one out would
    rewrite the run's results without it: refused, with the ways to do what was meant."""
    saved = saved_seeds(run_dir)
    if not given:
        return saved
    missing = [seed for seed in saved if seed not in given]
    if missing:
        listed = ",".join(str(seed) for seed in saved)
        raise ColdbrewError(
            f"{run_dir} holds seeds {listed}; --seeds on --resume may only add seeds (e.g. "
            f"--seeds {listed},{max(saved) + 1}). To continue one seed, resume "
            f"{seed_dir(run_dir, missing[0])}"
        )
    return saved + [seed for seed in given if seed not in saved]


def refresh_parent_results(run_dir: Path | str, log: Callable[[str], None] = print) -> None:
    """After one seed of a multi-seed run was trained on its own (``--resume RUN/seed-N``):
    the parent's results.json again, from every seed's, when every seed has finished."""
    from coldbrew.config import load_saved_config, make_config
    from coldbrew.training.checkpoint import RunLock
    from coldbrew.training.run import CONFIG, RESULTS

    run_dir = Path(run_dir)
    parent = run_dir.parent
    if not is_multi_seed_run(parent):
        return
    seeds = saved_seeds(parent)
    if run_dir.name not in {f"seed-{seed}" for seed in seeds}:
        return
    paths = {seed: seed_dir(parent, seed) / RESULTS for seed in seeds}
    if not all(path.exists() for path in paths.values()):
        log(f"note: {parent}/results.json is left as it was: not every seed has finished")
        return
    with RunLock(parent):
        config = make_config(load_saved_config(parent / CONFIG))
        results = {seed: json.loads(path.read_text()) for seed, path in paths.items()}
        write_seed_results(parent, config, seeds, results)
    log(f"{parent}/results.json updated from its seeds")


def seed_state(directory: Path) -> str:
    """``finished`` (results.json), ``started`` (config.yaml: resume it) or ``new``."""
    from coldbrew.training.run import CONFIG, RESULTS

    if (directory / RESULTS).exists():
        return "finished"
    return "started" if (directory / CONFIG).exists() else "new"


def _write_root(run_dir: Path, config: TrainConfig, seeds: list[int], config_name: str) -> None:
    from coldbrew.config import config_yaml
    from coldbrew.training.run import write_json, write_text

    write_text(config_yaml(seed_config(config, seeds[0])), run_dir / config_name)
    write_json({"seeds": seeds}, run_dir / SEEDS_FILE)


def seed_results(config: TrainConfig, seeds: Sequence[int], results: dict[int, dict]) -> dict:
    """The multi-seed ``results.json``: aggregates first, then every seed's own summary."""
    summaries = {seed: run_summary(results[seed]) for seed in seeds}
    first = results[seeds[0]]
    return {
        "model": first.get("model"),
        "dataset": first.get("dataset"),
        "seeds": list(seeds),
        "runs": {str(seed): f"seed-{seed}" for seed in seeds},
        **aggregate([summaries[seed] for seed in seeds]),
        "early_stop": {key: first.get("early_stop", {}).get(key) for key in ("monitor", "mode")},
        "per_seed": {str(seed): summaries[seed] for seed in seeds},
        "config": {key: value for key, value in config.to_dict().items() if key != "seed"},
        "device": first.get("device"),
        "versions": first.get("versions"),
    }


def write_seed_results(
    run_dir: Path, config: TrainConfig, seeds: Sequence[int], results: dict[int, dict]
) -> dict[str, Any]:
    from coldbrew.training.run import RESULTS, write_json

    payload = seed_results(config, seeds, results)
    write_json(payload, run_dir / RESULTS)
    return payload
