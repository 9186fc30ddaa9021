"""Run ``tests/training/pinned_run.py``'s configuration on the engine of another commit and print
its per-epoch losses and validation metrics as JSON (one thread, so sums are bit-identical).

    python benchmarks/pins/pin_previous_engine.py e6ed567

Made the numbers in tests/training/test_engine_pin.py from commit e6ed567 (the last commit of
the CLCRec-only trainer, with ``forward`` as the loss).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = """
import json, sys, tempfile
import torch
torch.set_num_threads(1)
sys.path.insert(0, {tests!r})
from pinned_run import SETTINGS, pinned_dataset
from coldbrew.config import make_config
from coldbrew.training.run import train
settings = dict(SETTINGS, data="synthetic")  # the old config checks nothing about data here
results = train(make_config(settings), tempfile.mkdtemp() + "/run", dataset=pinned_dataset())
print(json.dumps({{"losses": [h["losses"] for h in results["history"]],
                   "val": [h["val"] for h in results["history"]]}}))
"""


def main(commit: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", str(tree), commit], check=True
        )
        try:
            code = RUN.format(tests=str(ROOT / "tests" / "training"))
            env = {"PYTHONPATH": str(tree / "src"), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
            output = subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            ).stdout
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True
            )
    print(json.dumps({"commit": commit, **json.loads(output.strip().splitlines()[-1])}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "e6ed567")
