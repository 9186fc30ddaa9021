"""Tasks: what a problem owns (batches, evaluation, the monitored metric); see ``base.py``.

A registered model names its task (``coldbrew.registry``); ``load_data`` reads the data that
task trains on and ``build_task`` makes the task for it on a device.
"""

from __future__ import annotations

from typing import Any


def load_data(name: str, config: Any, *, select: bool = True) -> Any:
    """The data of task ``name`` for a run's ``config``: a ``Dataset`` for recommendation (its
    validation cut into select and report halves, or its fold cut out, ``select_and_report``;
    ``select=False``: as loaded; without the text block for a model that never reads it,
    ``ModelSpec.reads_text_vectors``), a ``DailySeries`` for forecasting."""
    if name == "recommendation":
        from coldbrew.data import load_dataset

        dataset = load_dataset(config.data, **dataset_options(config))
        return select_and_report(dataset, config) if select else dataset
    if name == "forecasting":
        from coldbrew.data.forecast.series import load_series

        if config.layout:
            from coldbrew.errors import ColdbrewError

            raise ColdbrewError(
                "--layout applies only to your own tables for a recommender; forecasting reads "
                "MovieLens ratings or synthetic series: leave it out"
            )
        return load_series(config.data, config.model_options.series, seed=config.seed)
    raise ValueError(f"unknown task {name!r}")  # pragma: no cover - registry entries are fixed


def dataset_options(config: Any) -> dict[str, Any]:
    """What ``load_dataset`` reads of a run's ``config`` besides ``config.data``: pickle trust,
    features, seed, the text encoder, whether the model reads the text block
    (``ModelSpec.reads_text_vectors``) and the run's own tables as it named them (``layout``,
    saved with it). The one list: whatever loads a run's data, or keys a cache of it, reads
    it here."""
    from coldbrew.registry import model_spec

    return {
        "trust_pickle": config.trust_pickle,
        "features": config.resolved_features(),
        "seed": config.seed,
        "text_encoder": config.text_encoder,
        "text_vectors": model_spec(config.model).reads_text_vectors,
        "layout": config.layout,
    }


def cut_options(config: Any) -> tuple:
    """The options ``select_and_report`` reads: a cache of cut data keys on them."""
    cut = (config.report_share, config.selection_seed, config.cold_split)
    return cut + (config.folds, config.fold, config.fold_seed, config.fold_candidates)


def select_and_report(data: Any, config: Any) -> Any:
    """A recommendation ``Dataset`` with what chooses apart from what reports, as ``config``
    says: with ``folds``, the training items of fold ``fold`` held out to choose on and all of
    val reporting (``coldbrew.data.splits.folds``), else val cut into select/report halves
    (``coldbrew.data.splits.selection``). Once: a dataset cut the same way already is returned as it
    is. Any other data unchanged."""
    from coldbrew.data.dataset import Dataset

    if not isinstance(data, Dataset):
        return data
    from coldbrew.data.splits.cold_split import apply_cold_split
    from coldbrew.data.splits.selection import carve_report

    data = apply_cold_split(data, config.cold_split, config.selection_seed)  # before any cut
    if config.folds:
        from coldbrew.data.splits.folds import fold_split

        return fold_split(data, config.folds, config.fold, config.fold_seed, config.fold_candidates)
    return carve_report(data, config.report_share, config.selection_seed)


def build_task(
    name: str, data: Any, config: Any, device: Any, *, fixed_shapes: bool = False
) -> Any:
    """The task ``name`` (a model spec's ``task``) for ``data`` on ``device``; ``fixed_shapes``:
    batches as a GPU makes them (the forecasting task's always are)."""
    if name == "recommendation":
        from coldbrew.tasks.recommendation import RecommendationTask

        return RecommendationTask.from_config(data, config, device, fixed_shapes=fixed_shapes)
    if name == "forecasting":
        from coldbrew.tasks.forecasting import ForecastingTask

        return ForecastingTask.from_config(data, config, device)
    raise ValueError(f"unknown task {name!r}")  # pragma: no cover - registry entries are fixed
