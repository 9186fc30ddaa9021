"""The standard benchmark table (``make bench``): runs every benchmark script, prints its JSON
lines and appends them to benchmarks/results.jsonl. BENCHMARKS.md records the figures.

  python benchmarks/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

STANDARD = [
    ["bench_eval.py"],
    ["bench_train.py", "--seconds", "20"],
    ["bench_kernels.py"],
    ["accuracy_ml1m.py"],
    ["bench_neighbors.py"],
]
QUICK = [
    ["bench_eval.py", "--repeats", "3", "--original-repeats", "1"],
    ["bench_train.py", "--seconds", "5"],
]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="short timings, no accuracy run")
    args = parser.parse_args()
    failed = 0
    with open(HERE / "results.jsonl", "a") as results:
        for script, *options in QUICK if args.quick else STANDARD:
            print(f"== {script} {' '.join(options)}", flush=True)
            run = subprocess.run(
                [sys.executable, str(HERE / script), *options], capture_output=True, text=True
            )
            lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
            for line in lines:
                print(line)
                results.write(line + "\n")
            if run.returncode != 0:
                failed += 1
                print(run.stderr[-2000:], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
