"""A board's runs. ``BoardPlan`` is what a board trains, made once at its top
(``coldbrew.research.boards.leaderboard.plan_board``): one ``TrainConfig`` per model, the
blends, the seeds and the folder. A ``RunUnit`` is one model's multi-seed run (``OUT/MODEL``,
or a fold's) with the settings it trains with; ``train_model`` trains, resumes or reads it back,
and refuses it when an earlier call trained it with other settings (``check_same_settings``).
``coldbrew.research.boards.leaderboard``, ``coldbrew.research.boards.cross_validation`` and
``coldbrew.research.claims.board`` all train through here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend_names import Member


@dataclass(frozen=True)
class RunUnit:
    """One model's seeds in one multi-seed run: the settings they train with (the model's, with
    a fold's or a final run's changes), the seeds and the run's folder. It pickles, so a process
    of ``coldbrew.research.search.parallel`` can train it."""

    config: TrainConfig
    seeds: tuple[int, ...]
    run_dir: Path
    # the conventions the board scores it under: scored where it is trained (its process), once
    conventions: tuple[str, ...] = ()
    row: str = ""  # the board's row it belongs to (``aldi@mpnet@128``); empty: the model's

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def row_name(self) -> str:
        """Its row: ``row``, else its model's name."""
        return self.row or self.model

    @property
    def name(self) -> str:
        """How logs and processes call it: its row (``clcrec``, ``clcrec@mpnet``), or
        ``clcrec/fold-2`` for a fold's run."""
        fold = self.config.fold
        return self.row_name if fold is None else f"{self.row_name}/fold-{fold}"

    def finished(self) -> bool:
        """Whether training it would only read its results back."""
        from coldbrew.research.seeds import all_finished

        return all_finished(self.run_dir, self.seeds)


@dataclass(frozen=True)
class BoardPlan:
    """What a board trains, made once and passed down: each model's settings (one config per
    model, in the board's order), the blends of their runs, the seeds and the board's folder."""

    configs: tuple[TrainConfig, ...]
    blends: tuple[Sequence[Member], ...]
    seeds: tuple[int, ...]
    out: Path
    conventions: tuple[str, ...] = ()  # what the board's rows score each run under
    # each config's row name (``aldi@mpnet@128``: ``coldbrew.research.boards.encoder_rows``);
    # empty: each row is named by its model
    names: tuple[str, ...] = ()

    @property
    def models(self) -> list[str]:
        return [config.model for config in self.configs]

    def rows(self) -> dict[str, TrainConfig]:
        """``{row name: its config}`` in the board's order."""
        names = self.names or tuple(self.models)
        return dict(zip(names, self.configs, strict=True))

    @property
    def folds(self) -> int:
        """The cold-item folds (0: none); every model has the same (a run option they share)."""
        return self.configs[0].folds

    def model_units(self) -> dict[str, RunUnit]:
        """``{"clcrec": its run OUT/clcrec}``: each row's run with the board's settings."""
        units = [
            RunUnit(config, self.seeds, self.out / name, self.conventions, name)
            for name, config in self.rows().items()
        ]
        return {unit.name: unit for unit in units}


def check_same_settings(run_dir: Path, config: TrainConfig) -> None:
    """A model's run from an earlier leaderboard call must have been trained as asked now."""
    from coldbrew.config import load_saved_config, unusable_options
    from coldbrew.research.search.study import STUDY_BUDGET
    from coldbrew.training.run import CONFIG, RESUMABLE_OVERRIDES, flat_settings

    saved = flat_settings(make_config(load_saved_config(run_dir / CONFIG)))
    wanted = flat_settings(config)
    free = (RESUMABLE_OVERRIDES - set(STUDY_BUDGET)) | {"seed"}
    free |= set(unusable_options(config, wanted))  # options the model has no use for
    changed = sorted(key for key in wanted if key not in free and saved.get(key) != wanted[key])
    if changed:
        raise ColdbrewError(
            f"{run_dir} was trained with other settings ({', '.join(changed)}): one --out holds "
            "one setting, so its table compares like with like; give the same options, or "
            "another --out"
        )


def train_model(unit: RunUnit, cache: Any, log: Callable[[str], None]) -> dict:
    """One model's seeds in its multi-seed run (``unit``), resumed where an earlier call
    stopped; ``cache`` loads each seed's data once. A module-level function, so processes can
    run it."""
    from coldbrew.research.seeds import is_multi_seed_run, train_seeds

    resume = is_multi_seed_run(unit.run_dir)
    if resume:
        check_same_settings(unit.run_dir, unit.config)
    seeds = list(unit.seeds)
    doing = "continuing" if resume else "training"
    log(f"{unit.row_name}: {doing} seeds {seeds} in {unit.run_dir}")
    options = {"load_data": cache, "tensorboard": False, "plot": False, "log": log}
    results = train_seeds(unit.config, unit.run_dir, seeds, resume=resume, **options)
    score_conventions(unit, cache)
    return results


def score_conventions(unit: RunUnit, cache: Any) -> None:
    """Each seed of ``unit`` scored under the board's conventions, where it was trained: its
    own convention is its results (nothing to do), another one is written once
    (``evaluation-<convention>.json``), so the board's rows only read files."""
    from coldbrew.research.boards.board import convention_metrics
    from coldbrew.research.seeds import seed_dir

    for seed in unit.seeds:
        for convention in unit.conventions:
            convention_metrics(seed_dir(unit.run_dir, seed), convention, cache)


def train_units(
    units: Mapping[str, RunUnit], jobs: int | str, cache: Any, log: Callable[[str], None]
) -> dict[str, dict]:
    """``{name: train_model(unit)}`` in the order given: with ``jobs`` other than 1, the units
    not finished yet in that many processes (``coldbrew.research.search.parallel``); the rest
    here, one after another (what is finished is only read back)."""
    from coldbrew.research.search.parallel import train_side_by_side

    done = {}
    if jobs != 1:
        todo = {name: unit for name, unit in units.items() if not unit.finished()}
        done = train_side_by_side(train_model, todo, jobs, log=log)
    return {
        name: done[name] if name in done else train_model(unit, cache, log)
        for name, unit in units.items()
    }
