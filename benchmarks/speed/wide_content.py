"""ALDI's training step on wide one-hot content against ml-1m-coldstart, side by side.

Book-Crossing 5-core (15,223 users x 36,041 books) with Book-Author and Publisher as one-hot
category blocks (2,000 and 1,853 columns, the numeric year beside them) against
ml-1m-coldstart (6,018 x 3,018, genre and MiniLM text): ALDI with its own defaults (batch 8192,
8 negatives), and Book-Crossing again with the content encoder's sparse path off (every block
dense, as before it). Each configuration is ``coldbrew bench train --json`` in its own process,
so each has its own peak memory; the configurations take turns, round after round, so the
machine's load hits them alike. Prints one JSON line per call, then per configuration the
median samples/s, its ratio to ml-1m-coldstart's and the peak memory, with the CPU and the load.

  PYTHONPATH=src python benchmarks/speed/wide_content.py --rounds 3 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import use_shared_data  # noqa: E402

CORE5 = Path("/work/bx/prepared/core5")
LAYOUT = """interactions: ratings.csv
user: User-ID
item: ISBN
items: books.csv
categories: [Book-Author, Publisher]
numeric: [Year-Of-Publication]
missing_items: drop
"""
# the content encoder with no block read sparse: the dense path every block took before
DENSE_ONLY = "import coldbrew.models.sparse_columns as s; s.MIN_SPARSE_WIDTH = 10**9; "


def categories_copy(core5: Path, where: Path) -> Path:
    """core5's tables (linked) with Book-Author and Publisher as category blocks, no text."""
    folder = where / "core5-categories"
    folder.mkdir()
    for name in ("ratings.csv", "books.csv"):
        (folder / name).symlink_to(core5 / name)
    (folder / "coldbrew.yaml").write_text(LAYOUT)
    return folder


def bench_call(data: str, features: str | None, seconds: float, prefix: str = "") -> dict:
    """One ``coldbrew bench train`` of ALDI in a process of its own: its JSON line."""
    argv = ["bench", "train", "--model", "aldi", "--data", data, "--num-neg", "8"]
    argv += ["--batch-size", "8192", "--seconds", str(seconds), "--json"]
    argv += ["--features", features] if features else []
    code = f"{prefix}import sys; from coldbrew.cli import main; sys.exit(main({argv!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=os.environ
    )
    if done.returncode != 0:
        raise SystemExit(f"bench failed on {data}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cpu_flags() -> str:
    """The CPU's model name and the vector flags that matter here (AVX-512, AMX)."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    lines = text.splitlines()
    name = next((line.split(":", 1)[1].strip() for line in lines if "model name" in line), "?")
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    shown = [f for f in flags if f.startswith(("avx512f", "avx512_bf16", "amx"))]
    return f"{name} ({' '.join(shown) or 'no AVX-512'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--core5", type=Path, default=CORE5)
    args = parser.parse_args()
    use_shared_data()
    with tempfile.TemporaryDirectory() as where:
        books = str(categories_copy(args.core5, Path(where)))
        configs = {
            "ml-1m-coldstart": ("ml-1m-coldstart", "genre,text", ""),
            "bx-categories": (books, None, ""),
            "bx-categories-dense": (books, None, DENSE_ONLY),
        }
        rows = {name: [] for name in configs}
        for _ in range(args.rounds):
            for name, (data, features, prefix) in configs.items():
                row = bench_call(data, features, args.seconds, prefix)
                print(json.dumps({"config": name, **row}), flush=True)
                rows[name].append(row)
    base = statistics.median(r["samples_per_second"] for r in rows["ml-1m-coldstart"])
    print(f"cpu: {cpu_flags()}; load average {os.getloadavg()}; threads {os.cpu_count()}")
    for name, measured in rows.items():
        speed = statistics.median(r["samples_per_second"] for r in measured)
        peak = max(r["peak_memory_bytes"] for r in measured) / 1e9
        each = ", ".join(f"{r['samples_per_second']:,.0f}" for r in measured)
        # each round's ratio to that round's ml-1m-coldstart: the load of that moment cancels
        ratios = [
            r["samples_per_second"] / ml["samples_per_second"]
            for r, ml in zip(measured, rows["ml-1m-coldstart"], strict=True)
        ]
        print(
            f"{name}: {speed:,.0f} samples/s (median of {each}), {speed / base:.2f}x "
            f"ml-1m-coldstart (by round: {', '.join(f'{x:.2f}' for x in ratios)}), "
            f"peak {peak:.2f} GB"
        )


if __name__ == "__main__":
    main()
