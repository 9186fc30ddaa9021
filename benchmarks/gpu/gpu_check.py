"""The GPU path, measured in one call: every section time-boxed, each failure recorded, one JSON.

    make gpu-data                                   # here, once: gpu_data/ (see gpu_data.py)
    python benchmarks/gpu/gpu_check.py                  # on the GPU machine (`make gpu-check`)
    python benchmarks/gpu/gpu_check.py --dry-run        # the same on this CPU, tiny sizes, seconds
    python benchmarks/gpu/gpu_check.py --call 1         # the first of the two device calls
    python benchmarks/gpu/gpu_check.py --only zoo,lm    # a rerun of some sections

Each section runs in a fresh process (a crash, an OOM or a hang stops that section alone),
killed at its time box or at the global deadline, and records its findings as it goes; the
JSON (``--out``, default ``$OUT/gpu_check.json`` when ``$OUT`` is set) is rewritten after every
section, so it is there even if the call is cut off. A table with each section's status and
headline comes last, then the targets of the GPU issue, met or not. docs/gpu.md says what each
section measures and the two device calls that run it (``--call 1``, ``--call 2``);
gpu_budget.py what each section is expected to take there.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_budget  # noqa: E402
import gpu_dry  # noqa: E402
import gpu_eval_sections  # noqa: E402
import gpu_lm_sections  # noqa: E402
import gpu_machine_sections  # noqa: E402
import gpu_sections  # noqa: E402
from gpu_sections import ROOT  # noqa: E402

# (name, function, its time box in seconds on the device): the order is the order of
# importance; gpu_budget.CALLS says which run in each of the two device calls
SECTIONS = [
    ("doctor", gpu_machine_sections.doctor, 40),
    ("clcrec_sweep", gpu_sections.clcrec_sweep, 70),
    ("clcrec_256", gpu_sections.clcrec_256, 100),  # 38 s on an H100 with 4 of its 7 configurations
    ("clcrec_fastest", gpu_sections.clcrec_fastest, 75),
    ("clcrec_eval", gpu_eval_sections.clcrec_eval, 45),  # 15 s on an H100, then 1 chunk size of 3
    ("sync_free", gpu_sections.sync_free, 50),
    ("pytest_gpu", gpu_machine_sections.pytest_gpu, 110),  # 60 s: stopped, twice
    ("synthetic_memory", gpu_machine_sections.synthetic_memory, 100),  # 75 s: likewise
    ("ml1m_clcrec", gpu_sections.ml1m_clcrec, 45),
    ("zoo", gpu_sections.zoo, 90),
    ("lm", gpu_lm_sections.lm, 60),
    ("lm_run", gpu_lm_sections.lm_run, 75),
    ("leaderboard", gpu_sections.leaderboard, 40),
    ("profile", gpu_machine_sections.profile, 60),
]
BOXES = {name: seconds for name, _, seconds in SECTIONS}
FUNCTIONS = {name: function for name, function, _ in SECTIONS}
RESERVE = 5.0  # seconds kept at the deadline to write the JSON and the table


def device_plan(data: Path) -> dict:
    return {
        "dry_run": False,
        "data_root": str(data),
        "clcrec_data": str(data / "clcrec-movielens"),
        "feature_dims": [2048, 128, 100],
        "num_neg": 128,
        "precisions": ["fp32", "bf16"],  # fp32 runs with TF32 on (configure_process)
        "compile_options": [False, True],
        "batches": [256, 1024, 4096, 16384, 65536],  # the first is the replaced system's
        "bench_seconds": 1.5,
        "ml1m_data": str(data / "ml-1m-coldstart"),
        "ml1m_features": "genre",
        "epochs": None,  # whole runs: each model's own epochs and early stop
        "zoo": ["bpr", "deepmusic", "dropoutnet", "heater", "gar", "aldi", "knn"],
        "minilm": str(data / "minilm"),
        "lm_batch": None,
        "synthetic": "synthetic:users=200000,items=1000000",
        "synthetic_batch": 8192,
        "synthetic_steps": 100,  # of the epoch's 468: the peak is reached in the first steps
        "synthetic_eval_chunk": 2**28,
        "fastest_batch": 65536,  # sync_free's batch without a sweep: 2026-11-26's fastest
        "eval_chunks": [None, 2**26, 2**28],  # None: the default (2^24 scores, 17 chunks)
        "lm_run_budget": 40,  # seconds of training + evaluation in the LM's whole run
        "profile_batch": 4096,
        "profile_steps": 20,
        "doctor_seconds": 0.3,
        "compile_probe": True,
        "pytest_targets": ["tests"],
    }


class Recorder:
    """A section's findings, rewritten to ``path`` (atomically) at every ``record``."""

    def __init__(self, path: Path | None):
        self.path, self.found = path, {}

    def __call__(self, key: str, value) -> None:
        self.found[key] = value
        if self.path is not None:
            write_json(self.found, self.path)


def write_json(payload: dict, path: Path) -> None:
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(payload, indent=1, default=str))
    temporary.replace(path)


def run_section(name: str, plan: dict, given: dict, part: Path | None) -> dict:
    """Run section ``name`` here; its findings, with the error if it raised."""
    record = Recorder(part)
    try:
        FUNCTIONS[name](plan, given, record)
    except Exception as error:  # recorded, then the caller marks the section failed
        record("error", f"{type(error).__name__}: {error}")
        record("traceback", traceback.format_exc()[-3000:])
    return record.found


def section_in_process(name: str, plan: dict, given: dict, seconds: float) -> dict:
    started = time.perf_counter()
    found = run_section(name, plan, given, None)
    status = "error" if "error" in found else "ok"
    return {"status": status, "seconds": time.perf_counter() - started, "result": found}


def section_in_child(name: str, plan: dict, given: dict, seconds: float, env: dict) -> dict:
    """Section ``name`` in a fresh process, killed (its whole group) after ``seconds``."""
    with tempfile.TemporaryDirectory() as folder:
        part, inputs = Path(folder) / "part.json", Path(folder) / "inputs.json"
        inputs.write_text(json.dumps({"plan": plan, "given": given}))
        command = [sys.executable, __file__, "--section", name, "--inputs", str(inputs)]
        command += ["--part", str(part)]
        started = time.perf_counter()
        child = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        try:
            output, _ = child.communicate(timeout=max(seconds, 1.0))
            status = "ok" if child.returncode == 0 else "error"
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            output, _ = child.communicate()
            status = "timeout"
        found = json.loads(part.read_text()) if part.exists() else {}
    row = {"status": status, "seconds": time.perf_counter() - started, "result": found}
    if status != "ok":
        row["exit_code"] = child.returncode
        row["output_tail"] = output[-3000:]
        if status == "timeout":
            row["error"] = f"stopped at its time box of {seconds:.0f} s; what it finished is kept"
        else:
            row["error"] = found.get("error") or f"exit {child.returncode}: {output[-300:]}"
    return row


def child_env(plan: dict) -> dict:
    env = dict(os.environ)
    paths = [str(ROOT / "src"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONUNBUFFERED"] = "1"
    if plan.get("data_root"):  # the carried data and its cache (the zoo's backbone)
        env["COLDBREW_CACHE"] = str(Path(plan["data_root"]) / "cache")
        env["COLDBREW_DATA"] = plan["data_root"]
    return env


def meta(plan: dict) -> dict:
    import torch

    try:  # the device gets a copy of the working tree, perhaps without git or .git
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = ""
    cuda = torch.cuda.is_available()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit or None,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "dry_run": plan.get("dry_run"),
        "load_average": os.getloadavg()[0],
    }


def run_all(plan: dict, names: list[str], deadline: float, out: Path, in_process: bool) -> dict:
    """Every section of ``names`` in order within ``deadline`` seconds; the report (also in ``out``)."""
    from gpu_report import targets

    started = time.perf_counter()
    report = {"meta": meta(plan), "plan": plan, "deadline_seconds": deadline, "sections": {}}
    env = child_env(plan)
    if in_process:
        os.environ.update({k: env[k] for k in ("COLDBREW_CACHE", "COLDBREW_DATA") if k in env})
    for name in names:
        left = deadline - RESERVE - (time.perf_counter() - started)
        given = {key: row.get("result", {}) for key, row in report["sections"].items()}
        if left < 5:
            report["sections"][name] = {"status": "skipped", "error": "global deadline reached"}
        elif in_process:
            report["sections"][name] = section_in_process(name, plan, given, left)
        else:
            seconds = min(BOXES[name] * plan.get("budget_scale", 1.0), left)
            report["sections"][name] = section_in_child(name, plan, given, seconds, env)
        report["seconds"] = time.perf_counter() - started
        write_json(report, out)
    report["targets"] = targets(report)
    not_ok = [name for name, row in report["sections"].items() if row["status"] != "ok"]
    report["rerun"] = f"--only {','.join(not_ok)}" if not_ok else None
    write_json(report, out)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on this CPU")
    parser.add_argument("--data", default=str(ROOT / "gpu_data"), help="from gpu_data.py")
    parser.add_argument("--out", help="JSON file (default: $OUT/gpu_check.json, else ./)")
    parser.add_argument("--deadline", type=float, help="seconds for everything (default 440)")
    parser.add_argument("--only", help="comma-separated sections, in their usual order")
    calls = [call for call, _, _ in gpu_budget.CALLS]
    parser.add_argument(
        "--call", choices=calls, help="one of the two device calls: its sections and deadline"
    )
    parser.add_argument("--in-process", action="store_true", help="no child processes (tests)")
    parser.add_argument("--section", help=argparse.SUPPRESS)  # a child: one section
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--part", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.section:
        inputs = json.loads(Path(args.inputs).read_text())
        found = run_section(args.section, inputs["plan"], inputs["given"], Path(args.part))
        return 1 if "error" in found else 0
    names = [name for name, _, _ in SECTIONS]
    if args.call:
        if args.only:
            parser.error("give --call or --only, not both")
        _, chosen, deadline = next(call for call in gpu_budget.CALLS if call[0] == args.call)
        args.only = ",".join(chosen)
        args.deadline = args.deadline or deadline
    args.deadline = args.deadline or 440.0
    if args.only:
        unknown = set(args.only.split(",")) - set(names)
        if unknown:
            parser.error(f"unknown sections {sorted(unknown)}; known: {', '.join(names)}")
        names = [name for name in names if name in args.only.split(",")]
    default_out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path.cwd()
    out = Path(args.out) if args.out else default_out / "gpu_check.json"
    with tempfile.TemporaryDirectory() as scratch:
        if args.dry_run:
            plan = gpu_dry.dry_plan(Path(scratch))
        else:
            data = Path(args.data).resolve()
            if not (data / "clcrec-movielens").is_dir():
                sys.exit(f"{data} has no clcrec-movielens/: run `make gpu-data` first")
            plan = device_plan(data)
        report = run_all(plan, names, args.deadline, out, args.in_process)
    from gpu_report import table

    if args.dry_run:  # what the device run is expected to take, from the last one's figures
        print(gpu_budget.budget_table(gpu_budget.budget_rows(BOXES)))
        print()
    print(table(report))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
