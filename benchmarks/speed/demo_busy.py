"""``make demo``'s time on a quiet machine and beside one busy process, side by side.

    python benchmarks/speed/demo_busy.py --epochs 1 --repeats 2
    python benchmarks/speed/demo_busy.py --epochs 1 --threads 2   # torch's default: the demo before

Runs ``python -m coldbrew.demo --epochs E`` (the demo's training, shortened) in a fresh process,
first alone, then beside a busy loop this script starts (a pure-Python ``while`` loop in a
subprocess, bounded by ``--busy-limit`` seconds in case this script dies) and stops as soon as
the demo ends; ``--repeats`` pairs, in turn. Prints each run's wall seconds (the whole command,
as a user waits for it), its training samples/s and the threads it chose, then one JSON line:
the medians, the busy/quiet ratio (the issue's bar: 1.5 or less), the CPU's flags and the load
average before each run. ``--threads N`` sets ``COLDBREW_THREADS=N`` for the demo (the choice
it made before it shared the CLI's: torch's one thread per core).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import use_shared_data  # noqa: E402

BUSY_LOOP = (
    "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"
)


def cpu_flags() -> list[str]:
    """The vector-instruction flags of this CPU (``/proc/cpuinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "fma")
    return [flag for flag in wanted if flags and flag in flags.group(1).split()]


def cpu_model() -> str:
    try:
        found = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        found = None
    return found.group(1).strip() if found else platform.processor() or platform.machine()


def run_demo(epochs: int, threads: int | None, busy_limit: float | None) -> dict:
    """One demo run (beside a busy loop when ``busy_limit`` is given): seconds, samples/s,
    the thread line, the load before."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env.pop("COLDBREW_THREADS", None)
    if threads is not None:
        env["COLDBREW_THREADS"] = str(threads)
    busy = None
    if busy_limit is not None:
        code = BUSY_LOOP.format(limit=busy_limit)
        busy = subprocess.Popen([sys.executable, "-c", code])
        time.sleep(1.0)  # the loop holds its core before the demo chooses its threads
    load = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "coldbrew.demo", "--epochs", str(epochs)],
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        seconds = time.perf_counter() - started
        if busy is not None:
            busy.terminate()
            busy.wait()
    if done.returncode != 0:
        sys.exit(f"the demo failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    rates = [float(r.replace(",", "")) for r in re.findall(r"([\d,]+) samples/s", done.stdout)]
    thread_line = next((ln for ln in done.stdout.splitlines() if ln.startswith("threads:")), "")
    return {
        "seconds": round(seconds, 1),
        "samples_per_s": rates[0] if rates else None,
        "threads": thread_line.removeprefix("threads: "),
        "load_before": round(load, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=1, help="the demo's epochs (default 1)")
    parser.add_argument("--repeats", type=int, default=1, help="quiet/busy pairs (default 1)")
    parser.add_argument("--threads", type=int, default=None, help="COLDBREW_THREADS for the demo")
    parser.add_argument(
        "--busy-limit", type=float, default=1800.0, help="the busy loop's longest life (s)"
    )
    args = parser.parse_args()
    use_shared_data()
    runs: dict[str, list[dict]] = {"quiet": [], "busy": []}
    for repeat in range(args.repeats):
        for kind in ("quiet", "busy"):
            limit = args.busy_limit if kind == "busy" else None
            result = run_demo(args.epochs, args.threads, limit)
            runs[kind].append(result)
            print(f"{kind} #{repeat + 1}: {json.dumps(result)}", flush=True)
    quiet = statistics.median(r["seconds"] for r in runs["quiet"])
    busy = statistics.median(r["seconds"] for r in runs["busy"])
    print(
        json.dumps(
            {
                "benchmark": "demo_busy",
                "epochs": args.epochs,
                "threads_setting": args.threads or "auto",
                "quiet_seconds": quiet,
                "busy_seconds": busy,
                "busy_over_quiet": round(busy / quiet, 2),
                "runs": runs,
                "cpu": cpu_model(),
                "cpu_flags": cpu_flags(),
                "cores": os.cpu_count(),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            }
        )
    )


if __name__ == "__main__":
    main()
