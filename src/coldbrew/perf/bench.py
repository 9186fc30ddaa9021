"""``coldbrew bench sample|train|eval``: measure one part on the user's data; the result as a dict."""

from __future__ import annotations

import datetime

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


def run_bench(
    what: str,
    config: TrainConfig,
    *,
    feature_widths: list[int] | None = None,
    seconds: float = 10.0,
    warmup: int = 3,
) -> dict:
    """samples/s of the sampler (``sample``), training steps (``train``) or a full evaluation
    (``eval``) with ``config`` on its data, and the peak memory."""
    from coldbrew.data import load_dataset
    from coldbrew.system.runtime import configure_process, device_name
    from coldbrew.system.timing import peak_memory_bytes, time_repeated
    from coldbrew.training.run import build_trainer

    dataset = load_dataset(
        config.data,
        trust_pickle=config.trust_pickle,
        features=config.resolved_features() or ([] if feature_widths else None),
        seed=config.seed,
        text_encoder=config.text_encoder,
    )
    if feature_widths:
        dataset.features = random_features(dataset.num_items, feature_widths, config.seed)
    trainer = build_trainer(config, dataset)
    device, task = trainer.runtime.device, trainer.task
    configure_process(device, deterministic=config.deterministic)
    draw = random_samples(trainer, config.batch_size, config.seed)
    if what == "sample":
        users = task.make_batch(draw()).users
        calls, elapsed = time_repeated(
            lambda: task.sample(users), device, warmup=warmup, seconds=seconds
        )
        samples = calls * config.batch_size
    elif what == "train":
        calls, elapsed = time_repeated(
            lambda: trainer.train_step(draw()), device, warmup=warmup, seconds=seconds
        )
        samples = calls * config.batch_size
    else:
        calls, elapsed = time_repeated(
            lambda: [task.evaluate(trainer.model, split) for split in task.splits()],
            device,
            warmup=1,
            seconds=seconds,
            min_calls=2,
        )
        samples = calls * dataset.num_users
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
        "calls": calls,
        "seconds": elapsed,
        "seconds_per_call": elapsed / calls,
        "samples_per_second": samples / elapsed,
        "epoch_seconds_estimate": dataset.num_train / (samples / elapsed)
        if what != "eval"
        else None,
        "peak_memory_bytes": peak_memory_bytes(device),
        "device": device_name(device),
        "precision": trainer.runtime.precision,
        "compile": config.compile,
        "neighbor_loss": getattr(config.model_options, "neighbor_loss", False),
        "neighbor_negatives": getattr(config.model_options, "neighbor_negatives", None),
        "sampler": task.sampler.method,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
