"""Training throughput of the LM recommender (cache mode) against CLCRec, side by side.

    python benchmarks/lm_throughput.py [--batch-size 2048] [--steps 40] [--lm-variants bpr,infonce:64]

One process, ml-1m-coldstart: CLCRec with its defaults on genre + text features, and the LM
recommender in cache mode (all-MiniLM-L6-v2 vectors, read from the text cache) with each
``--lm-variants`` loss (``bpr``: its default, one negative; ``infonce:K``: K negatives). Every
trainer gets the same batch size and the same training rows; the steps alternate between the
models, so machine noise hits them alike. A sample is one positive (user, item) pair, whatever
the number of negatives drawn for it. Prints one JSON line: median step milliseconds and
samples/s per model, and each LM variant's throughput over CLCRec's.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
from shared_data import load_shared, time_alternately  # benchmarks/ is on sys.path as a script

DATASET = "ml-1m-coldstart"


def lm_settings(variant: str) -> dict:
    """``bpr`` or ``infonce:K`` -> the LM model's options."""
    loss, _, negatives = variant.partition(":")
    settings = {"model": "lm", "loss": loss}
    if negatives:
        settings["num_neg"] = int(negatives)
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per model")
    parser.add_argument("--lm-variants", default="bpr,infonce:64")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    args = parser.parse_args()
    dataset = load_shared(DATASET, ["genre", "text"], args.threads)
    from coldbrew.config import make_config
    from coldbrew.training.run import build_trainer

    run = {"data": DATASET, "batch_size": args.batch_size, "quiet": True, "device": "cpu"}
    models = {"clcrec": {"model": "clcrec"}}
    models.update(
        {f"lm-{variant}": lm_settings(variant) for variant in args.lm_variants.split(",")}
    )
    rows = torch.randint(
        dataset.num_train, (args.batch_size,), generator=torch.Generator().manual_seed(0)
    )
    steps = {}
    for name, settings in models.items():
        trainer = build_trainer(make_config(run, settings), dataset)
        steps[name] = lambda trainer=trainer: trainer.train_step(rows)
    median_ms = {name: s * 1e3 for name, s in time_alternately(steps, args.steps).items()}
    rate = {name: args.batch_size / ms * 1e3 for name, ms in median_ms.items()}
    print(json.dumps({
        "benchmark": "lm_throughput", "dataset": DATASET, "batch_size": args.batch_size,
        "steps": args.steps, "median_step_ms": median_ms, "samples_per_second": rate,
        "over_clcrec": {name: rate[name] / rate["clcrec"] for name in rate if name != "clcrec"},
        "clcrec_num_neg": make_config(run).model_options.num_neg,
        "threads": torch.get_num_threads(), "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
