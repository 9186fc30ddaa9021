"""benchmarks/gpu_check.py: its CPU dry run runs every section through coldbrew's own functions
and writes the report the device run will write; a failing section is recorded and the rest
still run; the deadline and the time boxes stop what would overrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import gpu_check  # noqa: E402
import gpu_report  # noqa: E402

SCRIPT_BUGS = ("NameError", "AttributeError", "TypeError", "KeyError", "ImportError", "SyntaxError")


def environment() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("gpu") / "gpu_check.json"
    command = [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--dry-run", "--in-process"]
    done = subprocess.run(
        [*command, "--out", str(out)], env=environment(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout


def test_every_section_runs_on_the_cpu(dry_run):
    report, printed = dry_run
    names = [name for name, _, _ in gpu_check.SECTIONS]
    assert list(report["sections"]) == names
    for name, row in report["sections"].items():
        error = row.get("result", {}).get("traceback") or row.get("error") or ""
        assert not any(bug in error for bug in SCRIPT_BUGS), (name, error)
        assert row["status"] == "ok", (name, error)
        assert row["result"]["headline"], name
        assert name in printed
    assert report["meta"]["dry_run"] is True and report["meta"]["device"] == "cpu"
    assert set(report["targets"]) == set(gpu_report.targets({"sections": {}}))
    assert report["rerun"] is None


def test_the_dry_run_measures_what_the_device_run_reports(dry_run):
    report, _ = dry_run
    sections = {name: row["result"] for name, row in report["sections"].items()}
    plan = report["plan"]
    fastest = sections["clcrec_sweep"]["fastest"]
    assert fastest["batch_size"] in plan["batches"]
    assert sections["clcrec_fastest"]["batch_size"] == fastest["batch_size"]  # passed along
    for grid in ("clcrec_256", "clcrec_fastest"):
        for row in sections[grid]["rows"].values():
            assert row["samples_per_second"] > 0 and row["epoch_seconds"] > 0
    assert sections["clcrec_eval"]["fp32"]["seconds"] > 0
    assert sections["sync_free"]["fp32"]["error_mode"].startswith("no CUDA")
    zoo = sections["zoo"]
    for model in plan["zoo"]:
        assert "error" not in zoo[model], zoo[model]
        assert zoo[model]["epochs_run"] >= 1
    assert zoo["backbones_cached_before"] and zoo["backbones_trained_here"] == []  # carried
    assert sections["lm"]["cache"]["steps_per_second"] > 0
    assert sections["lm"]["tune"]["steps_per_second"] > 0
    assert (
        "clcrec" in sections["leaderboard"]["table"] and "knn" in sections["leaderboard"]["table"]
    )
    memory = sections["synthetic_memory"]
    assert memory["estimate"]["training_peak_bytes"] > 0
    assert memory["estimate_over_measured"] > 0
    tests = sections["pytest_gpu"]["tests"]
    assert tests and {test["outcome"] for test in tests.values()} == {"skipped"}  # no CUDA here
    assert "verdict" in sections["profile"]["report"] and sections["doctor"]["table"]


def test_a_failing_section_is_recorded_and_the_next_still_runs(tmp_path):
    plan = {"doctor_seconds": 0.01, "compile_probe": False}  # no "zoo": that section fails
    report = gpu_check.run_all(plan, ["zoo", "doctor"], 120, tmp_path / "r.json", True)
    assert report["sections"]["zoo"]["status"] == "error"
    assert "KeyError" in report["sections"]["zoo"]["result"]["error"]
    assert report["sections"]["doctor"]["status"] == "ok"
    assert report["rerun"] == "--only zoo"
    assert json.loads((tmp_path / "r.json").read_text())["sections"]["doctor"]["status"] == "ok"


def test_sections_past_the_deadline_are_skipped_and_the_report_still_written(tmp_path):
    report = gpu_check.run_all({}, ["doctor", "zoo"], 1.0, tmp_path / "r.json", True)
    assert {row["status"] for row in report["sections"].values()} == {"skipped"}
    assert all(row["met"] is None for row in report["targets"].values())
    assert "doctor" in gpu_report.table(report)


@pytest.mark.slow
def test_a_section_in_its_own_process_is_killed_at_its_time_box(tmp_path):
    plan = {"doctor_seconds": 0.01, "compile_probe": False, "data_root": str(tmp_path)}
    env = gpu_check.child_env(plan)
    stopped = gpu_check.section_in_child("doctor", plan, {}, 0.05, env)
    assert stopped["status"] == "timeout" and "time box" in stopped["error"]
    finished = gpu_check.section_in_child("doctor", plan, {}, 120, env)
    assert finished["status"] == "ok", finished.get("output_tail")
    assert finished["result"]["report"]["gpus"] == []
