"""The readable tables of ``coldbrew doctor``, ``profile`` and ``tune`` (``--json`` prints the dicts)."""

from __future__ import annotations

from coldbrew.perf.profile import PHASES


def _amount(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.1f}{prefix}{unit}"
    return f"{value:.1f}{unit}"


def doctor_table(report: dict) -> str:
    """The report as an aligned two-column table."""
    rows = [
        *_machine_rows(report["versions"], report["cpu"]),
        *_gpu_rows(report),
        _compile_row(report["compile"]),
        *_speed_rows(report),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    lines += [f"note: {note}" for note in report["notes"]]
    return "\n".join(lines)


def _machine_rows(v: dict, cpu: dict) -> list[tuple[str, str]]:
    """Python, torch and its CUDA build, the CPU, torch's threads and the host memory."""
    return [
        ("python", v["python"]),
        (
            "torch",
            f"{v['torch']} (CUDA build {v['cuda_build'] or 'none'}, cuDNN {v['cudnn'] or 'none'}"
            + (f", driver {v['driver']})" if v["driver"] else ")"),
        ),
        (
            "cpu",
            f"{cpu['processor']}, {cpu['cores']} cores ({cpu['usable_cores']} usable), "
            f"torch threads {cpu['torch_threads']}"
            + (f", load {cpu['load_average']:.1f}" if cpu["load_average"] is not None else ""),
        ),
        (
            "threads",
            f"{cpu['thread_choice']['threads']}: {cpu['thread_choice']['reason']}"
            if "thread_choice" in cpu
            else "n/a",
        ),
        (
            "memory",
            f"{_amount(cpu['memory_total_bytes'], 'B')} total, {_amount(cpu['memory_available_bytes'], 'B')} available",
        ),
    ]


def _gpu_rows(report: dict) -> list[tuple[str, str]]:
    """One row per GPU, or one saying why there is none."""
    if not report["gpus"]:
        return [("gpu", report["gpu_note"])]
    return [
        (
            f"gpu {gpu['index']}",
            f"{gpu['name']}, {_amount(gpu['memory_bytes'], 'B')}, compute {gpu['compute_capability']}, "
            f"bf16 {'yes' if gpu['bf16'] else 'no'}, tf32 {'yes' if gpu['tf32'] else 'no'}",
        )
        for gpu in report["gpus"]
    ]


def _compile_row(compiled: dict) -> tuple[str, str]:
    if compiled.get("skipped"):
        return ("torch.compile", "not checked")
    if compiled["works"]:
        return (
            "torch.compile",
            f"works: a tiny function compiled and ran in {compiled['compile_seconds']:.1f}s "
            f"({compiled['seconds']:.1f}s with the process start)",
        )
    return ("torch.compile", f"FAILS after {compiled['seconds']:.1f}s: {compiled['error']}")


def _speed_rows(report: dict) -> list[tuple[str, str]]:
    """Host-to-GPU copy, matmul and the sampler on each device."""
    copy = report["copy"]
    rows = [
        (
            "copy host->gpu",
            f"pinned {copy['pinned_gb_per_s']:.1f} GB/s, pageable {copy['pageable_gb_per_s']:.1f} GB/s"
            if copy
            else "no GPU",
        ),
        (
            "matmul",
            ", ".join(
                f"{name} {_amount(value * 1e9 if value else None, 'FLOP/s')}"
                for name, value in report["matmul_gflops"].items()
            ),
        ),
    ]
    for device, result in report["sampler"].items():
        text = (
            "failed"
            if result is None
            else (
                f"{_amount(result['rows_per_second'])} rows/s, {_amount(result['negatives_per_second'])} "
                f"negatives/s (batch {result['batch']} x {result['num_neg']})"
            )
        )
        rows.append((f"sampler ({device})", text))
    return rows


def profile_table(report: dict) -> str:
    lines = [
        f"{report['model']} on {report['device']}, {report['precision']}, batch {report['batch_size']}, "
        f"{report['num_neg']} negatives, compile {'on' if report['compile'] else 'off'}, {report['steps']} steps",
        f"{'phase':<12}{'ms/step':>10}{'share':>8}",
    ]
    for name in PHASES:
        lines.append(
            f"{name:<12}{report['phase_seconds'][name] * 1e3:>10.2f}{report['fractions'][name]:>8.0%}"
        )
    lines.append(
        f"{'step':<12}{report['step_seconds'] * 1e3:>10.2f}   (plain steps, no syncs between parts)"
    )
    lines.append(f"samples/s   {report['samples_per_second']:,.0f}")
    if report["batch_scaling"]:
        lines.append(
            f"batch {report['batch_scaling']['batch_size']:<6}{report['batch_scaling']['samples_per_second']:,.0f} samples/s"
        )
    if report["eval_seconds"] is not None:
        lines.append(
            f"evaluation  {report['eval_seconds']:.3f}s per validation pass; training epoch ~{report['epoch_seconds_estimate']:.3f}s"
        )
    if report["syncs_per_step"] is not None:
        lines.append(
            f"host syncs  {report['syncs_per_step']:.1f} per step; GPU busy {report['device_busy_fraction']:.0%} of the step"
        )
    if report["gpu"]:
        gpu = report["gpu"]
        lines.append(
            f"nvml        utilisation {gpu['utilization_mean_percent']:.0f}% mean, memory {gpu['memory_used_max_bytes'] / 2**30:.1f} GiB max"
        )
    lines.append(
        "top ops     "
        + ", ".join(f"{op['name']} {op['self_ms']:.1f}ms" for op in report["top_operators"][:3])
    )
    if report["trace"]:
        lines.append(f"trace       {report['trace']} (open in chrome://tracing or ui.perfetto.dev)")
    lines.append(f"verdict     {report['verdict']}")
    lines += [f"also        {finding}" for finding in report["findings"][1:]]
    return "\n".join(lines)


def tune_table(report: dict) -> str:
    lines = [
        f"tune on {report['device']} (budget {report['budget_seconds']:g}s, given batch {report['given_batch_size']})",
        f"{'batch':>8}  {'compile':7}  {'samples/s':>12}  {'step ms':>9}  {'peak mem':>9}  note",
    ]
    for c in report["candidates"]:
        memory = _gib(c["peak_memory_bytes"]) if c["peak_memory_bytes"] else "-"
        rate = f"{c['samples_per_second']:,.0f}" if c["fits"] else "-"
        step = f"{c['step_seconds'] * 1e3:.1f}" if c["fits"] else "-"
        lines.append(
            f"{c['batch_size']:>8}  {'on' if c['compile'] else 'off':7}  {rate:>12}  {step:>9}  {memory:>9}  {c['note']}"
        )
    best = report["best"]
    if best:
        lines.append(
            f"best: batch {best['batch_size']}, compile {'on' if best['compile'] else 'off'}: "
            f"{best['samples_per_second']:,.0f} samples/s"
        )
    lines += report["notes"] + ([report["lr_warning"]] if report["lr_warning"] else [])
    if report["out"]:
        lines.append(
            f"wrote {report['out']}; use it with: coldbrew train --config {report['out']} --out RUN_DIR"
        )
    return "\n".join(lines)


def _gib(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"


def memory_table(report: dict) -> str:
    """``coldbrew memory``'s estimate, one figure per line (all estimates)."""
    if "training_step" in report:  # nothing to train: the fit and scoring, measured
        return fit_memory_table(report)
    kinds = report["by_kind_at_peak"]
    lines = [
        f"memory estimate for {report['model']} on {report['data']}: micro-batch "
        f"{report['micro_batch']}, {report['world_size']} device(s), global batch {report['global_batch']}",
        "per device, at the step's peak "
        + (
            "(from shapes: coldbrew.models.lm.memory):"
            if report.get("method") == "shapes"
            else "(traced on fake tensors, PyTorch MemTracker):"
        ),
    ]
    for kind in ("parameter", "buffer", "gradient", "optstate", "activation", "temp"):
        if kind in kinds:
            lines.append(f"  {kind:12s} {_gib(kinds[kind])}")
    lines += [
        f"  {'task tables':12s} {_gib(report['task_tables_bytes'])} (positives, sampler)",
        f"  {'DDP buckets':12s} {_gib(report['ddp_bucket_bytes'])}",
        f"training step: {_gib(report['training_peak_bytes'])} = {_gib(report['fixed_bytes'])} fixed"
        f" + {report['activation_bytes_per_sample'] / 2**10:.1f} KiB per sample",
        f"evaluation (formula: embeddings + one score block): {_gib(report['evaluation_bytes_formula'])}",
    ]
    if report["device_memory_bytes"]:
        lines.append(
            f"device memory {_gib(report['device_memory_bytes'])}: largest micro-batch within 90%: "
            f"{report['largest_micro_batch']}; suggested (at most 1/8 of an epoch): "
            f"{report.get('suggested_micro_batch')}"
        )
    roofline = report.get("roofline")
    if roofline:
        lines.append(
            f"estimated step on {roofline['gpu']} ({roofline['precision']}): "
            f"{roofline['step_seconds'] * 1e3:.2f} ms = max(compute {roofline['compute_seconds'] * 1e3:.2f}, "
            f"memory {roofline['memory_seconds'] * 1e3:.2f}) + launches {roofline['launch_seconds'] * 1e3:.2f} ms"
            f" -> {roofline['samples_per_second']:,.0f} samples/s ({roofline['bound']}-bound)"
        )
    lines.append("all figures are estimates")
    return "\n".join(lines)


def fit_memory_table(report: dict) -> str:
    """``coldbrew memory`` for a model with nothing to train (``coldbrew.training.memory.fit``)."""
    lines = [
        f"memory of {report['model']} on {report['data']}, per device: {report['note']}",
        "measured on this CPU with real tensors:",
        f"  {'model state':12s} {_gib(report['model_state_bytes'])} (parameters and buffers)",
        f"  {'fit':12s} {_gib(report['fit_peak_bytes'])} at its peak (building the model)",
        f"  {'scoring':12s} {_gib(report['scoring_peak_bytes'])} at its peak (the state and "
        f"one evaluation chunk of {report['scoring_users']} users)",
        f"a run's peak: {_gib(report['peak_bytes'])}",
    ]
    if report["device_memory_bytes"]:
        fits = "fits" if report["fits"] else "does not fit"
        lines.append(f"device memory {_gib(report['device_memory_bytes'])}: {fits} within 90%")
    lines.append("all figures are estimates")
    return "\n".join(lines)
