"""``coldbrew memory``'s estimate against the peak a real step reaches on this CPU.

    python benchmarks/memory_estimate_check.py

For each configuration: the estimate (a fake-tensor trace, ``coldbrew.training.memory_estimate``)
of the training step's peak plus the task's tables, and the measured growth of this process's
peak resident memory over its level after loading the data, across the model's construction
and five real steps on the same GPU path (fixed shapes, rank sampler) in a fresh process each.
Prints one JSON line per configuration with the ratio estimate / measured.
"""

from __future__ import annotations

import json
import subprocess
import sys

from shared_data import use_shared_data

CONFIGS = [
    {"data": "ml-1m-coldstart", "features": "genre", "batch_size": 2048, "num_neg": 128},
    {"data": "ml-1m-coldstart", "features": "genre", "batch_size": 8192, "num_neg": 128},
    {"data": "synthetic:users=27044,items=86506,cold=0.2045", "feature_dims": [4096],
     "batch_size": 2048, "num_neg": 512},
    {"data": "synthetic:users=200000,items=1000000", "batch_size": 8192, "num_neg": 128},
]  # fmt: skip

MEASURE = """
import json, sys, torch
from coldbrew.config import make_config
from coldbrew.data import load_dataset
from coldbrew.perf.bench import random_features
from coldbrew.system.memory import peak_rss_bytes, reset_peak_rss, rss_bytes
from coldbrew.system.runtime import keep_freed_memory_for_reuse
from coldbrew.training.run import build_trainer
settings = json.loads(sys.argv[1])
widths = settings.pop("feature_dims", None)
config = make_config({**settings, "quiet": True, "device": "cpu"})
keep_freed_memory_for_reuse()
data = load_dataset(config.data, features=config.resolved_features() or ([] if widths else None), seed=1)
if widths:
    data.features = random_features(data.num_items, widths, 1)
baseline = rss_bytes(); reset_peak_rss()
trainer = build_trainer(config, data, fixed_shapes=True)
count = trainer.task.num_samples()
for step in range(5):
    trainer.train_step(torch.randint(count, (config.batch_size,)))
print(json.dumps({"measured_bytes": peak_rss_bytes() - baseline}))
"""

ESTIMATE = """
import json, sys
from coldbrew.config import make_config
from coldbrew.data import load_dataset
from coldbrew.perf.bench import random_features
from coldbrew.training.memory_estimate import estimate_memory
settings = json.loads(sys.argv[1])
widths = settings.pop("feature_dims", None)
config = make_config({**settings, "quiet": True, "device": "cpu"})
data = load_dataset(config.data, features=config.resolved_features() or ([] if widths else None), seed=1)
if widths:
    data.features = random_features(data.num_items, widths, 1)
report = estimate_memory(config, data)
print(json.dumps({"estimated_bytes": report["training_peak_bytes"], "report": report}, default=str))
"""


def run(code: str, settings: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(settings)], capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    use_shared_data()
    for settings in CONFIGS:
        estimated = run(ESTIMATE, dict(settings))
        measured = run(MEASURE, dict(settings))
        ratio = estimated["estimated_bytes"] / measured["measured_bytes"]
        print(
            json.dumps(
                {
                    "benchmark": "memory_estimate_check",
                    **{k: v for k, v in settings.items()},
                    "estimated_gib": estimated["estimated_bytes"] / 2**30,
                    "measured_gib": measured["measured_bytes"] / 2**30,
                    "ratio_estimate_over_measured": ratio,
                    "by_kind_at_peak": estimated["report"]["by_kind_at_peak"],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
