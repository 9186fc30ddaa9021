"""The verdict of ``coldbrew profile``: what limits the step, and the option that addresses it.

Each rule reads the profile's numbers and returns one sentence naming the bottleneck, the number
behind it and a concrete option, or None. :func:`findings` keeps them in order of importance:
the first is the verdict. Thresholds:

* CPU contention: load average at least the usable cores, with more than one torch thread;
* sync-bound: at least one host synchronisation per step while the GPU is busy under 70%;
* evaluation-bound: one validation pass is at least half of an epoch's time;
* input-bound: negatives take at least 50% of the step (35% ranks it after launch-bound);
* launch-bound: doubling the batch gives at least 1.5x samples/s, or the GPU is busy under 50%;
* optimizer-bound: the optimizer takes at least 35% (its cost does not grow with the batch);
* otherwise compute-bound in forward or backward, whichever is larger.
"""

from __future__ import annotations

from coldbrew.config import TrainConfig


def _gain(report: dict) -> float | None:
    scaling = report["batch_scaling"]
    return scaling["samples_per_second"] / report["samples_per_second"] if scaling else None


def _or_compile(config: TrainConfig) -> str:
    return "" if config.compile else " or --compile"


def contention(report: dict, config: TrainConfig) -> str | None:
    load, cores, threads = report["load_average"], report["usable_cores"], report["torch_threads"]
    if report["device_busy_fraction"] is not None or load is None or threads <= 1 or load < cores:
        return None
    return (
        f"CPU contention: load average {load:.1f} on {cores} cores before profiling, so torch's "
        f"{threads} threads wait on busy cores and these timings are slow and noisy; "
        "try OMP_NUM_THREADS=1, or an idle machine"
    )


def sync_bound(report: dict, config: TrainConfig) -> str | None:
    syncs, busy = report["syncs_per_step"], report["device_busy_fraction"]
    if syncs is None or syncs < 1 or busy >= 0.7:
        return None
    if report["precision"] == "fp16":
        fix = "--precision bf16 (fp16's GradScaler reads the scale back every step)"
    else:
        fix = "finding them with torch.cuda.set_sync_debug_mode('error')"
    return (
        f"sync-bound: {syncs:.1f} host synchronisations per step leave the GPU busy {busy:.0%} "
        f"of the step; try {fix}"
    )


def evaluation_bound(report: dict, config: TrainConfig) -> str | None:
    share = report["eval_share"]
    if share is None or share < 0.5:
        return None
    on_gpu = report["device_busy_fraction"] is not None
    fix = (
        "a larger --eval-chunk-elements" if on_gpu else "a GPU (--device cuda) or more CPU threads"
    )
    return (
        f"evaluation-bound: one validation pass takes {report['eval_seconds']:.2f}s against "
        f"{report['epoch_seconds_estimate']:.2f}s of training per epoch ({share:.0%} of each "
        f"epoch); try {fix}"
    )


def input_bound(report: dict, config: TrainConfig, threshold: float = 0.5) -> str | None:
    negatives = report["fractions"]["negatives"]
    num_neg = report.get("num_neg")
    if negatives < threshold or not num_neg:
        return None
    rate = report["samples_per_second"] * num_neg
    first = "" if config.compile else "--compile (fuses the sampler), or "
    gpu = "" if report["device_busy_fraction"] is not None else ", or a GPU"
    return (
        f"input-bound: negatives take {negatives:.0%} of step time ({rate:,.0f} negatives/s); "
        f"try {first}--num-neg {max(1, num_neg // 2)} if the accuracy check in "
        f"BENCHMARKS.md allows{gpu}"
    )


def launch_bound(report: dict, config: TrainConfig) -> str | None:
    gain, busy, batch = _gain(report), report["device_busy_fraction"], report["batch_size"]
    evidence = []
    if gain is not None and gain >= 1.5:
        doubled = report["batch_scaling"]["samples_per_second"]
        evidence.append(
            f"doubling the batch gives {gain:.2f}x samples/s "
            f"({report['samples_per_second']:,.0f} -> {doubled:,.0f})"
        )
    if busy is not None and busy < 0.5:
        evidence.append(f"the GPU computes only {busy:.0%} of the step")
    if not evidence:
        return None
    return (
        f"launch-bound at batch {batch}: {' and '.join(evidence)}; try --batch-size {2 * batch} "
        f"(or coldbrew tune){_or_compile(config)}"
    )


def optimizer_bound(report: dict, config: TrainConfig) -> str | None:
    share = report["fractions"]["optimizer"]
    if share < 0.35:
        return None
    return (
        f"optimizer-bound: the Adam step takes {share:.0%} of step time and does not grow with "
        f"the batch; try --batch-size {2 * report['batch_size']} to spread it over more "
        f"samples{_or_compile(config)}"
    )


def compute_bound(report: dict, config: TrainConfig) -> str:
    share, gain = report["fractions"], _gain(report)
    phase = max(("forward", "backward"), key=lambda name: share[name])
    scaled = f"; doubling the batch gives {gain:.2f}x samples/s" if gain is not None else ""
    if report["device_busy_fraction"] is not None:
        if report["precision"] == "fp32":
            fix = "--precision bf16"
        else:
            fix = "--compile" if not config.compile else "a smaller --dim or --num-neg"
    else:
        fix = (
            f"a GPU (--device cuda){_or_compile(config)}; torch uses "
            f"{report['torch_threads']} CPU thread(s) of {report['usable_cores']} cores"
        )
    return f"compute-bound in {phase}: {share[phase]:.0%} of step time{scaled}; try {fix}"


def findings(report: dict, config: TrainConfig) -> list[str]:
    """Every rule that fires, most important first; never empty (compute-bound is the floor)."""
    rules = (
        contention,
        sync_bound,
        evaluation_bound,
        input_bound,
        launch_bound,
        lambda r, c: None if input_bound(r, c) else input_bound(r, c, threshold=0.35),
        optimizer_bound,
        compute_bound,
    )
    return [found for rule in rules if (found := rule(report, config))]
