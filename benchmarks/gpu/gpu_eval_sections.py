"""The evaluation section of ``gpu_check.py``: the full val + test evaluation of CLCRec on the
CLCRec MovieLens layout, timed and profiled.

Two measures. ``coldbrew bench eval`` (as on 2026-11-26: 0.299 s fp32, 0.287 s bf16 on an
H100) evaluates val and test one after the other, each a scoring pass over every user. A
training run evaluates both in **one** pass (``Trainer.evaluate_splits``), and that pass is
what is timed here at each chunk size (``eval_chunk_elements``: scores held at once), the
configurations in turn, with the metrics of every chunk size compared (the engine ranks
alike whatever the chunk: they must be equal).

Why the chunk size: on the CPU, at these sizes, a pass at the default 2^24 scores (17 chunks of
3,277 users) dispatches 10,147 aten calls, 119 of them ``nonzero`` (a host wait each on a
GPU); at 2^28 (2 chunks) 1,343. On a GPU each call costs a launch, about 10-25 microseconds
of host time, which alone is 0.1-0.25 s at the default and 15-35 ms at 2^28 (docs/gpu.md,
section 5). The profiled passes say whether the device agrees.
"""

from __future__ import annotations

import statistics
import time

from gpu_sections import Record, bench, clcrec_config


def chunk_name(elements: int | None) -> str:
    return "default chunk" if elements is None else f"chunk 2^{elements.bit_length() - 1}"


def clcrec_eval(plan: dict, given: dict, record: Record) -> None:
    """``bench eval`` (val then test) in fp32 and bf16, as on 2026-11-26; then one val + test
    pass at each of ``eval_chunks`` in turn, their metrics compared; a profiled pass at the
    default chunk and at the largest."""
    for precision in plan["precisions"]:
        result = bench(plan, "eval", clcrec_config(plan, plan["batches"][0], precision))
        record(
            precision,
            {
                "seconds": result["seconds_per_call"],
                "calls": result["calls"],
                "users": result["users"],
                "peak_memory_bytes": result["peak_memory_bytes"],
                "passes": "val, then test: two scoring passes",
            },
        )
    headline = [f"bench eval {precision} {result['seconds_per_call']:.4f} s"]
    rows, difference = one_pass_seconds(plan, plan["eval_chunks"])
    record("one_pass", rows)
    record("one_pass_metric_difference", difference)
    best = min(rows, key=lambda name: rows[name]["seconds"])
    headline.append(f"one pass {best} {rows[best]['seconds']:.4f} s")
    differ = "" if difference < 1e-12 else f"; METRICS DIFFER BY {difference:.2g}"
    record("headline", "val+test: " + ", ".join(headline) + differ)
    for elements in (plan["eval_chunks"][0], plan["eval_chunks"][-1]):
        record(f"profile {chunk_name(elements)}", evaluation_profile(plan, elements))


def clcrec_trainer(plan: dict, chunk_elements: int | None, dataset=None):
    """A seeded CLCRec trainer (untrained: the same model for every chunk size) and its data."""
    from coldbrew.data import load_dataset
    from coldbrew.perf.bench import random_features
    from coldbrew.training.run import build_trainer

    if dataset is None:
        dataset = load_dataset(plan["clcrec_data"], features=[])
        dataset.features = random_features(dataset.num_items, plan["feature_dims"], 1)
    config = clcrec_config(plan, plan["batches"][0], eval_chunk_elements=chunk_elements)
    return build_trainer(config, dataset), dataset


def metric_difference(found: dict, reference: dict) -> float:
    """The largest difference of any metric of any group of any split."""
    return max(
        abs(found[split][group][name] - value)
        for split, groups in reference.items()
        for group, values in groups.items()
        for name, value in values.items()
    )


def one_pass_seconds(plan: dict, chunks: list[int | None]) -> tuple[dict, float]:
    """({chunk: median seconds of a val + test pass, passes}, the largest difference of a
    metric between two chunk sizes: the sums' float64 rounding, 1e-16, else a defect), the
    chunk sizes timed in turn for ``bench_seconds`` each at least."""
    from coldbrew.system.timing import synchronize

    trainers, dataset = {}, None
    for elements in chunks:
        trainers[chunk_name(elements)], dataset = clcrec_trainer(plan, elements, dataset)
    first = next(iter(trainers.values()))
    device, splits = first.runtime.device, first.task.splits()
    metrics = {name: trainer.evaluate_splits(splits) for name, trainer in trainers.items()}
    same = max(
        metric_difference(found, metrics[chunk_name(chunks[0])]) for found in metrics.values()
    )
    times: dict[str, list[float]] = {name: [] for name in trainers}
    while min(sum(seconds) for seconds in times.values()) < plan["bench_seconds"] or (
        min(len(seconds) for seconds in times.values()) < 3
    ):
        for name, trainer in trainers.items():
            synchronize(device)
            started = time.perf_counter()
            trainer.evaluate_splits(splits)
            synchronize(device)
            times[name].append(time.perf_counter() - started)
    rows = {
        name: {"seconds": statistics.median(seconds), "passes": len(seconds)}
        for name, seconds in times.items()
    }
    return rows, same


def evaluation_profile(plan: dict, chunk_elements: int | None = None) -> dict:
    """One val + test pass under torch.profiler: where its time goes, on the device and on
    the host (aten calls, the host's waits for the device)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from coldbrew.perf.profile import device_busy_seconds, top_operators
    from coldbrew.system.timing import synchronize

    trainer, _ = clcrec_trainer(plan, chunk_elements)
    device, splits = trainer.runtime.device, trainer.task.splits()
    trainer.evaluate_splits(splits)  # warm-up: the plan, the caches, the allocator
    synchronize(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    started = time.perf_counter()
    with torch_profile(activities=activities) as prof:
        trainer.evaluate_splits(splits)
        synchronize(device)
    events = prof.key_averages()
    return {
        "wall_seconds_profiled": time.perf_counter() - started,
        "device_busy_seconds": device_busy_seconds(prof) if device.type == "cuda" else None,
        "operators": len(events),
        "aten_calls": sum(event.count for event in events if event.key.startswith("aten::")),
        "top_operators": top_operators(prof, device, limit=8),
        "host_waits": {  # each a point where the host waited for the device
            event.key: event.count
            for event in events
            if "Synchronize" in event.key
            or event.key in ("aten::_local_scalar_dense", "aten::nonzero")
        },
    }
