"""Choose ridge's and marec's options on validation cold items: one process loads the data and
the backbone once, then scores every setting of a small grid under both ranking conventions.

    COLDBREW_DATA=/work/shared/data OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/accuracy/closed_form_sweep.py --data ml-1m-coldstart \\
        --features genre,text --seed 1

Prints one line per setting: val cold Recall@20 with ``--cold-candidates all`` and ``split``
(and every other validation group's). Only validation is read (the held-out test split never is).
"""

from __future__ import annotations

import argparse
import itertools
import time

from coldbrew.config import make_config
from coldbrew.evaluation.model import evaluate_model
from coldbrew.registry import MODELS
from coldbrew.training.run import load_run_dataset

GRIDS = {
    "ridge": {"ridge_lambda": [0.3, 1.0, 3.0, 10.0, 30.0, 100.0]},
    "marec": {
        "ease_lambda": [30.0, 100.0, 300.0, 1000.0, 3000.0],
        "neighbors": [0, 100],
    },
}


def scores(model, dataset) -> str:
    cells = []
    for candidates in ("all", "split"):
        metrics = evaluate_model(model, dataset, ("val",), ks=(20,), cold_candidates=candidates)
        val = metrics["val"]
        cells += [f"{group}[{candidates}] {val[group]['recall@20']:.4f}" for group in sorted(val)]
    return "  ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default="ml-1m-coldstart")
    parser.add_argument("--features", default="genre,text")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--models", default="ridge,marec")
    args = parser.parse_args()
    for name in args.models.split(","):
        base = {"model": name, "data": args.data, "features": args.features, "seed": args.seed}
        config = make_config({**base, "device": "cpu", "quiet": True})
        dataset = load_run_dataset(config)
        spec = MODELS[name]
        teacher = spec.build_teacher(dataset, config, progress=True)
        grid = GRIDS[name]
        for values in itertools.product(*grid.values()):
            options = dict(zip(grid, values, strict=True))
            config = make_config({**base, "device": "cpu", "quiet": True, **options})
            started = time.perf_counter()
            model = spec.build(dataset, config, teacher)
            line = scores(model, dataset)
            print(f"{name} {options}  {line}  ({time.perf_counter() - started:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
