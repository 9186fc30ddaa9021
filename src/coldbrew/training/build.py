"""Building a run: the data its model trains on, and the runtime, task, model and trainer for
a configuration. ``coldbrew.training.run`` (train, resume) and the memory estimate both build
through here, so neither imports the other."""

from __future__ import annotations

import torch

from coldbrew.config import TrainConfig
from coldbrew.data.dataset import Dataset
from coldbrew.registry import model_spec
from coldbrew.system.runtime import make_runtime
from coldbrew.training.distributed import Distributed
from coldbrew.training.trainer import Trainer


def load_run_dataset(config: TrainConfig):
    """The data ``config``'s model trains on (its task's kind: a ``Dataset``, a ``DailySeries``)."""
    from coldbrew.tasks import load_data

    return load_data(model_spec(config.model).task, config)


def build_trainer(
    config: TrainConfig, dataset: Dataset, *, fixed_shapes: bool = False, **options
) -> Trainer:
    """Runtime, the model's task, the model and the trainer for ``config``.

    ``fixed_shapes``: take the step a GPU takes (fixed sizes, no host reads, the rank sampler)
    on any device, to test or measure it on a CPU; model and task receive it when built.

    A run's documented process-wide step: torch's global RNG is seeded with ``config.seed``
    here, then draws the model's initial weights and, during training, the sample order and
    everything random in a step. ``options`` go to ``Trainer`` (``run_dir``, ``log``,
    ``on_epoch_end``, ``distributed``: this process's place in a ``torchrun`` launch, whose
    process group is joined here).
    """
    from coldbrew.registry import build_model
    from coldbrew.tasks import build_task

    distributed = options.setdefault("distributed", Distributed())
    torch.manual_seed(config.seed)
    runtime = make_runtime(distributed.device_name(config.device), config.precision)
    distributed.start(runtime.device)
    spec = model_spec(config.model)
    task = build_task(spec.task, dataset, config, runtime.device, fixed_shapes=fixed_shapes)
    if spec.trains:  # before the backbone is trained and cached
        task.check_trainable()
    teacher = spec.build_teacher(dataset, config, progress=not config.quiet)
    model = build_model(config.model, dataset, config, teacher, fixed_shapes=fixed_shapes)
    return Trainer(model, task, config, runtime, trains=spec.trains, **options)
