"""The machine-wide sections of ``gpu_check.py``: ``coldbrew doctor``, ``coldbrew profile``,
the GPU-marked tests, and a large synthetic run against ``coldbrew memory``'s estimate."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from gpu_sections import ROOT, Record, clcrec_config, config_for


def doctor(plan: dict, given: dict, record: Record) -> None:
    from coldbrew.perf.doctor import run_doctor
    from coldbrew.perf.tables import doctor_table

    report = run_doctor(
        seconds=plan["doctor_seconds"], check_compile=plan["compile_probe"], compile_timeout=60.0
    )
    record("report", report)
    record("table", doctor_table(report))
    record(
        "headline",
        f"{report['gpu'] or report['gpu_note']}; compile {report['compile'].get('works')}",
    )


def profile(plan: dict, given: dict, record: Record) -> None:
    """``coldbrew profile`` of CLCRec on the CLCRec MovieLens layout (random 2048/128/100
    features, 128 negatives) at ``profile_batch``, then at batch 256 compiled with CUDA graphs
    (``compile_mode="reduce-overhead"``, fused Adam): where a small step's time goes once its
    launches are replayed (the phases: batch, forward, backward, optimizer)."""
    from coldbrew.data import load_dataset
    from coldbrew.perf.bench import random_features
    from coldbrew.perf.profile import profile_training
    from coldbrew.perf.tables import profile_table

    config = clcrec_config(plan, plan["profile_batch"], "auto")
    dataset = load_dataset(config.data, features=[])
    dataset.features = random_features(dataset.num_items, plan["feature_dims"], 1)
    report = profile_training(config, dataset, steps=plan["profile_steps"])
    record("report", report)
    record("table", profile_table(report))
    headline = f"{report['samples_per_second']:,.0f} samples/s; {report['verdict']}"
    record("headline", headline)
    compiled = True in plan["compile_options"]  # the dry run: eager
    small = clcrec_config(
        plan, plan["batches"][0], "fp32", compiled, compile_mode="reduce-overhead"
    )
    report = profile_training(small, dataset, steps=plan["profile_steps"])
    record("report_256_graphs", report)
    record("table_256_graphs", profile_table(report))
    phases = ", ".join(f"{name} {value:.0%}" for name, value in report["fractions"].items())
    record("headline", f"{headline[:60]}; b{small.batch_size} graphs: {phases}")


PROGRESS_STEPS = 25  # the synthetic run's steps between two records


def synthetic_memory(plan: dict, given: dict, record: Record) -> None:
    """A synthetic catalogue (1M items x 200k users on the device): the first
    ``synthetic_steps`` training steps of an epoch and the full evaluation, their peak memory
    against ``estimate_memory``'s figures; the phase it is in recorded as it goes."""
    import torch

    from coldbrew.data import load_dataset
    from coldbrew.system.memory import peak_rss_bytes, reset_peak_rss, rss_bytes
    from coldbrew.system.timing import peak_memory_bytes, synchronize
    from coldbrew.training.memory.estimate import estimate_memory
    from coldbrew.training.run import build_trainer

    started = time.perf_counter()
    dataset = load_dataset(plan["synthetic"])
    record("load_seconds", time.perf_counter() - started)
    record(
        "shape",
        {"users": dataset.num_users, "items": dataset.num_items, "train": dataset.num_train},
    )
    config = config_for(
        plan,
        data=plan["synthetic"],
        model="clcrec",
        batch_size=plan["synthetic_batch"],
        num_neg=128,
        # the default 2^24 scores: chunks of 256 users (up to 782), each part cut into blocks
        # of 65,536 columns, thousands of blocks, each its own top-k and merge (launches and
        # host waits); 2^28 scores (1 GiB): a part in one block
        eval_chunk_elements=plan.get("synthetic_eval_chunk"),
    )
    record("eval_chunk_elements", config.eval_chunk_elements)
    estimate = estimate_memory(config, dataset)
    wanted = (
        "training_peak_bytes",
        "fixed_bytes",
        "evaluation_bytes_formula",
        "largest_micro_batch",
    )
    record("estimate", {key: estimate.get(key) for key in wanted})
    cuda = torch.cuda.is_available()
    baseline = rss_bytes()  # the CPU's measure: peak RSS growth (memory_estimate_check.py's)
    reset_peak_rss()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    record("phase", "build")  # where a run stopped at its box was (2026-11-26: nothing said)
    trainer = build_trainer(config, dataset, fixed_shapes=not cuda)  # the GPU path either way
    device = trainer.runtime.device
    record("build_seconds", time.perf_counter() - started)
    record("phase", "training")

    def training_peak() -> int:
        return peak_memory_bytes(device) if cuda else peak_rss_bytes() - baseline

    # train_epoch's steps, recorded as they go: a section stopped at its box (as the first H100
    # run was, with nothing kept) still has the peak and the pace of the steps it ran
    # steps_total: the epoch's first synthetic_steps, enough for the peak (the first step
    # holds the most, as the optimizer's state is made there), so the section fits its box
    count, step_samples = trainer.task.num_samples(), trainer.step_samples
    epoch_steps = math.ceil(count / step_samples)
    steps_total = min(epoch_steps, plan.get("synthetic_steps") or epoch_steps)
    order = trainer.task.epoch_order()
    record("steps_of_epoch", {"run": steps_total, "epoch": epoch_steps})
    started = time.perf_counter()
    for step, first in enumerate(range(0, steps_total * step_samples, step_samples), start=1):
        trainer.train_step(order[first : first + step_samples])
        if step == 1 or step % PROGRESS_STEPS == 0 or step == steps_total:
            synchronize(device)
            seconds = time.perf_counter() - started
            record("training", {"steps": step, "of": steps_total, "seconds": seconds})
            record("estimate_over_measured", estimate["training_peak_bytes"] / training_peak())
    train_seconds, train_peak = time.perf_counter() - started, training_peak()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    record("phase", "evaluation")
    started = time.perf_counter()
    metrics = trainer.evaluate_splits(trainer.task.splits())
    synchronize(device)
    eval_seconds = time.perf_counter() - started
    eval_peak = peak_memory_bytes(device) if cuda else None
    ratio = estimate["training_peak_bytes"] / train_peak
    record(
        "measured",
        {
            "device": str(device),
            "training_seconds": train_seconds,
            "steps": steps_total,
            "epoch_seconds_projected": train_seconds * epoch_steps / steps_total,
            "training_peak_bytes": train_peak,
            "evaluation_seconds": eval_seconds,
            "evaluation_peak_bytes": eval_peak,
            "peak_is": "torch.cuda.max_memory_allocated from an empty device"
            if cuda
            else "peak RSS growth over the loaded data (CPU)",
            "val_cold_recall@20": metrics.get("val", {}).get("cold", {}).get("recall@20"),
        },
    )
    record("estimate_over_measured", ratio)
    record(
        "headline",
        f"{steps_total} steps {train_seconds:.1f} s, eval {eval_seconds:.1f} s, "
        f"estimate/measured {ratio:.2f}",
    )


GPU_MARK = "pytest.mark.gpu"


def gpu_test_files(targets: list[str]) -> list[str]:
    """The files under ``targets`` that hold a GPU-marked test: collecting the whole suite
    took about 15 s of the section's box on the device."""
    found = []
    for target in targets:
        path = ROOT / target
        files = [path] if path.is_file() else sorted(path.rglob("test_*.py"))
        found += [str(file) for file in files if GPU_MARK in file.read_text()]
    return found


def pytest_outcomes(log: Path) -> tuple[dict[str, dict], str | None]:
    """({test id: {outcome, seconds, message}}, the test still running) from the plugin's log."""
    tests, running = {}, None
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    for line in lines:
        entry = json.loads(line)
        if "start" in entry:
            running = entry["start"]
        else:
            tests[entry.pop("test")] = entry
            running = None if running in tests else running
    return tests, running


def pytest_gpu(plan: dict, given: dict, record: Record) -> None:
    """``pytest -m gpu``: every GPU-marked test, pass or fail each, recorded as each ends."""
    paths = [str(ROOT / "src"), str(ROOT / "tests"), str(Path(__file__).resolve().parent)]
    files = gpu_test_files(plan["pytest_targets"])
    record("files", files)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "progress.jsonl"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "GPU_CHECK_PYTEST_LOG": str(log)}
        command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]
        command += ["-p", "gpu_pytest_progress", "--continue-on-collection-errors", *files]
        child = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        output: list[str] = []
        reader = threading.Thread(target=lambda: output.extend(child.stdout), daemon=True)
        reader.start()
        while child.poll() is None:  # record as tests end: the box may stop this section
            tests, running = pytest_outcomes(log)
            record("tests", tests)
            record("running", running)
            time.sleep(0.5)
        reader.join()
        tests, running = pytest_outcomes(log)
    counts = {}
    for test in tests.values():
        counts[test["outcome"]] = counts.get(test["outcome"], 0) + 1
    text = "".join(output)
    record("tests", tests)
    record("running", running)
    record("exit_code", child.returncode)
    record("counts", counts)
    record("output_tail", text[-1500:])
    if not tests and child.returncode not in (0, 5):  # 5: no test collected
        raise RuntimeError(f"pytest exited {child.returncode}: {text[-800:]}")
    record("headline", ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())))
