"""The standard benchmark table (``make bench``): runs every benchmark, prints its JSON lines
and appends them to benchmarks/results.jsonl. BENCHMARKS.md records the figures.

  python benchmarks/run_all.py [--quick]

An entry is a script under this folder or a ``coldbrew`` command; a ``coldbrew train`` entry
trains into a temporary folder and prints its results.json's best-epoch figures as one line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from shared_data import use_shared_data

HERE = Path(__file__).resolve().parent
BENCH_STEP = ["--data", "clcrec-movielens", "--trust-pickle", "--feature-dims", "2048,128,100"]
BENCH_STEP += ["--num-neg", "128", "--batch-size", "4096"]

STANDARD = [
    ["speed/bench_eval.py"],
    ["speed/bench_train.py", "--seconds", "20"],
    ["speed/bench_kernels.py"],
    ["coldbrew", "train", "--data", "ml-1m-coldstart", "--features", "genre,text"],
    ["coldbrew", "bench", "train", *BENCH_STEP, "--seconds", "20", "--against", "neighbor_loss=true"],
]  # fmt: skip
QUICK = [
    ["speed/bench_eval.py", "--repeats", "3", "--original-repeats", "1"],
    ["speed/bench_train.py", "--seconds", "5"],
    ["coldbrew", "bench", "train", *BENCH_STEP, "--seconds", "5", "--against", "neighbor_loss=true"],
]  # fmt: skip


def run_entry(entry: list[str], scratch: Path) -> tuple[int, list[str], str]:
    """(exit code, JSON lines printed, stderr) of one entry."""
    if entry[0] != "coldbrew":
        command = [sys.executable, str(HERE / entry[0]), *entry[1:]]
    elif entry[1] == "train":
        command = [sys.executable, "-m", *entry, "--quiet", "--out", str(scratch / "run")]
    else:
        command = [sys.executable, "-m", *entry, "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if entry[:2] == ["coldbrew", "train"] and done.returncode == 0:
        results = json.loads((scratch / "run" / "results.json").read_text())
        keys = ("best_epoch", "epochs_run", "metrics", "timing", "device")
        summary = {"benchmark": "train", "command": " ".join(entry)}
        lines.append(json.dumps({**summary, **{key: results.get(key) for key in keys}}))
    return done.returncode, lines, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short timings, no accuracy run")
    args = parser.parse_args()
    use_shared_data()
    failed = 0
    with open(HERE / "results.jsonl", "a") as results:
        for entry in QUICK if args.quick else STANDARD:
            print(f"== {' '.join(entry)}", flush=True)
            with tempfile.TemporaryDirectory() as scratch:
                code, lines, errors = run_entry(entry, Path(scratch))
            for line in lines:
                print(line)
                results.write(line + "\n")
            if code != 0:
                failed += 1
                print(errors[-2000:], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
