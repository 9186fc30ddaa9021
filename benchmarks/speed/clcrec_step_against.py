"""CLCRec's training step on ml-1m-coldstart: an older commit's step against this tree's, in
one process, calls in turn on the same sample rows (so the machine's load hits both alike).

The older step is this tree's trainer with that commit's ``models/gather_dot.py`` and
``models/clcrec/model.py`` (read with ``git show``) and torch's unfused Adam, as main had before the
CPU step was reworked (BENCHMARKS.md, "CLCRec's step on the CPU"). Both trainers start from
the same seed; the losses of their first steps (the same rows, the same RNG state) are printed
first, then the median milliseconds per step and the ratio.

  COLDBREW_DATA=DIR OMP_NUM_THREADS=1 python benchmarks/speed/clcrec_step_against.py \\
      --commit f9bc849 --seconds 40 [--threads 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import load_shared  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def module_from_commit(commit: str, path: str, name: str, folder: Path, replace=()):
    """The file ``path`` of ``commit`` imported as module ``name`` (``replace``: text swaps)."""
    text = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    for old, new in replace:
        text = text.replace(old, new)
    file = folder / f"{name}.py"
    file.write_text(text)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def older_step(trainer, commit: str, folder: Path) -> None:
    """Make ``trainer`` take ``commit``'s CLCRec step and torch's unfused Adam."""
    module_from_commit(commit, "src/coldbrew/models/gather_dot.py", "old_gather_dot", folder)
    old = module_from_commit(
        commit,
        "src/coldbrew/models/clcrec/model.py",
        "old_clcrec",
        folder,
        replace=[("from coldbrew.models.gather_dot import", "from old_gather_dot import")],
    )
    trainer.model.__class__ = old.CLCRec
    groups = [
        {"params": g["params"], "lr": g["lr"], "weight_decay": g["weight_decay"]}
        for g in trainer.optimizer.param_groups
    ]
    trainer.optimizer = torch.optim.Adam(groups, lr=trainer.config.lr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True, help="the older commit (e.g. main's)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    from coldbrew.config import make_config
    from coldbrew.training.build import build_trainer

    dataset = load_shared("ml-1m-coldstart", ["genre", "text"], threads=args.threads)
    config = make_config({"model": "clcrec", "data": "ml-1m-coldstart", "seed": 1, "quiet": True})
    trainers = {"older": build_trainer(config, dataset), "this": build_trainer(config, dataset)}
    with tempfile.TemporaryDirectory() as folder:
        older_step(trainers["older"], args.commit, Path(folder))
        count = trainers["this"].task.num_samples()
        torch.manual_seed(5)
        rows = [torch.randint(count, (config.batch_size,)) for _ in range(6)]
        losses = {}
        for name, trainer in trainers.items():
            torch.manual_seed(7)
            losses[name] = [trainer.train_step(index)[0].item() for index in rows]
        generator = torch.Generator().manual_seed(0)
        times: dict[str, list[float]] = {name: [] for name in trainers}
        end = time.perf_counter() + args.seconds
        while time.perf_counter() < end:
            index = torch.randint(count, (config.batch_size,), generator=generator)
            for name, trainer in trainers.items():
                started = time.perf_counter()
                trainer.train_step(index)
                times[name].append(time.perf_counter() - started)
    older, this = (statistics.median(times[name]) for name in ("older", "this"))
    print(
        json.dumps(
            {
                "commit": args.commit,
                "threads": torch.get_num_threads(),
                "load": os.getloadavg(),
                "steps": len(times["this"]),
                "losses_older": losses["older"],
                "losses_this": losses["this"],
                "older_ms": round(older * 1000, 1),
                "this_ms": round(this * 1000, 1),
                "speedup": round(older / this, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
