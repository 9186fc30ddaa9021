"""``coldbrew blend``: runs combined by their per-user standardised scores, with the weights that
give the best val cold Recall@20, saved as a run of its own (model ``blend``).

The weights are searched on a grid over the simplex (steps of 1/10 for up to three runs, 1/5
beyond), scored on val, cold group: with ``objective="monitored"`` (the default) under the
blend's cold-candidate convention, with ``"joint"`` under both conventions at once, their
geometric mean (as ``coldbrew search --objective joint`` values a trial); ties keep the first in
grid order. Each run's standardised scores are computed once per split and every grid point
ranked from them (``blend_grid``), as the evaluator ranks the blend; ``plain_grid_values``, one
full evaluation per point, is the reference it is tested against (3.6x slower for three runs on
Book-Crossing's 5-core, BENCHMARKS.md). The blend's options record the objective
(``chosen_by``). The blend run then goes through the one way in (``coldbrew.training.run
.train``: a model with nothing to train is evaluated once), so ``evaluate``, ``recommend`` and
``compare`` take it as any run. It inherits the first run's data and run settings; every run
must rank the same users and items.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from coldbrew.errors import ColdbrewError

SELECTION_METRIC = "recall@20"


def weight_grid(count: int) -> list[tuple[float, ...]]:
    """Every weight vector of ``count`` non-negative multiples of 1/steps summing to 1."""
    steps = 10 if count <= 3 else 5
    grid = []
    for parts in itertools.product(range(steps + 1), repeat=count):
        if sum(parts) == steps:
            grid.append(tuple(part / steps for part in parts))
    return grid


def check_objective(objective: str) -> str:
    from coldbrew.research.search.study import OBJECTIVES

    if objective not in OBJECTIVES:
        raise ColdbrewError(
            f"the blend's objective is {objective!r}; expected {' or '.join(OBJECTIVES)}"
        )
    return objective


def val_cold(dataset, vectors, cold_candidates: str) -> dict[str, float]:
    """The blended ``vectors``' val cold metrics at 20 under ``cold_candidates``."""
    from coldbrew.evaluation import evaluate_embeddings

    metrics = evaluate_embeddings(
        dataset,
        vectors.users,
        vectors.items,
        "val",
        ks=(20,),
        cold_candidates=cold_candidates,
        cold_signal=True,
    )
    if "cold" not in metrics:
        raise no_cold_users(dataset)
    return metrics["cold"]


def no_cold_users(dataset) -> ColdbrewError:
    from coldbrew.data.splits.cold_split import cold_split_hint

    return ColdbrewError(
        f"{dataset.name} has no cold val users: nothing to choose weights on; give "
        f"--weights, or {cold_split_hint(dataset)}"
    )


def plain_grid_values(sets: Sequence[tuple], conventions: Sequence[str]):
    """``(values, signal)``: per grid point, ``{convention: [val cold recall@20 per set]}``, and
    whether every set has a cold signal under the first convention, from one full evaluation of
    the blend per point, set and convention (the reference ``grid_values`` is tested against)."""
    from coldbrew.models.blend import blended

    values, signal = [], []
    for weights in weight_grid(len(sets[0][1])):
        cold = {convention: [] for convention in conventions}
        for dataset, components in sets:
            vectors = blended(list(components), list(weights))
            for convention in conventions:
                cold[convention].append(val_cold(dataset, vectors, convention))
        values.append({c: [m[SELECTION_METRIC] for m in each] for c, each in cold.items()})
        signal.append(all(m["cold_signal"] for m in cold[conventions[0]]))
    return values, lambda point: signal[point]


def grid_values(sets: Sequence[tuple], conventions: Sequence[str]):
    """As ``plain_grid_values``, each run's standardised scores computed once per set
    (``blend_grid``); the cold signal is read only for the point asked (the runs standardised
    again then: one set's float64 copies held at a time)."""
    from coldbrew.evaluation.plan import cold_items_of
    from coldbrew.evaluation.sources import check_vectors
    from coldbrew.models.blend import blended
    from coldbrew.research.boards.blend_grid import Members, grid_recalls, has_cold_signal

    grid = weight_grid(len(sets[0][1]))
    recalls = {convention: [] for convention in conventions}
    for dataset, components in sets:
        vectors = blended(list(components), list(grid[0]))  # refused as the evaluator would
        check_vectors(vectors.users, vectors.items, (dataset.num_users, dataset.num_items))
        if "cold" not in dataset.groups("val"):
            raise no_cold_users(dataset)
        members = Members.of(components)
        done = {}  # conventions with the same candidates share one pass
        for convention in conventions:
            cold = cold_items_of(dataset, "val", convention).tobytes()
            if cold not in done:
                done[cold] = grid_recalls(dataset, members, grid, convention)
            recalls[convention].append(done[cold])
    values = [
        {convention: [each[point] for each in per_set] for convention, per_set in recalls.items()}
        for point in range(len(grid))
    ]

    def signal(point: int) -> bool:
        return all(
            has_cold_signal(dataset, Members.of(components), grid[point], conventions[0])
            for dataset, components in sets
        )

    return values, signal


def choose_weights(
    sets: Sequence[tuple],
    cold_candidates: str,
    *,
    objective: str = "monitored",
    log: Callable[[str], None],
    values_of: Callable = grid_values,
) -> tuple[list[float], float]:
    """``(weights, value)`` of the best grid point: its val cold recall@20 under
    ``cold_candidates`` (``objective="monitored"``), or the geometric mean of both conventions'
    (``"joint"``). ``sets`` holds ``(dataset, components)`` pairs, one per validation split the
    weights are chosen on (one, or each fold of a cross-validation and seed): a grid point's
    value is its mean over them. ``values_of``: ``grid_values``, or ``plain_grid_values``."""
    from coldbrew.evaluation.plan import COLD_CANDIDATES
    from coldbrew.research.search.study import joint_value

    check_objective(objective)
    conventions = [cold_candidates] if objective == "monitored" else list(COLD_CANDIDATES)
    per_point, signal_of = values_of(sets, conventions)
    best, best_score = None, -1.0
    for point, weights in enumerate(weight_grid(len(sets[0][1]))):
        values = {
            convention: {"val": sum(each) / len(each)}
            for convention, each in per_point[point].items()
        }
        score = (
            joint_value(values, "val") if objective == "joint" else values[cold_candidates]["val"]
        )
        if score > best_score:
            best, best_score, chosen, best_point = list(weights), score, values, point
    note = "" if signal_of(best_point) else " (no cold signal: every cold item scores the same)"
    if objective == "joint":
        each = ", ".join(f"{name} {value['val']:.4f}" for name, value in chosen.items())
        log(f"weights {best}: joint val cold {SELECTION_METRIC} {best_score:.4f} ({each}){note}")
    else:
        log(f"weights {best}: val cold {SELECTION_METRIC} {best_score:.4f}{note}")
    return best, best_score


def blend_config(
    runs: Sequence[Path], weights: Sequence[float], overrides: dict, objective: str | None = None
):
    """The blend's settings: the first run's run settings, model ``blend`` and its options
    (``objective``: how the weights were chosen; None where they were given)."""
    from coldbrew.config import TrainConfig, load_saved_config, make_config
    from coldbrew.training.run import CONFIG

    saved = load_saved_config(Path(runs[0]) / CONFIG)
    run_options = {key: value for key, value in saved.items() if key in TrainConfig.__annotations__}
    run_options.pop("model_options", None)
    options = {"runs": [str(Path(run).resolve()) for run in runs], "weights": list(weights)}
    options["chosen_by"] = objective
    return make_config(run_options, {"model": "blend", "blend": options}, overrides)


def check_run_folders(runs: Sequence[Path]) -> None:
    """Each run a single-seed run directory, none twice."""
    from coldbrew.research.seeds import is_multi_seed_run, saved_seeds, seed_dir
    from coldbrew.training.run import CONFIG

    for run in runs:
        if is_multi_seed_run(run):
            example = seed_dir(run, saved_seeds(run)[0])
            raise ColdbrewError(
                f"--runs: {run} is a multi-seed run: blend one seed's runs, e.g. {example}"
            )
        if not (run / CONFIG).is_file():
            raise ColdbrewError(f"--runs: {run} is not a run directory (no {CONFIG})")
    resolved = [run.resolve() for run in runs]
    twice = sorted({str(run) for run in runs if resolved.count(run.resolve()) > 1})
    if twice:
        raise ColdbrewError(f"--runs names {', '.join(twice)} twice: a run blended with itself")


def blend(
    runs: Sequence[Path | str],
    out: Path | str,
    *,
    weights: Sequence[float] | None = None,
    objective: str = "monitored",
    overrides: dict | None = None,
    log: Callable[[str], None] = print,
    resume: bool = False,
    chosen_by: str | None = None,
    load_data: Callable | None = None,
) -> dict:
    """Choose the weights (unless given) by ``objective``, train the blend run in ``out``; its
    results.

    ``objective="joint"`` is refused beside ``weights`` (nothing is chosen). ``out`` must be
    new, checked before the weight search; with ``resume``, an unfinished blend in ``out``
    (interrupted before its results were written) is finished instead. ``chosen_by`` records
    how given ``weights`` were chosen elsewhere (``coldbrew.research.boards.cross_validation``);
    ``load_data(config)`` returns the data from a cache shared by many blends."""
    from coldbrew.training.blend import check_runs, run_vectors
    from coldbrew.training.run import CONFIG, load_run_dataset, train
    from coldbrew.training.run_dir import check_new_run_dir

    runs, out = [Path(run) for run in runs], Path(out)
    check_objective(objective)
    if weights and objective != "monitored":
        raise ColdbrewError(f"objective {objective!r} chooses weights: give it or the weights")
    check_run_folders(runs)
    check_runs([str(run) for run in runs], list(weights) if weights else [1.0] * len(runs))
    resume = resume and (out / CONFIG).exists()
    if not resume:
        check_new_run_dir(out)
    config = blend_config(runs, weights or [1.0] * len(runs), overrides or {}, chosen_by)
    from coldbrew.system.runtime import resolve_device

    resolve_device(config.device)  # an unavailable device is refused before the weight search
    dataset = load_data(config) if load_data is not None else load_run_dataset(config)
    if weights is None:
        components = [run_vectors(run, dataset, config.seed) for run in runs]
        chosen, _ = choose_weights(
            [(dataset, components)], config.cold_candidates, objective=objective, log=log
        )
        config = blend_config(runs, chosen, overrides or {}, objective)
    return train(config, out, dataset=dataset, resume=resume)
