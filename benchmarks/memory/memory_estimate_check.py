"""``coldbrew memory``'s estimate against the peak a real step reaches on this CPU.

    python benchmarks/memory/memory_estimate_check.py

For each configuration: the estimate (a fake-tensor trace, ``coldbrew.training.memory.estimate``)
of the training step's peak plus the task's tables, and the measured growth of this process's
peak resident memory over its level after loading the data, across the model's construction
and five real steps on the same GPU path (fixed shapes, rank sampler) in a fresh process each.
Prints one JSON line per configuration with the ratio estimate / measured.

Why not a coldbrew command: ``coldbrew memory`` prints the estimate only, and ``coldbrew bench``
reports the whole process's peak (data loading included) on the CPU's own path, not the
growth across the GPU path's steps that the estimate describes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import load_shaped  # noqa: E402

CONFIGS = [
    {"data": "ml-1m-coldstart", "features": "genre", "batch_size": 2048, "num_neg": 128},
    {"data": "ml-1m-coldstart", "features": "genre", "batch_size": 8192, "num_neg": 128},
    {"data": "synthetic:users=27044,items=86506,cold=0.2045", "feature_dims": [4096],
     "batch_size": 2048, "num_neg": 512},
    {"data": "synthetic:users=200000,items=1000000", "batch_size": 8192, "num_neg": 128},
]  # fmt: skip


def measure(settings: dict) -> dict:
    """Peak RSS growth over construction and five GPU-path steps, in this (fresh) process."""
    import torch

    from coldbrew.system.memory import peak_rss_bytes, reset_peak_rss, rss_bytes
    from coldbrew.system.runtime import keep_freed_memory_for_reuse
    from coldbrew.training.run import build_trainer

    keep_freed_memory_for_reuse()
    dataset, config = load_shaped({**settings, "device": "cpu"})
    baseline = rss_bytes()
    reset_peak_rss()
    trainer = build_trainer(config, dataset, fixed_shapes=True)
    count = trainer.task.num_samples()
    for _ in range(5):
        trainer.train_step(torch.randint(count, (config.batch_size,)))
    return {"measured_bytes": peak_rss_bytes() - baseline}


def estimate(settings: dict) -> dict:
    from coldbrew.training.memory.estimate import estimate_memory

    dataset, config = load_shaped({**settings, "device": "cpu"})
    report = estimate_memory(config, dataset)
    return {"estimated_bytes": report["training_peak_bytes"], "report": report}


def in_fresh_process(part: str, settings: dict) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, part, json.dumps(settings)], capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) == 3:  # one part, in the fresh process main() started
        part = {"measure": measure, "estimate": estimate}[sys.argv[1]]
        print(json.dumps(part(json.loads(sys.argv[2])), default=str))
        return
    for settings in CONFIGS:
        estimated = in_fresh_process("estimate", settings)
        measured = in_fresh_process("measure", settings)
        ratio = estimated["estimated_bytes"] / measured["measured_bytes"]
        print(
            json.dumps(
                {
                    "benchmark": "memory_estimate_check",
                    **settings,
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
