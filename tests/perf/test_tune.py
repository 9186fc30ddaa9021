"""``coldbrew tune``: a preset that ``coldbrew train --config`` accepts, searches that stop where
they should (out of memory on a GPU, RAM or a flat gain on the CPU), and the lr warning."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from coldbrew.cli import main
from coldbrew.config import make_config
from coldbrew.perf import tune
from coldbrew.perf.tune import Candidate, Deadline, choose, lr_advice, search_cpu, search_gpu

FAST = [
    "--data",
    "synthetic:small",
    "--num-neg",
    "8",
    "--dim",
    "16",
    "--hidden",
    "32",
    "--batch-size",
    "128",
]


def test_tune_writes_a_preset_that_train_accepts(tmp_path, capsys):
    preset = tmp_path / "fast.yaml"
    code = main(
        [
            "tune",
            *FAST,
            "--lr",
            "0.01",
            "--out",
            str(preset),
            "--budget",
            "20",  # an upper bound: the search stops earlier on a flat gain; ample under load
            "--no-compile-search",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["out"] == str(preset) and report["candidates"][0]["batch_size"] == 128
    best = report["best"]
    assert best["fits"] and best["samples_per_second"] > 0
    saved = yaml.safe_load(preset.read_text())
    # the user's options survive; the tuned ones are written
    assert saved["lr"] == 0.01 and saved["clcrec"]["num_neg"] == 8 and saved["clcrec"]["dim"] == 16
    assert saved["batch_size"] == best["batch_size"] and saved["compile"] is False
    moved = best["batch_size"] != 128
    assert (report["lr_warning"] is not None) == moved  # a warning exactly when the batch moved
    assert not moved or ("sqrt" in report["lr_warning"] and "BENCHMARKS.md" in report["lr_warning"])
    assert (
        main(
            [
                "train",
                "--config",
                str(preset),
                "--epochs",
                "1",
                "--quiet",
                "--out",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    assert (tmp_path / "run" / "results.json").exists()


def test_tune_table_and_a_budget_too_small_to_measure(tmp_path, capsys):
    assert (
        main(
            [
                "tune",
                *FAST,
                "--out",
                str(tmp_path / "a.yaml"),
                "--budget",
                "3",
                "--no-compile-search",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert (
        text.splitlines()[1].split()[:3] == ["batch", "compile", "samples/s"]
        and "coldbrew train --config" in text
    )
    assert (
        main(
            [
                "tune",
                *FAST,
                "--out",
                str(tmp_path / "b.yaml"),
                "--budget",
                "0.001",
                "--no-compile-search",
            ]
        )
        == 1
    )
    assert not (tmp_path / "b.yaml").exists()
    argv = ["tune", *FAST, "--out", str(tmp_path / "c.yaml"), "--budget", "0"]
    assert main(argv) == 2 and "--budget must be positive" in capsys.readouterr().err


def fake_measure(fits_up_to: int, rate):
    """A measure() that runs out of memory above ``fits_up_to`` and reports ``rate(batch)`` samples/s."""

    def measure(trainer, batch, seconds, seed):
        if batch > fits_up_to:
            return Candidate(batch, False, fits=False, note="out of memory")
        return Candidate(
            batch,
            False,
            samples_per_second=rate(batch),
            step_seconds=batch / rate(batch),
            bytes_per_sample=1000.0,
        )

    return measure


def test_gpu_search_grows_then_bisects_to_the_largest_batch_that_fits(monkeypatch):
    monkeypatch.setattr(tune, "measure", fake_measure(3000, lambda b: b))
    tried = search_gpu(None, 1024, 10**6, Deadline(60), 0.0, 1)
    assert [c.batch_size for c in tried[:3]] == [1024, 2048, 4096] and not tried[2].fits
    largest = max(c.batch_size for c in tried if c.fits)
    assert 3000 * 15 / 16 <= largest <= 3000  # bisected to within 1/16 of the limit
    assert min(c.batch_size for c in tried if not c.fits) > 3000


def test_gpu_search_goes_down_when_the_given_batch_does_not_fit(monkeypatch):
    monkeypatch.setattr(tune, "measure", fake_measure(300, lambda b: b))
    tried = search_gpu(None, 1024, 10**6, Deadline(60), 0.0, 1)
    assert [c.batch_size for c in tried[:3]] == [1024, 512, 256] and tried[2].fits


def test_cpu_search_stops_when_the_gain_is_under_five_percent(monkeypatch):
    monkeypatch.setattr(tune, "measure", fake_measure(10**9, lambda b: min(b, 4096) * 10.0))
    tried = search_cpu(None, 1024, 10**6, Deadline(60), 0.0, 1)
    assert [c.batch_size for c in tried] == [1024, 2048, 4096, 8192] and "gain under 5%" in tried[
        -1
    ].note
    assert choose(tried).batch_size == 4096  # 8192 is no faster: the smaller batch wins


def test_cpu_search_stops_before_running_out_of_ram(monkeypatch):
    monkeypatch.setattr(tune, "measure", fake_measure(10**9, lambda b: float(b)))
    monkeypatch.setattr(
        tune, "host_memory", lambda: {"total_bytes": 10**7, "available_bytes": 6 * 10**6}
    )
    tried = search_cpu(None, 1024, 10**6, Deadline(60), 0.0, 1)
    # 1000 bytes per sample: 4096 samples need 4.1 MB < 80% of 6 MB = 4.8 MB; 8192 would need 8.2 MB
    assert [c.batch_size for c in tried] == [1024, 2048, 4096] and "would need" in tried[-1].note


def test_cpu_search_stops_at_the_training_set_size(monkeypatch):
    monkeypatch.setattr(tune, "measure", fake_measure(10**9, lambda b: float(b)))
    assert [c.batch_size for c in search_cpu(None, 1024, 3000, Deadline(60), 0.0, 1)] == [
        1024,
        2048,
        3000,
    ]


def test_choose_prefers_compile_only_when_it_is_faster():
    eager = Candidate(2048, False, samples_per_second=100.0)
    assert choose([eager, Candidate(2048, True, samples_per_second=150.0)]).compile is True
    assert (
        choose([eager, Candidate(2048, True, samples_per_second=101.0)]).samples_per_second == 101.0
    )
    assert choose([Candidate(4096, False, fits=False)]) is None


def test_lr_advice_is_the_square_root_rule():
    scaled, warning = lr_advice(make_config({"lr": 0.004, "batch_size": 1024}), 4096)
    assert scaled == pytest.approx(0.008)  # 0.004 * sqrt(4096 / 1024) = 0.004 * 2
    assert "--lr 0.008" in warning and "BENCHMARKS.md" in warning


def test_measure_turns_out_of_memory_into_a_result(monkeypatch):
    from coldbrew import load_dataset
    from coldbrew.training.run import build_trainer

    trainer = build_trainer(
        make_config({"dim": 8, "hidden": 16, "num_neg": 4, "quiet": True}),
        load_dataset("synthetic:small"),
    )

    def out_of_memory(index):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(trainer, "train_step", out_of_memory)
    candidate = tune.measure(trainer, 64, 0.01, 1)
    assert candidate.fits is False and candidate.note == "out of memory"


@pytest.mark.gpu
def test_tune_on_a_gpu_finds_a_batch_and_writes_the_preset(tmp_path, capsys):
    preset = tmp_path / "gpu.yaml"
    data = "synthetic:users=20000,items=5000"  # ~250k training rows: batches up to ~31k
    assert main(["tune", "--data", data, "--out", str(preset), "--budget", "30", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    best = report["best"]
    assert best["fits"] and yaml.safe_load(preset.read_text())["batch_size"] == best["batch_size"]
    assert all(c["peak_memory_bytes"] > 0 for c in report["candidates"] if c["fits"])
    assert len(report["candidates"]) >= 2  # it grew past the given batch


def test_the_tune_table_labels_binary_sizes_as_such():
    from coldbrew.perf.tables import tune_table

    candidate = {"batch_size": 64, "compile": False, "samples_per_second": 10.0, "fits": True}
    candidate |= {"step_seconds": 0.01, "note": "", "peak_memory_bytes": 3 * 2**30}
    report = {
        "device": "cpu",
        "budget_seconds": 1,
        "given_batch_size": 64,
        "candidates": [candidate],
    }
    report |= {"best": candidate, "out": None, "notes": [], "lr_warning": None}
    assert "3.00 GiB" in tune_table(report)
