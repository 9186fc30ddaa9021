"""Estimated GPU memory and step time (``coldbrew.training.memory.estimate``), no GPU needed.

    python benchmarks/memory/gpu_estimates.py

For each shape: the training step traced on fake tensors as a GPU runs it (bf16 precision is
assumed for the roofline, fp32 tensors for memory), the memory per device and the largest
micro-batch on an 80 GB device, and roofline samples/s on an RTX 4090 and an A100-80GB.
ESTIMATES: no GPU ran any of this.

Why not ``coldbrew memory --gpu``: it estimates one shape for one GPU on data it can load;
this table needs the CLCRec MovieLens split with generated 2048/128/100-d features (the real
ones were never published), which ``coldbrew memory`` has no flag for, and both GPUs per row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import load_shaped  # noqa: E402

from coldbrew.config import make_config  # noqa: E402
from coldbrew.training.memory.estimate import estimate_memory, roofline, trace_step  # noqa: E402

SHAPES = [
    ("clcrec-movielens (2048/128/100 features)", "clcrec-movielens", [2048, 128, 100], 128, [256, 4096, 16384]),
    ("amazon shapes (4096-d)", "synthetic:users=27044,items=86506,cold=0.2045", [4096], 512, [8192]),
    ("1M-item synthetic (32-d)", "synthetic:users=200000,items=1000000", None, 128, [8192]),
]  # fmt: skip


def main() -> None:
    for label, data, widths, num_neg, batches in SHAPES:
        dataset, _ = load_shaped({"data": data, "feature_dims": widths})
        for batch in batches:
            config = make_config(
                {"data": data, "batch_size": batch, "num_neg": num_neg, "quiet": True}
            )
            report = estimate_memory(config, dataset, device_memory=80 * 10**9)
            trace = trace_step(config, dataset, batch)
            speeds = {gpu: roofline(trace, gpu, "auto") for gpu in ("rtx4090", "a100-80gb")}
            print(
                json.dumps(
                    {
                        "benchmark": "gpu_estimate",
                        "shape": label,
                        "batch_size": batch,
                        "num_neg": num_neg,
                        "training_peak_gib": report["training_peak_bytes"] / 2**30,
                        "fixed_gib": report["fixed_bytes"] / 2**30,
                        "kib_per_sample": report["activation_bytes_per_sample"] / 2**10,
                        "largest_micro_batch_80gb": report["largest_micro_batch"],
                        "evaluation_gib_formula": (report["evaluation_bytes_formula"] or 0) / 2**30,
                        "step_gflop": trace.flops / 1e9,
                        "step_gb_moved": trace.bytes_moved / 1e9,
                        "kernels": trace.kernels,
                        **{
                            f"{gpu}_samples_per_second": s["samples_per_second"]
                            for gpu, s in speeds.items()
                        },
                        **{f"{gpu}_bound": s["bound"] for gpu, s in speeds.items()},
                        "estimate": True,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
