"""``coldbrew profile``: phase shares that add up, a verdict backed by numbers, a Chrome trace;
the split ``Trainer.train_step`` unchanged; NVML read quietly or not at all."""

from __future__ import annotations

import json
import sys
import types

import pytest
import torch

from coldbrew import load_dataset
from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.perf.profile import PHASES, PhaseClock, phased_step
from coldbrew.perf.verdict import findings
from coldbrew.system import nvml
from coldbrew.training.run import build_trainer

VERDICT_KINDS = (
    "launch-bound",
    "input-bound",
    "compute-bound",
    "optimizer-bound",
    "sync-bound",
    "evaluation-bound",
    "CPU contention",
)

FAST = [
    "--device",
    "cpu",
    "--data",
    "synthetic:small",
    "--batch-size",
    "128",
    "--num-neg",
    "8",
    "--dim",
    "16",
    "--hidden",
    "32",
]


def test_profile_json_keys_and_shares_that_add_up(tmp_path, capsys):
    trace = tmp_path / "trace.json"
    assert (
        main(["profile", *FAST, "--steps", "3", "--warmup", "1", "--trace", str(trace), "--json"])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    for key in (
        "samples_per_second",
        "verdict",
        "findings",
        "phase_seconds",
        "fractions",
        "eval_seconds",
        "batch_scaling",
        "syncs_per_step",
        "gpu",
        "top_operators",
        "step_seconds",
    ):
        assert key in report, key
    assert set(report["fractions"]) == set(PHASES)
    assert sum(report["fractions"].values()) == pytest.approx(1.0)
    assert all(0 <= share <= 1 for share in report["fractions"].values())
    assert report["samples_per_second"] == pytest.approx(128 / report["step_seconds"])
    assert report["batch_scaling"]["batch_size"] == 256
    assert report["eval_seconds"] > 0 and 0 < report["eval_share"] < 1
    # the verdict names one of the documented bottlenecks and the number behind it
    assert report["verdict"].startswith(VERDICT_KINDS) and "try" in report["verdict"]
    assert any(character.isdigit() for character in report["verdict"])
    assert report["findings"] == findings(report, make_config({"num_neg": 8}))
    assert report["syncs_per_step"] is None and report["gpu"] is None  # --device cpu
    regions = {event.get("name") for event in json.loads(trace.read_text())["traceEvents"]}
    assert {f"coldbrew/{phase}" for phase in PHASES} <= regions


def test_profile_table_ends_with_the_verdict(capsys):
    assert main(["profile", *FAST, "--steps", "2", "--warmup", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1].split() == ["phase", "ms/step", "share"]
    assert any(line.startswith("verdict") for line in lines)


def test_phased_step_is_exactly_train_step():
    dataset = load_dataset("synthetic:small", seed=2)
    config = make_config({"batch_size": 64, "num_neg": 4, "dim": 8, "hidden": 16, "quiet": True})
    plain, phased = build_trainer(config, dataset), build_trainer(config, dataset)
    index = torch.arange(64)
    for _ in range(3):
        torch.manual_seed(7)
        plain.train_step(index)
        torch.manual_seed(7)
        phased_step(phased, index, PhaseClock(torch.device("cpu")))
    assert plain.state.optimizer_steps == phased.state.optimizer_steps == 3
    for mine, theirs in zip(phased.model.parameters(), plain.model.parameters(), strict=True):
        assert torch.equal(mine, theirs)


def report_with(**changes) -> dict:
    """A made-up CPU profile: 10 ms steps split 20/40/30/10 at batch 1024, 128 negatives."""
    report = {
        "fractions": {"negatives": 0.2, "forward": 0.4, "backward": 0.3, "optimizer": 0.1},
        "batch_size": 1024,
        "samples_per_second": 100_000.0,
        "precision": "fp32",
        "device_busy_fraction": None,
        "syncs_per_step": None,
        "batch_scaling": {"batch_size": 2048, "samples_per_second": 110_000.0},
        "eval_seconds": 0.1,
        "epoch_seconds_estimate": 10.0,
        "eval_share": 0.1 / 10.1,
        "load_average": 0.1,
        "usable_cores": 8,
        "torch_threads": 8,
        "num_neg": 128,
    }
    report.update(changes)
    return report


CONFIG = make_config({"num_neg": 128, "batch_size": 1024})


def test_verdict_input_bound_names_the_negatives_share():
    found = findings(
        report_with(
            fractions={"negatives": 0.62, "forward": 0.2, "backward": 0.1, "optimizer": 0.08}
        ),
        CONFIG,
    )
    assert found[0].startswith("input-bound: negatives take 62% of step time")
    assert "--num-neg 64" in found[0] and "--compile" in found[0]


def test_verdict_launch_bound_when_a_doubled_batch_nearly_doubles_throughput():
    found = findings(
        report_with(batch_scaling={"batch_size": 2048, "samples_per_second": 190_000.0}), CONFIG
    )
    assert found[0].startswith(
        "launch-bound at batch 1024: doubling the batch gives 1.90x samples/s"
    )
    assert "--batch-size 2048" in found[0]


def test_verdict_launch_bound_on_an_idle_gpu():
    found = findings(report_with(device_busy_fraction=0.3, syncs_per_step=0.0), CONFIG)
    assert found[0].startswith("launch-bound") and "GPU computes only 30%" in found[0]


def test_verdict_sync_bound_with_fp16():
    found = findings(
        report_with(device_busy_fraction=0.4, syncs_per_step=2.0, precision="fp16"), CONFIG
    )
    assert (
        found[0].startswith("sync-bound: 2.0 host synchronisations per step")
        and "--precision bf16" in found[0]
    )


def test_verdict_evaluation_bound():
    found = findings(
        report_with(eval_seconds=30.0, epoch_seconds_estimate=10.0, eval_share=0.75), CONFIG
    )
    assert found[0].startswith("evaluation-bound: one validation pass takes 30.00s against 10.00s")


def test_verdict_compute_bound_in_the_largest_phase():
    found = findings(
        report_with(
            fractions={"negatives": 0.1, "forward": 0.3, "backward": 0.5, "optimizer": 0.1}
        ),
        CONFIG,
    )
    assert found == [
        "compute-bound in backward: 50% of step time; doubling the batch gives 1.10x samples/s; "
        "try a GPU (--device cuda) or --compile; torch uses 8 CPU thread(s) of 8 cores"
    ]
    on_gpu = findings(
        report_with(
            device_busy_fraction=0.95,
            syncs_per_step=0.0,
            fractions={"negatives": 0.1, "forward": 0.3, "backward": 0.5, "optimizer": 0.1},
        ),
        CONFIG,
    )
    assert on_gpu[-1].endswith("try --precision bf16")


def test_verdict_cpu_contention_comes_first():
    found = findings(report_with(load_average=5.0, usable_cores=2, torch_threads=2), CONFIG)
    assert (
        found[0].startswith("CPU contention: load average 5.0 on 2 cores")
        and "OMP_NUM_THREADS=1" in found[0]
    )


def test_nvml_absent_is_quiet(monkeypatch):
    monkeypatch.setattr(nvml, "_NVML", {})
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert nvml.gpu_stats(0) is None and nvml.driver_version() is None
    with nvml.GpuSampler(0) as sampler:
        pass
    assert sampler.summary() is None


def test_nvml_stats_from_a_driver(monkeypatch):
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByPciBusId=lambda bus: "handle",
        nvmlDeviceGetHandleByIndex=lambda index: "handle",
        nvmlDeviceGetUtilizationRates=lambda handle: types.SimpleNamespace(gpu=87, memory=40),
        nvmlDeviceGetMemoryInfo=lambda handle: types.SimpleNamespace(
            used=3 << 30, total=80 << 30, free=77 << 30
        ),
        nvmlSystemGetDriverVersion=lambda: b"550.54",
    )
    monkeypatch.setattr(nvml, "_NVML", {})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    stats = nvml.gpu_stats(0)
    assert stats == {
        "utilization_percent": 87,
        "memory_used_bytes": 3 << 30,
        "memory_total_bytes": 80 << 30,
    }
    assert nvml.driver_version() == "550.54"
    import time

    with nvml.GpuSampler(0, interval=0.001) as sampler:
        deadline = time.monotonic() + 10
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.001)
    assert len(sampler.samples) >= 3, "the sampler thread took no readings within 10 s"
    summary = sampler.summary()
    assert summary["utilization_mean_percent"] == 87 and summary["memory_used_max_bytes"] == 3 << 30


@pytest.mark.gpu
def test_profile_on_a_gpu_counts_syncs_and_reads_nvml(capsys):
    argv = ["profile", "--data", "synthetic:small", "--batch-size", "1024", "--steps", "5"]
    assert main([*argv, "--precision", "fp32", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # fp32 has no GradScaler; negatives, loss, non-finite check and Adam stay on the device
    assert report["syncs_per_step"] == 0
    assert 0 < report["device_busy_fraction"]
    assert sum(report["fractions"].values()) == pytest.approx(1.0)


@pytest.mark.gpu
def test_progress_bar_shows_gpu_stats_without_breaking_training(tmp_path, monkeypatch, capsys):
    from coldbrew.training import trainer as trainer_module
    from coldbrew.training.run import train

    monkeypatch.setattr(trainer_module, "show_progress", lambda config: True)  # no tty here
    config = make_config(
        {"data": "synthetic:small", "epochs": 1, "batch_size": 64, "log_every": 1, "quiet": False}
    )
    results = train(config, tmp_path / "run")
    assert results["epochs_run"] == 1
    err = capsys.readouterr().err
    assert "mem " in err and "GiB" in err


@pytest.mark.slow
def test_profile_with_compile_survives_a_new_batch_size(capsys):
    # the doubled-batch probe is a second batch size: the compiled sampler must recompile, not fail
    assert main(["profile", *FAST, "--steps", "2", "--warmup", "1", "--compile", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["compile"] is True and report["batch_scaling"]["samples_per_second"] > 0
