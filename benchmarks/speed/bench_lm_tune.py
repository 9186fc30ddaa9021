"""The LM's tune mode on this CPU: what a tuned layer costs per token (fp32 against bf16
autocast), and what a training step costs by the number of fresh items, beside cache mode.

Prints JSON lines:
  1. ``cpu``: torch's CPU capability and whether oneDNN has native bf16 here;
  2. ``layer``: all-MiniLM-L6-v2's top layer with LoRA (query, value), forward and backward
     over random states, microseconds per token at ``--tokens``, fp32 and bf16 autocast
     alternating in this one process (medians of ``--repeats``);
  3. ``step``: one tune-mode trainer on ml-1m-coldstart (``--max-length`` tokens, the run's
     defaults otherwise) timed at each ``--tune-items`` by setting the model's count between
     steps, and a cache-mode trainer at the same length, steps alternating; milliseconds per
     step (medians) and the samples/s they imply.

  python benchmarks/speed/bench_lm_tune.py [--parts cpu,layer,step] [--tokens 32,64,128]
      [--tune-items 16,32,64] [--max-length 64] [--repeats 5] [--threads 1]

Why not ``coldbrew bench train --against``: its variants are separate models, each built
(tune mode's build runs the lower layers over the catalogue); here one built model serves
every fresh-item count, and the layer timing needs no model at all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import load_shared  # noqa: E402


def integers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def cpu_report() -> dict:
    return {
        "kind": "cpu",
        "capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
        "load": os.getloadavg(),
    }


def layer_times(tokens: list[int], repeats: int) -> list[dict]:
    from coldbrew.data.text.backbones import load_backbone
    from coldbrew.models.lm.backbone import inject_lora
    from coldbrew.models.lm.config import LoraSpec

    model = load_backbone("all-MiniLM-L6-v2", progress=False).model
    model.requires_grad_(False)
    inject_lora(model, LoraSpec(8, 16), first_layer=5)
    layer, rows = model.encoder.layer[5], []
    for count in tokens:
        items = max(1, 2048 // count)  # about 2,048 tokens a pass
        states = torch.randn(items, count, model.config.hidden_size)
        mask = torch.zeros(items, 1, 1, count)
        seconds = {"fp32": [], "bf16": []}
        for _ in range(repeats + 1):  # the first round warms up and is dropped
            for precision in seconds:
                started = time.perf_counter()
                with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
                    out = layer(states, attention_mask=mask)
                    out = out[0] if isinstance(out, tuple) else out
                out.float().mean().backward()
                seconds[precision].append(time.perf_counter() - started)
        per_token = {
            name: 1e6 * statistics.median(values[1:]) / (items * count)
            for name, values in seconds.items()
        }
        rows.append({"kind": "layer", "tokens": count, "us_per_token": per_token})
        rows[-1]["bf16_over_fp32"] = per_token["bf16"] / per_token["fp32"]
        rows[-1]["load"] = os.getloadavg()
        print(json.dumps(rows[-1]), flush=True)
    return rows


def step_times(max_length: int, fresh_counts: list[int], repeats: int) -> dict:
    from coldbrew.config import make_config
    from coldbrew.training.build import build_trainer

    dataset = load_shared("ml-1m-coldstart", ["genre", "text"])
    common = {"model": "lm", "data": "ml-1m-coldstart", "quiet": True, "device": "cpu"}
    common["max_length"] = max_length
    started = time.perf_counter()
    tune = build_trainer(make_config({**common, "lm_mode": "tune"}), dataset)
    build_seconds = time.perf_counter() - started
    cache = build_trainer(make_config(common), dataset)
    count = tune.task.num_samples()
    variants = {"cache": (cache, None), **{f"tune-{m}": (tune, m) for m in fresh_counts}}
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    batch = tune.config.batch_size
    for step in range(repeats + 1):
        index = torch.randint(0, count, (batch,), generator=torch.Generator().manual_seed(step))
        for name, (trainer, fresh) in variants.items():
            if fresh is not None:
                trainer.model.tuned.tune_items = fresh
            begun = time.perf_counter()
            trainer.train_step(index)
            seconds[name].append(time.perf_counter() - begun)
    report = {"kind": "step", "batch": batch, "max_length": max_length, "load": os.getloadavg()}
    report["build_seconds_tune"] = build_seconds
    for name, values in seconds.items():
        median = statistics.median(values[1:])
        report[name] = {"ms_per_step": 1e3 * median, "samples_per_second": batch / median}
    print(json.dumps(report), flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", default="cpu,layer,step")
    parser.add_argument("--tokens", type=integers, default=[32, 64, 128])
    parser.add_argument("--tune-items", type=integers, default=[16, 32, 64])
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    parts = set(args.parts.split(","))
    if "cpu" in parts:
        print(json.dumps(cpu_report()), flush=True)
    if "layer" in parts:
        layer_times(args.tokens, args.repeats)
    if "step" in parts:
        step_times(args.max_length, args.tune_items, args.repeats)


if __name__ == "__main__":
    main()
