"""The machine-wide sections of ``gpu_check.py``: ``coldbrew doctor``, ``coldbrew profile``,
the GPU-marked tests, and a large synthetic run against ``coldbrew memory``'s estimate."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
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
    features, 128 negatives) at the sweep's largest batch."""
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
    record("headline", f"{report['samples_per_second']:,.0f} samples/s; {report['verdict']}")


def synthetic_memory(plan: dict, given: dict, record: Record) -> None:
    """A synthetic catalogue (1M items x 200k users on the device): one training epoch and the
    full evaluation, their peak memory against ``estimate_memory``'s figures."""
    import torch

    from coldbrew.data import load_dataset
    from coldbrew.system.memory import peak_rss_bytes, reset_peak_rss, rss_bytes
    from coldbrew.system.timing import peak_memory_bytes, synchronize
    from coldbrew.training.memory_estimate import estimate_memory
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
    )
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
    trainer = build_trainer(config, dataset, fixed_shapes=not cuda)  # the GPU path either way
    device = trainer.runtime.device
    started = time.perf_counter()
    trainer.train_epoch()
    synchronize(device)
    train_seconds = time.perf_counter() - started
    train_peak = peak_memory_bytes(device) if cuda else peak_rss_bytes() - baseline
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
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
            "epoch_seconds": train_seconds,
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
        f"epoch {train_seconds:.1f} s, eval {eval_seconds:.1f} s, estimate/measured {ratio:.2f}",
    )


def junit_outcomes(path: Path) -> dict[str, dict]:
    """{test id: {outcome, message}} from pytest's JUnit XML."""
    outcomes = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                message = (found.get("message") or "")[:300]
                break
        outcomes[name] = {
            "outcome": outcome,
            "seconds": float(case.get("time") or 0),
            "message": message,
        }
    return outcomes


def pytest_gpu(plan: dict, given: dict, record: Record) -> None:
    """``pytest -m gpu``: every GPU-marked test, pass or fail each."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]
        command += ["--continue-on-collection-errors"]  # a module needing a missing extra
        command += [f"--junitxml={report}", *plan["pytest_targets"]]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        tests = junit_outcomes(report) if report.exists() else {}
    counts = {}
    for test in tests.values():
        counts[test["outcome"]] = counts.get(test["outcome"], 0) + 1
    record("exit_code", done.returncode)
    record("tests", tests)
    record("counts", counts)
    record("output_tail", (done.stdout + done.stderr)[-1500:])
    if not tests and done.returncode not in (0, 5):  # 5: no test collected
        raise RuntimeError(f"pytest exited {done.returncode}: {(done.stdout + done.stderr)[-800:]}")
    record("headline", ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())))
