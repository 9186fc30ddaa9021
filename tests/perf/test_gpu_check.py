"""benchmarks/gpu/gpu_check.py: its CPU dry run runs every section through coldbrew's own functions
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
GPU_CHECK = ROOT / "benchmarks" / "gpu"
sys.path.insert(0, str(GPU_CHECK))
import gpu_budget  # noqa: E402
import gpu_check  # noqa: E402
import gpu_machine_sections  # noqa: E402
import gpu_report  # noqa: E402

SCRIPT_BUGS = ("NameError", "AttributeError", "TypeError", "KeyError", "ImportError", "SyntaxError")


def environment() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("gpu") / "gpu_check.json"
    command = [sys.executable, str(GPU_CHECK / "gpu_check.py"), "--dry-run", "--in-process"]
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
    at_256 = sections["clcrec_256"]
    assert {"fp32", "fp32 unfused"} <= set(at_256["rows"])  # the fused optimizer's lever
    assert list(at_256["graphs_rows"]) == ["fp32 compile graphs"]  # CUDA graphs' (bf16 too there)
    evaluation = sections["clcrec_eval"]
    assert evaluation["fp32"]["seconds"] > 0
    assert list(evaluation["one_pass"]) == ["default chunk", "chunk 2^12", "chunk 2^16"]
    assert all(row["passes"] >= 3 for row in evaluation["one_pass"].values())
    assert evaluation["one_pass_metric_difference"] < 1e-12  # any chunk size ranks alike
    for chunk in ("default chunk", "chunk 2^16"):  # where the evaluation's time goes
        assert evaluation[f"profile {chunk}"]["top_operators"]
    assert sections["lm"]["text"]["items"] == 190  # the text pipeline, on the carried weights
    assert sections["lm_run"]["run"]["epochs_run"] >= 1
    assert sections["synthetic_memory"]["steps_of_epoch"]["run"] == plan["synthetic_steps"]
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


def test_the_dry_run_prints_the_expected_device_seconds_of_each_call(dry_run):
    _, printed = dry_run
    assert "expected GPU seconds" in printed and "fits with margin" in printed
    for _, names, deadline in gpu_budget.CALLS:
        assert f"--deadline {deadline:.0f}" in printed
        assert all(name in printed for name in names)


def test_every_call_fits_its_deadline_and_the_calls_the_device_budget_with_margin():
    budget = gpu_budget.budget_rows(gpu_check.BOXES)
    assert budget["fits"], gpu_budget.budget_table(budget)
    assert budget["worst_device_seconds"] <= 0.9 * gpu_budget.DEVICE_BUDGET
    chosen = [name for _, names, _ in gpu_budget.CALLS for name in names]
    assert len(chosen) == len(set(chosen)) and set(chosen) <= set(gpu_check.BOXES)
    for call in budget["calls"]:
        for row in call["sections"]:  # a box holds its section as last measured, and more
            assert row["box"] >= row["expected"], row
        assert call["timeout_s"] <= 600  # the device tool's longest call
    # the sections cut off on 2026-11-26 have their own boxes, and expect to fill them
    rows = {row["section"]: row for call in budget["calls"] for row in call["sections"]}
    for name in ("pytest_gpu", "synthetic_memory"):
        assert rows[name]["expected"] == gpu_check.BOXES[name] < 120


def test_expected_seconds_come_from_the_last_run_that_finished_a_section(tmp_path):
    def report(sections):
        return {"meta": {"device": "H100"}, "sections": sections}

    (tmp_path / "1.json").write_text(
        json.dumps(report({"doctor": {"status": "ok", "seconds": 30.0}}))
    )
    (tmp_path / "2.json").write_text(
        json.dumps(report({"doctor": {"status": "timeout", "seconds": 40.0}}))
    )
    measured = gpu_budget.last_measured(tmp_path)
    assert measured["doctor"]["seconds"] == 30.0 and measured["doctor"]["file"] == "1.json"
    assert gpu_budget.expected_seconds("doctor", 40, measured)[0] == 30.0
    assert gpu_budget.expected_seconds("zoo", 90, measured) == (
        90,
        "no finished run: its whole box",
    )


def test_a_call_names_its_sections_and_deadline(tmp_path):
    with pytest.raises(SystemExit, match="no clcrec-movielens"):
        gpu_check.main(["--call", "1", "--data", str(tmp_path)])
    with pytest.raises(SystemExit):
        gpu_check.main(["--call", "1", "--only", "doctor"])


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


GPU_TESTS = """
import pytest

@pytest.mark.gpu
def test_fine():
    pass

@pytest.mark.gpu
def test_broken():
    assert 1 == 2

@pytest.mark.gpu
def test_not_here():
    pytest.skip("no such device")

def test_not_gpu_marked():
    pass
"""


def test_the_gpu_tests_section_records_each_outcome_from_the_files_with_gpu_tests(tmp_path):
    (tmp_path / "test_some_gpu.py").write_text(GPU_TESTS)
    (tmp_path / "test_no_gpu.py").write_text("def test_plain():\n    pass\n")
    plan = {"pytest_targets": [str(tmp_path)]}
    found = gpu_check.run_section("pytest_gpu", plan, {}, None)
    assert found["files"] == [str(tmp_path / "test_some_gpu.py")]  # only those holding one
    by_name = {name.split("::")[1]: test for name, test in found["tests"].items()}
    outcomes = {name: test["outcome"] for name, test in by_name.items()}
    assert outcomes == {"test_fine": "passed", "test_broken": "failed", "test_not_here": "skipped"}
    assert "assert 1 == 2" in by_name["test_broken"]["message"]
    assert found["counts"] == {"passed": 1, "failed": 1, "skipped": 1}
    assert found["running"] is None


def test_a_test_cut_off_at_the_box_is_named_as_running(tmp_path):
    log = tmp_path / "progress.jsonl"
    lines = [
        {"start": "t.py::test_a"},
        {"test": "t.py::test_a", "outcome": "passed", "seconds": 1.0, "message": ""},
        {"start": "t.py::test_b"},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tests, running = gpu_machine_sections.pytest_outcomes(log)
    assert list(tests) == ["t.py::test_a"] and running == "t.py::test_b"
