"""``coldbrew memory`` and ``--batch-size auto``: a traced estimate whose parts add up, sizes,
the roofline arithmetic, and the batch a run picks."""

from __future__ import annotations

import json
import math

import pytest
import torch

from coldbrew import load_dataset
from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.training.memory.devices import MARGIN, parse_size
from coldbrew.training.memory.estimate import StepTrace, estimate_memory, roofline, trace_step
from coldbrew.training.run import build_trainer, train

SMALL = {"data": "synthetic:small", "batch_size": 256, "num_neg": 16, "quiet": True}


@pytest.fixture(scope="module")
def dataset():
    return load_dataset("synthetic:small", seed=1)


def test_sizes():
    assert parse_size("80GB") == 80 * 10**9
    assert parse_size("24GiB") == 24 * 2**30
    assert parse_size("512m") == 512 * 2**20
    for bad in ("", "GB", "-1GB", "12 parsecs", "inf"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_the_trace_sees_the_models_parameters_and_adams_state(dataset):
    config = make_config(SMALL)
    trace = trace_step(config, dataset, 256)
    model = build_trainer(config, dataset).model
    parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert trace.peak_bytes["parameter"] == parameter_bytes
    # Adam: exp_avg and exp_avg_sq per parameter, plus a scalar step counter each
    steps = 4 * len(list(model.parameters()))
    assert trace.peak_bytes["optstate"] == 2 * parameter_bytes + steps
    assert trace.peak_bytes["total"] == sum(v for k, v in trace.peak_bytes.items() if k != "total")
    assert trace.flops > 0 and trace.kernels > 0


def test_activations_grow_with_the_batch_and_the_largest_batch_fits(dataset):
    config = make_config(SMALL)
    capacity = 2 * 2**30
    report = estimate_memory(config, dataset, device_memory=capacity)
    per_sample, fixed = report["activation_bytes_per_sample"], report["fixed_bytes"]
    assert per_sample > 0
    assert report["training_peak_bytes"] == int(fixed + per_sample * 256)
    largest = report["largest_micro_batch"]
    # the largest batch within 90% of the device, and one more sample would not fit
    assert fixed + per_sample * largest <= MARGIN * capacity < fixed + per_sample * (largest + 1)
    assert report["suggested_micro_batch"] == min(largest, dataset.num_train // 8)
    two = estimate_memory(config, dataset, world_size=2, device_memory=capacity)
    assert two["ddp_bucket_bytes"] == report["by_kind_at_peak"]["parameter"]
    assert two["global_batch"] == 512


def test_roofline_by_hand():
    # 2e12 FLOPs and 1e9 bytes on a 4090 in bf16: compute 2e12 / 165.2e12 = 12.1 ms, memory
    # (1e9 / 2 bytes in bf16) / 1.008e12 B/s = 0.50 ms, 100 kernels x 4 us = 0.4 ms
    trace = StepTrace(batch=1000, peak_bytes={}, flops=2 * 10**12, bytes_moved=10**9, kernels=100)
    result = roofline(trace, "rtx4090", "auto")
    assert result["compute_seconds"] == pytest.approx(2e12 / 165.2e12)
    assert result["memory_seconds"] == pytest.approx(0.5e9 / 1.008e12)
    assert result["step_seconds"] == pytest.approx(2e12 / 165.2e12 + 100 * 4e-6)
    assert result["bound"] == "compute"
    assert result["samples_per_second"] == pytest.approx(1000 / result["step_seconds"])


def test_memory_command_table_and_json(capsys):
    argv = ["memory", "--data", "synthetic:small", "--batch-size", "256", "--num-neg", "16"]
    assert main([*argv, "--device-memory", "4GiB", "--gpu", "a100-80gb"]) == 0
    text = capsys.readouterr().out
    assert "largest micro-batch within 90%" in text and "estimated step on a100-80gb" in text
    assert text.strip().endswith("all figures are estimates")
    assert main([*argv, "--world-size", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["world_size"] == 2 and report["estimate"] is True


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--device-memory", "lots"], "--device-memory must be a memory size"),
        (["--gpu", "tpu"], "--gpu must be one of"),
        (["--world-size", "0"], "--world-size must be at least 1"),
    ],
)
def test_memory_command_refuses_bad_options(capsys, flags, message):
    assert main(["memory", "--data", "synthetic:small", *flags]) == 2
    assert message in capsys.readouterr().err


def test_auto_batch_picks_the_estimate_and_scales_the_lr(tmp_path, dataset):
    config = make_config({**SMALL, "batch_size": "auto", "epochs": 1})
    assert config.auto_batch_size and config.batch_size == 2048  # the reference for the lr
    reference_lr = config.lr
    results = train(config, tmp_path / "run", dataset=dataset)
    chosen = results["config"]["batch_size"]
    assert 1 <= chosen <= dataset.num_train // 8
    assert results["config"]["lr"] == pytest.approx(reference_lr * math.sqrt(chosen / 2048))
    assert any(note.startswith("--batch-size auto: ") for note in results["notes"])
    assert "square-root rule" in (tmp_path / "run" / "train.log").read_text()


def test_the_progress_bar_reads_memory_without_a_device_sync():
    from coldbrew.system.memory import memory_postfix

    text = memory_postfix(torch.device("cpu"))
    assert text.startswith("rss ") and text.endswith("GiB")


def test_live_bytes_counts_what_ops_allocate_until_it_is_freed():
    from coldbrew.training.memory.fit import LiveBytes

    with LiveBytes() as live:
        ones = torch.ones(1000)  # 4,000 bytes
        doubled = ones * 2  # 4,000 more: 8,000 live
        del doubled  # back to 4,000
        ones.add_(1)  # in place: nothing new
        ones.view(10, 100)  # a view: nothing new
        sparse = torch.eye(4).to_sparse()  # 64 (the eye, freed) + indices 2x4 int64 + 4 floats
    assert live.peak == 8000
    assert live.live == 4000 + 2 * 4 * 8 + 4 * 4
    assert sparse.is_sparse


@pytest.mark.parametrize("model", ["ridge", "knn", "marec", "popularity"])
def test_memory_of_a_model_with_nothing_to_train(capsys, private_cache, model):
    # closed-form models have no training step: their fit and scoring are measured instead
    argv = ["memory", "--data", "synthetic:small", "--model", model, "--device-memory", "4GiB"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["training_step"] is None and report["fits"] is True
    assert report["peak_bytes"] == max(report["fit_peak_bytes"], report["scoring_peak_bytes"])
    # the chunk's scores (users x items float32) sit on top of the model's state
    data = load_dataset("synthetic:small", seed=1)
    assert report["scoring_users"] == min(data.num_users, 2**24 // data.num_items)
    scores = report["scoring_users"] * data.num_items * 4
    assert report["scoring_peak_bytes"] >= report["model_state_bytes"] + scores
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"{model} has no training step" in text and "a run's peak" in text
