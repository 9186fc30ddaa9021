"""``coldbrew doctor``: every part measured or reported as text, never a crash; GPU parts on a GPU."""

from __future__ import annotations

import json

import pytest
import torch

from coldbrew.cli import main
from coldbrew.perf import doctor
from coldbrew.perf.tables import doctor_table
from coldbrew.system.memory import host_memory


@pytest.fixture(scope="module")
def report():
    return doctor.run_doctor(seconds=0.05, check_compile=False)


def test_doctor_json_is_one_object_with_every_section(capsys):
    assert main(["doctor", "--json", "--no-compile-check", "--seconds", "0.05"]) == 0
    output = json.loads(capsys.readouterr().out)
    for key in ("versions", "cpu", "gpus", "compile", "copy", "matmul_gflops", "sampler", "notes"):
        assert key in output
    assert output["versions"]["torch"] == torch.__version__
    assert output["cpu"]["cores"] >= 1 and output["cpu"]["torch_threads"] >= 1
    assert output["cpu"]["memory_total_bytes"] >= output["cpu"]["memory_available_bytes"] > 0
    assert output["matmul_gflops"]["cpu_fp32"] > 0
    assert output["sampler"]["cpu"]["rows_per_second"] > 0


def test_sampler_throughput_is_rows_and_negatives_per_measured_second(monkeypatch):
    monkeypatch.setattr(doctor, "time_repeated", lambda fn, device, **options: (10, 2.0))
    result = doctor.sampler_throughput(torch.device("cpu"), seconds=0.01, batch=64, num_neg=8)
    # 10 calls of 64 rows in 2.0 s = 320 rows/s; x 8 negatives = 2,560 negatives/s
    assert result == {
        "batch": 64,
        "num_neg": 8,
        "rows_per_second": 320.0,
        "negatives_per_second": 2560.0,
    }


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the plain no-GPU report")
def test_without_a_gpu_it_says_so_and_still_measures_the_cpu(report):
    assert report["gpus"] == [] and report["copy"] is None and report["gpu"] is None
    assert report["gpu_note"].startswith("no GPU")
    assert set(report["matmul_gflops"]) == {"cpu_fp32"} and set(report["sampler"]) == {"cpu"}
    text = doctor_table(report)
    assert "no GPU" in text and "copy host->gpu  no GPU" in text


def test_table_has_one_row_per_part(report):
    text = doctor_table(report)
    for row in ("python", "torch", "cpu", "memory", "torch.compile", "matmul", "sampler (cpu)"):
        assert any(line.startswith(row) for line in text.splitlines()), row
    assert "not checked" in text


def test_compile_check_reports_a_timeout_instead_of_hanging():
    result = doctor.compile_check(torch.device("cpu"), timeout=0.01)
    assert result["works"] is False and "timed out" in result["error"]


def test_compile_check_reports_a_failure_as_text(monkeypatch):
    monkeypatch.setattr(doctor, "COMPILE_PROBE", "raise RuntimeError('no C++ compiler here')")
    result = doctor.compile_check(torch.device("cpu"), timeout=30)
    assert result["works"] is False and "no C++ compiler here" in result["error"]


def test_a_failing_measurement_becomes_a_note():
    notes: list[str] = []
    assert doctor.measure("matmul", lambda: 1 / 0, notes) is None
    assert notes == ["matmul failed: ZeroDivisionError: division by zero"]


def test_host_memory_is_total_and_available_ram():
    memory = host_memory()
    assert memory["total_bytes"] >= memory["available_bytes"] > 0


@pytest.mark.slow
def test_compile_check_works_with_a_compiler():
    result = doctor.compile_check(torch.device("cpu"), timeout=120)
    assert result["works"], result["error"]
    assert 0 < result["compile_seconds"] <= result["seconds"]


@pytest.mark.gpu
def test_gpu_parts_are_measured(report):
    assert report["gpus"] and report["gpu"] == report["gpus"][0]["name"]
    gpu = report["gpus"][0]
    assert gpu["memory_bytes"] > 0 and "." in gpu["compute_capability"]
    assert report["copy"]["pinned_gb_per_s"] > 0 and report["copy"]["pageable_gb_per_s"] > 0
    for key in ("gpu_fp32", "gpu_tf32", "gpu_bf16"):
        assert report["matmul_gflops"][key] > 0
    assert report["sampler"]["cuda"]["rows_per_second"] > 0
    assert "copy host->gpu  pinned" in doctor_table(report)


@pytest.mark.gpu
def test_compile_check_on_the_gpu():
    result = doctor.compile_check(torch.device("cuda"), timeout=120)
    assert result["works"], result["error"]


@pytest.mark.parametrize(
    "flags", [["--seconds", "-1"], ["--seconds", "nan"], ["--compile-timeout", "0"]]
)
def test_doctor_refuses_times_that_are_not_positive(flags, capsys):
    from coldbrew.cli import main

    assert main(["doctor", *flags]) == 2
    error = capsys.readouterr().err
    assert f"{flags[0]} must be a positive number of seconds, not" in error
    assert error.count("\n") == 1
