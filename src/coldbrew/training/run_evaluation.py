"""``coldbrew evaluate``: a run's best checkpoint on its own data or other data."""

from __future__ import annotations

import time
from pathlib import Path

from coldbrew.config import load_saved_config, make_config
from coldbrew.data.dataset import EVALUATION_SPLITS
from coldbrew.data.text.sentence_models import DEFAULT_TEXT_ENCODER, TextEncoder
from coldbrew.errors import ColdbrewError, DataError
from coldbrew.evaluation.plan import check_cold_candidates
from coldbrew.evaluation.protocols import check_protocol
from coldbrew.registry import model_spec
from coldbrew.system.runtime import configure_process, device_name, resolve_device
from coldbrew.training.checkpoint import BEST, load_checkpoint
from coldbrew.training.run import CONFIG, RESULTS, load_run_dataset, write_json
from coldbrew.training.run_ids import check_ids
from coldbrew.training.run_layout import check_run_layout, count_difference


def load_model_state(model, state: dict, dataset_name: str) -> None:
    """Load learned state; a checkpoint of other shapes is a one-line error. Checkpoints from
    before data left the model state may still hold data buffers: those are skipped."""
    persistent = set(model.state_dict())
    learned = {key: value for key, value in state.items() if key in persistent}
    try:
        model.load_state_dict(learned)
    except RuntimeError as error:
        raise ColdbrewError(
            f"checkpoint does not fit dataset {dataset_name}: {str(error).splitlines()[-1].strip()}"
        ) from None


def load_best_model(
    run_dir: Path | str,
    *,
    data: str | None = None,
    device: str = "auto",
    trust_pickle: bool | None = None,
    text_encoder: str | TextEncoder | None = None,
    load_data=None,
    layout: dict | None = None,
):
    """``(config, data, model, device)``: RUN_DIR's best checkpoint in eval mode on ``device``,
    rebuilt for its own data (or ``data``, its texts encoded by the run's text encoder unless
    ``text_encoder`` is given; ``layout``: that folder's settings over the run's own, key by
    key); training-only parts (a loss graph) are not built.
    ``load_data(config)``, when given, returns the data (a cache shared by many runs)."""
    from coldbrew.registry import build_model

    run_dir = Path(run_dir)
    if not (run_dir / CONFIG).exists():
        raise ColdbrewError(f"{run_dir} is not a coldbrew run (no {CONFIG})")
    overrides: dict = {"device": device, "quiet": True}
    if data is not None:
        overrides["data"] = data
    if trust_pickle is not None:
        overrides["trust_pickle"] = trust_pickle
    if text_encoder is not None:
        overrides["text_encoder"] = text_encoder
    if layout:
        overrides["layout"] = layout
    config = make_config(load_saved_config(run_dir / CONFIG), overrides)
    for name, value in model_spec(config.model).evaluation_overrides.items():
        setattr(config.model_options, name, value)
    checkpoint_path = run_dir / BEST
    if not checkpoint_path.exists():
        raise ColdbrewError(f"no checkpoint at {checkpoint_path}: the run has no evaluated epoch")
    if not (run_dir / RESULTS).exists():
        import warnings

        warnings.warn(
            f"{run_dir} is unfinished (interrupted: no results.json): this is its best epoch so "
            f"far; finish it with coldbrew train --resume {run_dir}",
            stacklevel=2,
        )
    from coldbrew.tasks import select_and_report

    loaded = load_data(config) if load_data is not None else load_run_dataset(config)
    dataset = select_and_report(loaded, config)  # as the run cut it
    check_ids(run_dir, dataset)
    if "features" not in model_spec(config.model).ignores:  # a blend's data is its runs'
        check_run_layout(run_dir, dataset)  # a block's width, not torch's size mismatch
    target = resolve_device(config.device)
    model = build_model(config.model, dataset, config)
    try:
        load_model_state(model, load_checkpoint(checkpoint_path, target)["model"], dataset.name)
    except ColdbrewError as error:  # the widths agree: other users or items, likely
        raise ColdbrewError(count_difference(run_dir, dataset, error)) from None
    return config, dataset, model.to(target).eval(), target


OTHER_ENCODER_OUTPUT = "evaluation-other-encoder.json"


def encoder_override(
    run_dir: Path, text_encoder: str | TextEncoder | None, allow_other: bool | None
) -> tuple[TextEncoder | None, bool]:
    """``text_encoder`` parsed (None when not given, or when RUN_DIR is no run:
    ``load_best_model`` says so), and whether it is another model than the run's (refused
    unless ``allow_other``; None: refused without offering ``--allow-other-encoder``, as
    ``recommend`` has none); the same model moved elsewhere is not. A run that reads no text
    is refused: the option would change nothing."""
    if text_encoder is None or not (run_dir / CONFIG).exists():
        return None, False
    saved = load_saved_config(run_dir / CONFIG)
    features = saved.get("features")
    if features is not None and "text" not in features:
        raise ColdbrewError(
            f"{run_dir} reads no text features (features: {', '.join(features)}): "
            "--text-encoder would change nothing; leave it out"
        )
    encoder = TextEncoder.parse(text_encoder)
    recorded = trained_identity(run_dir, saved)
    if recorded is None or encoder.identity() == recorded:
        return encoder, False
    if not allow_other:
        raise ColdbrewError(
            f"--text-encoder {encoder} is another model than the one {run_dir} was trained "
            f"with ({saved.get('text_encoder')}): its vectors mean other things to the "
            "checkpoint. Give the run's own encoder (its new folder if it moved)"
            + (
                f", or add --allow-other-encoder to score it anyway (written to "
                f"{OTHER_ENCODER_OUTPUT})"
                if allow_other is False
                else ""
            )
        )
    return encoder, True


def trained_identity(run_dir: Path, saved: dict) -> str | None:
    """The identity of the text encoder RUN_DIR was trained with: the one its results record,
    else (a run from before that record) its saved choice's; None when that choice is a folder
    since moved (taken as the same model)."""
    import json

    if (run_dir / RESULTS).exists():
        recorded = json.loads((run_dir / RESULTS).read_text()).get("text_encoder_identity")
        if recorded is not None:
            return recorded
    try:
        return TextEncoder.parse(saved.get("text_encoder", DEFAULT_TEXT_ENCODER)).identity()
    except DataError:
        return None


def wanted_splits(available: tuple, splits, dataset, run_dir: Path) -> tuple:
    """The splits to score: ``splits`` (default: every split the data has), each one the data
    has; data with none at all (no cold split) is refused, saying how to get one."""
    if not available:
        from coldbrew.data.splits.cold_split import cold_split_hint

        raise DataError(
            f"{dataset.name} has no cold split to score (no val/test files, and {run_dir} trained on "
            f"every item): evaluate on data that has one (--data OTHER), or "
            f"{cold_split_hint(dataset)}"
        )
    wanted = tuple(splits) if splits else available
    missing = [split for split in wanted if split not in available]
    if missing:
        raise ColdbrewError(
            f"{dataset.name} has no {' or '.join(missing)} split (it has: {', '.join(available)})"
        )
    return wanted


def evaluate_run(
    run_dir: Path | str,
    *,
    data: str | None = None,
    splits=None,
    device: str = "auto",
    trust_pickle: bool | None = None,
    protocol: str | None = None,
    cold_candidates: str | None = None,
    text_encoder: str | TextEncoder | None = None,
    output: str = "evaluation.json",
    allow_other_encoder: bool = False,
    load_data=None,
    layout: dict | None = None,
) -> dict:
    """Evaluate RUN_DIR's best checkpoint on its own data (or ``data``); write RUN_DIR/``output``.

    ``splits`` defaults to every split the data has; asking for one it lacks is an error and
    writes nothing. ``protocol`` re-scores under ``"coldbrew"`` or ``"original"`` masking
    (default: the run's own); ``cold_candidates`` ranks a split's users over ``"all"`` cold
    items or the ``"split"``'s own (default: the run's own); ``text_encoder`` replaces the run's
    text encoder (the same model moved elsewhere: another model's vectors do not fit the
    checkpoint). Another model of the same width is refused unless ``allow_other_encoder``,
    and then written to ``evaluation-other-encoder.json``, not over the run's evaluation.
    ``load_data(config)``, when given, returns the data (a cache shared by many runs).
    """
    from coldbrew.tasks import build_task

    encoder, other = encoder_override(Path(run_dir), text_encoder, allow_other_encoder)
    output = OTHER_ENCODER_OUTPUT if other else output

    if protocol is not None:
        check_protocol(protocol)  # refused before anything is loaded
    if cold_candidates is not None:
        check_cold_candidates(cold_candidates)
    config, dataset, model, target = load_best_model(
        run_dir,
        data=data,
        device=device,
        trust_pickle=trust_pickle,
        text_encoder=encoder,
        load_data=load_data,
        layout=layout,
    )
    run_dir = Path(run_dir)
    if protocol is not None:
        config.protocol = check_protocol(protocol)  # the masking only: training is over
    if cold_candidates is not None:
        config.cold_candidates = cold_candidates
    spec = model_spec(config.model)
    task = build_task(spec.task, dataset, config, target)
    wanted = wanted_splits(task.splits(), splits, dataset, run_dir)
    configure_process(target)
    started = time.perf_counter()
    metrics = task.evaluate_splits(
        model, tuple(split for split in wanted if split in EVALUATION_SPLITS)
    )
    result = {
        "run": str(run_dir),
        "data": config.data,
        "protocol": config.protocol,
        "cold_candidates": config.cold_candidates,
        "text_encoder": config.text_encoder.spelling,
        "selection": getattr(dataset, "selection", None),
        "metrics": metrics,
        "eval_seconds": time.perf_counter() - started,  # ranking only, not loading
        "device": device_name(target),
    }
    write_json(result, run_dir / output)
    return result
