"""What a blend is built from: its runs' user and item vectors, standardised and weighted.

The registry names ``blend_vectors`` as the blend's provider (``ModelSpec.teacher``): the run
calls it before the model is built, as it trains a collaborative backbone for the zoo models.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Recommender, Teacher

MAX_RUNS = 6


def run_vectors(
    run_dir: Path | str, dataset, seed: int | None = None, *, load_data=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """A run's ``(user vectors, item vectors)`` from its best checkpoint, on the CPU; the run must
    score by their inner product and rank ``dataset``'s users and items (drawn with ``seed``).
    ``load_data(config)``: the run's data from a cache, where one is shared."""
    from coldbrew.training.run_evaluation import load_best_model

    config, data, model, _ = load_best_model(run_dir, device="cpu", load_data=load_data)
    if not isinstance(model, Recommender) or type(model).score_users is not Recommender.score_users:
        raise ColdbrewError(f"{run_dir}: a blend needs recommenders that score by inner product")
    if (data.num_users, data.num_items) != (dataset.num_users, dataset.num_items) or not (
        np.array_equal(data.cold_items, dataset.cold_items)
    ):
        why = ""
        if seed is not None and config.seed != seed:
            why = (
                f": it was trained with seed {config.seed}, the blend's first run with seed "
                f"{seed}, and the seed draws the cold items; blend runs of one seed"
            )
        raise ColdbrewError(
            f"{run_dir} was trained on other data than the blend's ({dataset.name}){why}"
        )
    check_same_selection(run_dir, data.selection, dataset.selection)
    check_same_folds(run_dir, data.cross_validation, dataset.cross_validation)
    with torch.no_grad():
        return model.user_embeddings().float().cpu(), model.item_embeddings().float().cpu()


def check_same_selection(run_dir, run_selection: dict | None, blend_selection: dict | None):
    """A run that chose its epoch on other validation items than the blend's (another
    ``report_share`` or ``selection_seed``) may have chosen on the blend's report half."""
    keys = ("report_share", "selection_seed")
    mine, theirs = (
        {key: (cut or {}).get(key) for key in keys} for cut in (run_selection, blend_selection)
    )
    if mine != theirs:
        raise ColdbrewError(
            f"{run_dir} cut validation with report_share {mine['report_share']}, selection_seed "
            f"{mine['selection_seed']}; the blend's first run with {theirs['report_share']}, "
            f"{theirs['selection_seed']}: its choices may have read the blend's report items; "
            "blend runs trained with the same --report-share and --selection-seed"
        )


def check_same_folds(run_dir, run_folds: dict | None, blend_folds: dict | None) -> None:
    """A run cut into other folds than the blend's first run chose on other items."""
    keys = ("folds", "fold", "fold_seed")
    mine, theirs = ({key: (cut or {}).get(key) for key in keys} for cut in (run_folds, blend_folds))
    if mine != theirs:
        raise ColdbrewError(
            f"{run_dir} is fold {mine['fold']} of {mine['folds']} (fold seed {mine['fold_seed']}); "
            f"the blend's first run fold {theirs['fold']} of {theirs['folds']} (fold seed "
            f"{theirs['fold_seed']}): blend runs of the same fold"
        )


def check_runs(runs: list[str], weights: list[float]) -> None:
    if not 2 <= len(runs) <= MAX_RUNS:
        raise ColdbrewError(
            f"a blend takes 2 to {MAX_RUNS} runs (--runs A,B), not {len(runs)}; coldbrew blend "
            "--runs A,B --out DIR also chooses their weights"
        )
    if not weights:
        raise ColdbrewError(
            f"a blend of {len(runs)} runs needs their --weights (e.g. "
            f"{','.join(['0.5'] * len(runs))}); to choose them on val, run coldbrew blend "
            "--runs ... --out ... instead of train --model blend"
        )
    if len(weights) != len(runs):
        raise ColdbrewError(f"a blend of {len(runs)} runs needs {len(runs)} weights, not {weights}")
    if not any(weights):
        raise ColdbrewError("a blend's weights are all zero")


def blend_vectors(dataset, options, seed: int, *, progress: bool = False) -> Teacher:
    """The blend's matrices for ``options.runs`` and ``options.weights`` (``BlendOptions``)."""
    from coldbrew.models.blend import blended

    check_runs(options.runs, options.weights)
    components = [run_vectors(run, dataset, seed) for run in options.runs]
    return blended(components, options.weights)
