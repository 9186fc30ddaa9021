"""``coldbrew bench sample|train|eval``: measure one part on the user's data; the result as a dict.

With variants (``coldbrew bench train --against model=lm``) every configuration gets its own
trainer on the same data and the same sample rows, and their calls alternate in one process,
so the machine's load hits them alike; the figures are then medians of those calls.
"""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Callable

import torch

from coldbrew.config import TrainConfig


def random_features(num_items: int, widths: list[int], seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    names = ["visual", "acoustic", "text"] + [f"feature{i}" for i in range(3, len(widths))]
    return {names[i]: torch.rand(num_items, w, generator=generator) for i, w in enumerate(widths)}


def random_samples(trainer, batch: int, seed: int):
    """A function returning ``batch`` random sample indices of the trainer's task."""
    device = trainer.runtime.device
    generator = torch.Generator(device=device).manual_seed(seed)
    count = trainer.task.num_samples()
    return lambda: torch.randint(count, (batch,), device=device, generator=generator)


def measured_call(
    what: str, trainer, config: TrainConfig, num_users: int
) -> tuple[Callable[[], object], int]:
    """The call ``what`` times with ``trainer`` and the samples one call handles."""
    task = trainer.task
    draw = random_samples(trainer, config.batch_size, config.seed)
    if what == "sample":
        users = task.make_batch(draw()).users
        return (lambda: task.sample(users)), config.batch_size
    if what == "train":
        return (lambda: trainer.train_step(draw())), config.batch_size

    def evaluate_all() -> list:
        return [task.evaluate(trainer.model, split) for split in task.splits()]

    return evaluate_all, num_users


def time_variants(
    what: str,
    calls: dict[str, tuple[Callable[[], object], int]],
    device: torch.device,
    *,
    seconds: float,
    warmup: int,
) -> dict[str, dict]:
    """Median seconds per call and samples/s of each configuration, their calls in turn."""
    from coldbrew.system.timing import time_in_turn

    times = time_in_turn(
        {name: call for name, (call, _) in calls.items()},
        device,
        warmup=1 if what == "eval" else warmup,
        seconds=seconds,
    )
    rows = {}
    for name, (_, samples) in calls.items():
        median = statistics.median(times[name])
        rows[name] = {
            "calls": len(times[name]),
            "seconds": sum(times[name]),
            "seconds_per_call": median,
            "samples_per_second": samples / median,
        }
    return rows


def run_bench(
    what: str,
    config: TrainConfig,
    *,
    feature_widths: list[int] | None = None,
    seconds: float = 10.0,
    warmup: int = 3,
    variants: dict[str, TrainConfig] | None = None,
) -> dict:
    """samples/s of the sampler (``sample``), training steps (``train``) or a full evaluation
    (``eval``) with ``config`` on its data, and the peak memory; with ``variants`` (name ->
    configuration on the same data), each one's figures and throughput over ``config``'s."""
    from coldbrew.system.runtime import configure_process
    from coldbrew.training.run import build_trainer

    if what == "train":
        refuse_untrained(config, variants)
    dataset = bench_dataset(what, config, feature_widths)
    trainer = build_trainer(config, dataset)
    device = trainer.runtime.device
    configure_process(device, deterministic=config.deterministic)
    call, samples = measured_call(what, trainer, config, dataset.num_users)
    if variants:
        calls = {"": (call, samples)}
        for name, variant in variants.items():
            other = build_trainer(variant, dataset)
            calls[name] = measured_call(what, other, variant, dataset.num_users)
        timed = time_variants(what, calls, device, seconds=seconds, warmup=warmup)
        measured = timed.pop("")
    else:
        measured = time_alone(what, call, samples, device, seconds=seconds, warmup=warmup)
    result = bench_result(what, config, dataset, trainer, measured)
    if variants:
        result["timing"] = "medians of calls in turn with the variants"
        result["variants"] = {
            name: {
                "model": variants[name].model,
                "batch_size": variants[name].batch_size,
                "num_neg": getattr(variants[name].model_options, "num_neg", None),
                **row,
                "throughput_over_base": row["samples_per_second"] / measured["samples_per_second"],
            }
            for name, row in timed.items()
        }
    return result


def refuse_untrained(config: TrainConfig, variants: dict[str, TrainConfig] | None) -> None:
    """``bench train`` of a model with nothing to train (the run's or a variant's) is refused."""
    from coldbrew.errors import ColdbrewError
    from coldbrew.registry import model_spec

    for model in {config.model} | {variant.model for variant in (variants or {}).values()}:
        if not model_spec(model).trains:
            raise ColdbrewError(f"{model} has nothing to train: bench eval measures its scoring")


def bench_dataset(what: str, config: TrainConfig, feature_widths: list[int] | None):
    """``config``'s data, its item features replaced by random ones of ``feature_widths``
    where given (or where the data has none and ``what`` is the sampler, which reads none)."""
    from coldbrew.data import load_dataset
    from coldbrew.errors import ColdbrewError
    from coldbrew.tasks import dataset_options

    options = dataset_options(config)
    options["features"] = options["features"] or ([] if feature_widths else None)
    dataset = load_dataset(config.data, **options)
    if feature_widths:
        dataset.features = random_features(dataset.num_items, feature_widths, config.seed)
    elif not dataset.features:  # clcrec-movielens: its feature files were never published
        if what != "sample":
            raise ColdbrewError(
                f"{dataset.name} has no item features to {what} a model on: give --feature-dims "
                "2048,128,100 for random ones of those widths"
            )
        # the sampler reads no features; one random column lets the (unused) model be built
        dataset.features = random_features(dataset.num_items, [1], config.seed)
    return dataset


def time_alone(
    what: str,
    call: Callable[[], object],
    samples: int,
    device: torch.device,
    *,
    seconds: float,
    warmup: int,
) -> dict:
    """Calls, seconds, seconds per call and samples/s of ``call`` timed on its own."""
    from coldbrew.system.timing import time_repeated

    count, elapsed = time_repeated(
        call,
        device,
        warmup=1 if what == "eval" else warmup,
        seconds=seconds,
        min_calls=2 if what == "eval" else 3,
    )
    return {
        "calls": count,
        "seconds": elapsed,
        "seconds_per_call": elapsed / count,
        "samples_per_second": samples * count / elapsed,
    }


def bench_result(what: str, config: TrainConfig, dataset, trainer, measured: dict) -> dict:
    """The JSON line: what was measured, on what data, model and machine, and ``measured``."""
    from coldbrew.system.runtime import device_name
    from coldbrew.system.timing import peak_memory_bytes

    device = trainer.runtime.device
    return {
        "benchmark": what,
        "dataset": dataset.name,
        "users": dataset.num_users,
        "items": dataset.num_items,
        "train_interactions": dataset.num_train,
        "feature_dims": {
            name: list(f.shape)[1]
            for name, f in dataset.features.items()
            if isinstance(f, torch.Tensor)
        },
        "model": config.model,
        "num_neg": getattr(config.model_options, "num_neg", None),
        "batch_size": config.batch_size,
        **measured,
        "epoch_seconds_estimate": dataset.num_train / measured["samples_per_second"]
        if what != "eval"
        else None,
        "peak_memory_bytes": peak_memory_bytes(device),
        "device": device_name(device),
        "precision": trainer.runtime.precision,
        "compile": config.compile,
        "neighbor_loss": getattr(config.model_options, "neighbor_loss", False),
        "neighbor_negatives": getattr(config.model_options, "neighbor_negatives", None),
        "sampler": trainer.task.sampler.method,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
