"""A board's runs of one model: ``OUT/MODEL``, a multi-seed run with the board's settings,
trained, resumed or read back (``train_model``), and refused when an earlier call trained it
with other settings (``check_same_settings``). ``coldbrew.research.boards.leaderboard`` and
``coldbrew.research.boards.cross_validation`` both train through here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError


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


def train_model(unit: tuple, cache: Any, log: Callable[[str], None]) -> dict:
    """One model's seeds in a multi-seed run (``unit``: base layers, model, seeds, its
    directory: ``OUT/MODEL``, or a fold's), resumed where an earlier call stopped; ``cache``
    loads each seed's data once. A module-level function, so processes can run it."""
    from coldbrew.research.seeds import is_multi_seed_run, train_seeds

    base_layers, model, seeds, run_dir = unit
    config = make_config(*base_layers, {"model": model})
    resume = is_multi_seed_run(run_dir)
    if resume:
        check_same_settings(run_dir, config)
    log(f"{model}: {'continuing' if resume else 'training'} seeds {seeds} in {run_dir}")
    options = {"load_data": cache, "tensorboard": False, "plot": False, "log": log}
    return train_seeds(config, run_dir, seeds, resume=resume, **options)
