"""``coldbrew memory``: what a training step needs per device, traced rather than guessed.

The step is run as a GPU runs it (fixed shapes, the rank sampler) on *fake* tensors
(``FakeTensorMode``: shapes and dtypes, no storage, no arithmetic), under PyTorch's own
``MemTracker``, which records every allocation by kind: parameters, buffers (the model's data:
content features), gradients, optimizer state, activations and temporaries. Two traces at
micro-batches ``B`` and ``2B`` give the per-sample cost; what stays is fixed. The task's own
tables (positives, the sampler's keys) are real tensors, counted by their size. The evaluation
chunk is a formula (scores and top-k of ``chunk_elements`` per block, plus both embedding
tables), labelled as such. With ``world_size`` ranks, DDP keeps a full replica per device and a
gradient bucket copy of every gradient.

The same fake step also gives FLOPs (``torch.utils.flop_counter``) and an upper bound on bytes
moved (every op's inputs and outputs), from which ``roofline`` estimates a GPU's step time:
``max(FLOPs / peak FLOP/s, bytes / bandwidth)`` plus a launch cost per kernel. Estimates, not
measurements: BENCHMARKS.md compares the memory estimate with measured CPU peaks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.memory.devices import GPUS, LAUNCH_SECONDS, MARGIN, device_capacity

MIN_STEPS_PER_EPOCH = 8  # no batch beyond 1/8 of the training set: that is no longer minibatch SGD


@dataclass
class StepTrace:
    batch: int
    peak_bytes: dict[str, int]  # by kind at the step's peak, plus "total"
    flops: int
    bytes_moved: int
    kernels: int


class _Traffic(TorchDispatchMode):
    """Counts ops and the bytes of their tensor inputs and outputs (an upper bound on traffic)."""

    def __init__(self):
        super().__init__()
        self.bytes, self.kernels = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in VIEWS:
            return out
        self.kernels += 1
        for value in (
            *args,
            *(kwargs or {}).values(),
            *(out if isinstance(out, tuple) else (out,)),
        ):
            if isinstance(value, torch.Tensor):
                self.bytes += value.numel() * value.element_size()
        return out


aten = torch.ops.aten
VIEWS = {aten.view, aten._unsafe_view, aten.reshape, aten.expand, aten.t, aten.transpose}
VIEWS |= {aten.permute, aten.slice, aten.select, aten.unsqueeze, aten.squeeze, aten.detach}
VIEWS |= {aten.alias, aten.as_strided}


def trace_step(config: TrainConfig, data, batch: int) -> StepTrace:
    """Peak memory by kind, FLOPs and bytes of one GPU-path step at micro-batch ``batch``."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.utils.flop_counter import FlopCounterMode

    from coldbrew.training.build import build_trainer

    blocker = getattr(config.model_options, "fake_trace_blocker", lambda: None)()
    if blocker:
        raise ColdbrewError(f"cannot trace this step on fake tensors: {blocker}")
    settings = {"batch_size": batch, "grad_accum": 1, "device": "cpu", "compile": False}
    config = make_config(config.to_dict(), {**settings, "quiet": True, "precision": "fp32"})
    with FakeTensorMode(allow_non_fake_inputs=True):
        trainer = build_trainer(config, data, fixed_shapes=True)
        count = trainer.task.num_samples()
        index = torch.arange(batch) % count
        trainer.train_step(index)  # creates the optimizer state
        tracker = MemTracker()
        tracker.track_external(trainer.model, trainer.optimizer)
        traffic, flops = _Traffic(), FlopCounterMode(display=False)
        with tracker, flops, traffic:
            trainer.train_step(index)
        snapshot = tracker.get_tracker_snapshot("peak")
    by_kind = next(iter(snapshot.values())) if snapshot else {}
    peak = {getattr(kind, "value", str(kind)).lower(): int(size) for kind, size in by_kind.items()}
    return StepTrace(batch, peak, int(flops.get_total_flops()), traffic.bytes, traffic.kernels)


def _shape_trace(config: TrainConfig, data, batch: int, world_size: int) -> StepTrace:
    """A ``StepTrace`` from the options' shape estimate at micro-batch ``batch`` (per device:
    the estimate splits ``batch × world_size`` rows over the devices); no FLOPs or kernels."""
    parts = config.model_options.shape_estimate(data, batch * world_size, world_size)
    kinds = {
        "parameter": parts["parameters"],
        "buffer": parts["cached_embeddings"],
        "gradient": parts["gradients"],
        "optstate": parts["optimizer"],
        "activation": parts["activations"],
    }
    return StepTrace(batch, {**kinds, "total": parts["total"]}, 0, 0, 0)


def tensor_bytes(*holders) -> int:
    """Bytes of the tensors held as attributes of ``holders`` (and of their attributes' objects,
    one level down): a task's tables and its sampler's."""
    seen: set[int] = set()
    total = 0

    def add(value) -> None:
        nonlocal total
        if isinstance(value, torch.Tensor) and id(value) not in seen:
            seen.add(id(value))
            total += value.numel() * value.element_size()
        elif isinstance(value, tuple | list):
            for item in value:
                add(item)

    for holder in holders:
        for value in vars(holder).values():
            add(value)
            if hasattr(value, "__dict__") and not isinstance(value, torch.nn.Module | torch.Tensor):
                for inner in vars(value).values():
                    add(inner)
    return total


def large_enough_epoch(config: TrainConfig, data) -> int:
    """Samples in an epoch of ``config``'s task on ``data``."""
    from coldbrew.registry import model_spec
    from coldbrew.tasks import build_task

    return build_task(
        model_spec(config.model).task, data, config, torch.device("cpu")
    ).num_samples()


def task_tables(config: TrainConfig, data) -> int:
    """Bytes of the task's real tables (positives, the sampler) for ``config`` on ``data``."""
    from coldbrew.registry import model_spec
    from coldbrew.tasks import build_task

    task = build_task(model_spec(config.model).task, data, config, torch.device("cpu"))
    task.num_samples()
    return tensor_bytes(task)


def evaluation_bytes(config: TrainConfig, data) -> int | None:
    """Formula, recommendation only: both embedding tables in fp32 plus a block of scores and
    its top-k values and ids (``chunk_elements`` each, default 2**24)."""
    options = config.model_options
    if not hasattr(data, "num_users") or not hasattr(options, "dim"):
        return None
    from coldbrew.evaluation.engine import DEFAULT_CHUNK_ELEMENTS

    chunk = config.eval_chunk_elements or DEFAULT_CHUNK_ELEMENTS
    tables = (data.num_users + data.num_items) * options.dim * 4
    return tables + chunk * (4 + 4 + 8)


def estimate_memory(
    config: TrainConfig,
    data,
    *,
    world_size: int = 1,
    device_memory: int | None = None,
    gpu: str | None = None,
) -> dict:
    """Per-device memory of ``config``'s training step (fixed, per sample, at the configured
    micro-batch), the largest micro-batch that fits ``device_memory`` with a 10 % margin, and,
    with ``gpu``, a roofline step time. Every figure is an estimate. A model whose step cannot
    be traced on fake tensors (pretrained weights: the LM's dynamic and tune modes) is
    estimated from its shapes (its options' ``shape_estimate``); it has no roofline. A model
    with nothing to train has no step: its fit and scoring are measured (``fit_memory``)."""
    from coldbrew.registry import model_spec

    if not model_spec(config.model).trains:
        from coldbrew.training.memory.fit import fit_memory

        return fit_memory(config, data, world_size=world_size, device_memory=device_memory, gpu=gpu)
    batch = config.batch_size
    options = config.model_options
    if getattr(options, "fake_trace_blocker", lambda: None)() and hasattr(
        options, "shape_estimate"
    ):
        small, large = (_shape_trace(config, data, size, world_size) for size in (batch, 2 * batch))
        gpu = None
    else:
        small, large = trace_step(config, data, batch), trace_step(config, data, 2 * batch)
    per_sample = max(0.0, (large.peak_bytes["total"] - small.peak_bytes["total"]) / batch)
    step_fixed = max(0.0, small.peak_bytes["total"] - per_sample * batch)
    tables = task_tables(config, data)
    gradients = sum(value for kind, value in small.peak_bytes.items() if kind.startswith("grad"))
    parameters = small.peak_bytes.get("parameter", 0)
    ddp_buckets = parameters if world_size > 1 else 0  # DDP's bucket copy of every gradient
    fixed = step_fixed + tables + ddp_buckets
    evaluation = evaluation_bytes(config, data)
    report = {
        "model": config.model,
        "data": getattr(data, "name", config.data),
        "micro_batch": batch,
        "world_size": world_size,
        "global_batch": batch * config.grad_accum * world_size,
        "by_kind_at_peak": small.peak_bytes,
        "gradients_at_peak": gradients,
        "task_tables_bytes": tables,
        "ddp_bucket_bytes": ddp_buckets,
        "fixed_bytes": int(fixed),
        "activation_bytes_per_sample": per_sample,
        "training_peak_bytes": int(fixed + per_sample * batch),
        "evaluation_bytes_formula": evaluation,
        "device_memory_bytes": device_memory,
        "largest_micro_batch": None,
        "step_flops": small.flops,
        "step_bytes_moved": small.bytes_moved,
        "step_kernels": small.kernels,
        "method": "shapes" if small.kernels == 0 else "fake-tensor trace",
        "estimate": True,
    }
    if device_memory:
        room = MARGIN * device_memory - fixed
        largest = int(room // per_sample) if per_sample > 0 and room > 0 else 0
        report["largest_micro_batch"] = largest
        # as coldbrew tune: no batch beyond 1/8 of an epoch's samples (split over the ranks)
        cap = max(1, large_enough_epoch(config, data) // (MIN_STEPS_PER_EPOCH * world_size))
        report["suggested_micro_batch"] = max(1, min(largest, cap)) if largest else None
    if gpu:
        report["roofline"] = roofline(small, gpu, config.precision)
    return report


def roofline(trace: StepTrace, gpu: str, precision: str) -> dict:
    """A step's time on ``gpu`` from its FLOPs, bytes and kernels: the slower of compute and
    memory traffic, plus launches. bf16 where ``precision`` is auto or bf16 (a GPU's default)."""
    if gpu not in GPUS:
        raise ValueError(f"unknown GPU {gpu!r}; known: {', '.join(GPUS)}")
    spec = GPUS[gpu]
    kind = "fp32" if precision == "fp32" else "bf16"
    scale = 1.0 if kind == "fp32" else 0.5  # bf16 activations move half the bytes
    compute = trace.flops / spec[kind]
    traffic = trace.bytes_moved * scale / spec["bandwidth"]
    launches = trace.kernels * LAUNCH_SECONDS
    seconds = max(compute, traffic) + launches
    return {
        "gpu": gpu,
        "precision": kind,
        "compute_seconds": compute,
        "memory_seconds": traffic,
        "launch_seconds": launches,
        "step_seconds": seconds,
        "samples_per_second": trace.batch / seconds,
        "bound": "compute" if compute >= traffic else "memory",
        "estimate": True,
    }


def auto_batch(config: TrainConfig, data, device: torch.device, world_size: int = 1):
    """``--batch-size auto``: the suggested micro-batch for this device and the learning rate
    scaled by the square-root rule from the configured one; (batch, lr, the sentence to log)."""
    report = estimate_memory(
        config, data, world_size=world_size, device_memory=device_capacity(device)
    )
    batch = report["suggested_micro_batch"]
    if not batch:
        raise ColdbrewError(
            f"--batch-size auto: not even one sample fits ({report['fixed_bytes'] / 2**30:.2f} GiB "
            f"fixed of {(report['device_memory_bytes'] or 0) / 2**30:.2f} GiB)"
        )
    lr = config.lr * math.sqrt(batch / config.batch_size)
    note = (
        f"--batch-size auto: {batch} (estimated {report['training_peak_bytes'] / 2**30:.2f} GiB "
        f"fixed + {report['activation_bytes_per_sample'] / 2**10:.1f} KiB per sample; largest "
        f"fitting 90% of {(report['device_memory_bytes'] or 0) / 2**30:.1f} GiB is "
        f"{report['largest_micro_batch']}, capped at 1/{MIN_STEPS_PER_EPOCH} of an epoch); lr "
        f"{config.lr:g} -> {lr:.4g} by the square-root rule (x sqrt({batch}/{config.batch_size}))"
    )
    return batch, lr, note
