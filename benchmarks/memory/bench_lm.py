"""The LM recommender (issue 12): checkpoint sizes per mode, and memory estimate vs measured.

Prints JSON lines:
  1. ``checkpoint``: bytes of the model's part of a run's ``best.pt`` (its state dict, the
     backbone's identity as extra state) for cache, dynamic frozen,
     dynamic LoRA and (for scale) dynamic full fine-tuning, with all-MiniLM-L6-v2 on
     ml-1m-coldstart, and the trainable parameter counts;
  2. ``estimate``: ``coldbrew.models.lm.memory.estimate_memory`` per device for cache, frozen,
     LoRA and LoRA with activation checkpointing at batch 512/1024/2048 on 1/2/4/8 devices
     (ml-1m-coldstart's shapes);
  3. ``measured``: one fresh process per configuration that fits this machine: peak RSS
     (``VmHWM``, reset after the build) over a few training steps minus the RSS after the build,
     against the estimate's step terms (activations + gradients + Adam) for one device, both
     a priori and at the largest measured step's shape (distinct items, padded tokens), under
     glibc's default allocator settings and with large freed blocks returned to the system;
  4. ``saved``: bytes MiniLM saves for backward per token per layer (``saved_tensors_hooks``,
     parameters excluded) under LoRA and full fine-tuning: where the estimate's constants
     come from.

  python benchmarks/memory/bench_lm.py [--parts checkpoint,estimate,measure,saved] [--lora 8,16]

Why not ``coldbrew memory`` or ``coldbrew bench``: they estimate or time a run's step; these
are the LM modes' checkpoint files, the estimate's grid over devices, peak RSS against the
estimate under two allocator settings, and the saved-tensor counts behind its constants.
"""

from __future__ import annotations

import argparse
import datetime
import io
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared_data
from shared_data import dataset_path  # noqa: E402

from coldbrew import load_dataset  # noqa: E402
from coldbrew.data.sampling import NegativeSampler  # noqa: E402
from coldbrew.models.base import Batch  # noqa: E402
from coldbrew.models.lm import LMConfig, build  # noqa: E402
from coldbrew.models.lm.memory import MINILM, estimate_memory, lora_size  # noqa: E402
from coldbrew.system.memory import peak_rss_bytes, reset_peak_rss, rss_bytes  # noqa: E402

MODES = {
    "cache": {},
    "dynamic-frozen": {"lm_mode": "dynamic", "freeze": True},
    "dynamic-lora": {"lm_mode": "dynamic", "lora": None},  # filled from --lora
    "dynamic-full": {"lm_mode": "dynamic"},
    "dynamic-lora-checkpointed": {"lm_mode": "dynamic", "lora": None, "grad_checkpointing": True},
}
# glibc by default keeps freed blocks below its adaptive mmap threshold (up to 32 MiB) in the
# heap, so RSS can stay above the live tensors; a fixed 64 KiB threshold returns every large
# block to the system when freed, so the peak RSS then follows the live bytes.
ALLOCATORS = {"glibc-default": {}, "large-blocks-returned": {"MALLOC_MMAP_THRESHOLD_": "65536"}}
ESTIMATE_MODE = {  # estimate_memory's (mode, checkpointing) of each measured mode
    "cache": ("cache", False),
    "dynamic-frozen": ("frozen", False),
    "dynamic-lora": ("lora", False),
    "dynamic-lora-checkpointed": ("lora", True),
}
# (mode, batch): what fits in a few GB here; the dynamic backbone's saved activations grow
# with distinct items x tokens, so its batches are small.
MEASURED = [
    ("cache", 512),
    ("cache", 2048),
    ("dynamic-frozen", 16),
    ("dynamic-frozen", 64),
    ("dynamic-lora", 8),
    ("dynamic-lora", 16),
    ("dynamic-lora-checkpointed", 16),
]


def load():
    return load_dataset(dataset_path("ml-1m-coldstart"), features=[], progress=False)


def checkpoint_sizes(dataset, lora: str) -> list[dict]:
    rows = []
    for name, options in MODES.items():
        if name == "dynamic-lora-checkpointed":
            continue  # the same trainable state as dynamic-lora
        options = {**options, "lora": lora} if "lora" in options else options
        torch.manual_seed(0)
        model = build(dataset, LMConfig(**options), progress=False)
        buffer = io.BytesIO()
        torch.save({"model": model.state_dict()}, buffer)  # the model part of best.pt
        counts = model.parameter_counts()
        rows.append(
            {
                "kind": "checkpoint",
                "mode": name,
                "bytes": buffer.tell(),
                "state_dict_entries": len(model.state_dict()),
                **counts,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def catalogue_tokens(dataset, max_length: int = 256) -> int:
    """Padded tokens per text in a large step: the longest item text (capped)."""
    from coldbrew.data.text.backbones import load_backbone

    tokenizer = load_backbone("all-MiniLM-L6-v2").tokenizer
    lengths = [len(ids) for ids in tokenizer(dataset.item_text)["input_ids"]]
    return min(max_length, max(lengths))


def estimate_grid(dataset, tokens: int, rank: int) -> None:
    shape = dict(
        backbone=MINILM,
        num_users=dataset.num_users,
        num_items=dataset.num_items,
        num_warm=dataset.num_items - len(dataset.cold_items),
        tokens=tokens,
        lora_parameters=lora_size(MINILM, rank),
    )
    variants = {
        "cache": ("cache", False),
        "frozen": ("frozen", False),
        "lora": ("lora", False),
        "lora-checkpointed": ("lora", True),
    }
    for name, (mode, checkpointing) in variants.items():
        for batch in (512, 1024, 2048):
            for devices in (1, 2, 4, 8):
                estimate = estimate_memory(
                    mode=mode,
                    batch_size=batch,
                    devices=devices,
                    checkpointing=checkpointing,
                    **shape,
                )
                row = {"kind": "estimate", "mode": name, "batch": batch, "devices": devices}
                print(json.dumps({**row, "tokens": tokens, **estimate.as_dict()}), flush=True)


def measure_one(mode: str, batch: int, lora: str, steps: int) -> dict:
    """In this (fresh) process: build, warm up on 2 rows, reset the peak, train ``steps``
    steps, read the peak. Also returns the largest step's shape (distinct items, tokens)."""
    torch.set_num_threads(2)
    dataset = load()
    options = {**MODES[mode], "lora": lora} if "lora" in MODES[mode] else MODES[mode]
    torch.manual_seed(0)
    model = build(dataset, LMConfig(**options), progress=False)
    sampler = NegativeSampler(dataset.exclusion_matrix(), dataset.warm_items)
    coo = dataset.train.tocoo()
    users, positives = torch.from_numpy(coo.row).long(), torch.from_numpy(coo.col).long()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    shapes: list[tuple[int, int]] = []  # (distinct items, tokens) of each step
    if model.backbone is not None:
        model.backbone.register_forward_pre_hook(lambda _m, args: shapes.append(args[0].shape))

    def step(rows: torch.Tensor) -> None:
        negatives = sampler.sample(users[rows], 1, generator)
        items = torch.cat([positives[rows, None], negatives], dim=1)  # (B, 2)
        if model.backbone is None:
            shapes.append((len(torch.unique(items)), 0))
        optimizer.zero_grad(set_to_none=True)
        model(Batch(users[rows], items)).total.backward()

    model.train()
    step(torch.arange(2))  # code paths and lazy state, without a large allocation
    optimizer.zero_grad(set_to_none=True)
    shapes.clear()
    if not reset_peak_rss():  # VmHWM := current RSS
        raise RuntimeError("cannot reset the peak RSS (/proc/self/clear_refs): Linux only")
    before = rss_bytes()
    started = time.perf_counter()
    for _ in range(steps):
        step(torch.randint(len(users), (batch,), generator=generator))
        optimizer.step()
    distinct, tokens = max(shapes, key=lambda shape: shape[0] * max(shape[1], 1))
    return {
        "measured_step_bytes": peak_rss_bytes() - before,
        "seconds_per_step": (time.perf_counter() - started) / steps,
        "largest_step": {"distinct_items": int(distinct), "tokens": int(tokens)},
    }


def measure_all(dataset, tokens: int, lora: str, steps: int, configurations: list) -> None:
    shape = dict(
        backbone=MINILM,
        num_users=dataset.num_users,
        num_items=dataset.num_items,
        num_warm=dataset.num_items - len(dataset.cold_items),
        lora_parameters=lora_size(MINILM, int(lora.split(",")[0])),
    )
    for (mode, batch), allocator in itertools.product(configurations, ALLOCATORS):
        run = subprocess.run(
            [sys.executable, __file__, "--measure-one", mode, str(batch), "--lora", lora],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **ALLOCATORS[allocator]},
        )
        measured = json.loads(run.stdout.strip().splitlines()[-1])
        largest = measured["largest_step"]
        estimate_mode, checkpointing = ESTIMATE_MODE[mode]
        common = dict(mode=estimate_mode, batch_size=batch, checkpointing=checkpointing, **shape)
        estimated = {
            "a_priori": estimate_memory(tokens=tokens, **common).step,
            "at_largest_step": estimate_memory(
                tokens=largest["tokens"] or tokens,
                distinct_items=largest["distinct_items"],
                **common,
            ).step,
        }
        row = {"kind": "measured", "mode": mode, "batch": batch, "steps": steps, **measured}
        row["allocator"] = allocator
        row["estimated_step_bytes"] = estimated
        ratio = measured["measured_step_bytes"] / estimated["at_largest_step"]
        row["measured_over_estimated"] = round(ratio, 3)
        print(json.dumps(row), flush=True)


def count_saved(lora: str) -> None:
    """Bytes saved for backward by MiniLM (parameters excluded) per token per layer, under
    LoRA and full fine-tuning, at several padded lengths: the constants of the estimate."""
    from coldbrew.data.text.backbones import load_backbone
    from coldbrew.models.lm.backbone import TextBackbone
    from coldbrew.models.lm.config import LoraSpec

    rows = 4
    for mode in ("lora", "full"):
        for tokens in (32, 64, 128, 256):
            backbone = TextBackbone(
                load_backbone("all-MiniLM-L6-v2"),
                name="all-MiniLM-L6-v2",
                freeze=False,
                lora=LoraSpec.parse(lora) if mode == "lora" else None,
            )
            backbone.train()
            sizes: dict[int, int] = {}

            def pack(tensor: torch.Tensor, sizes=sizes) -> torch.Tensor:
                storage = tensor.untyped_storage()
                sizes[storage.data_ptr()] = max(sizes.get(storage.data_ptr(), 0), storage.nbytes())
                return tensor

            token_ids = torch.randint(1000, 2000, (rows, tokens))
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
                backbone(token_ids, torch.ones_like(token_ids))
            weights = {p.untyped_storage().data_ptr() for p in backbone.parameters()}
            saved = sum(size for pointer, size in sizes.items() if pointer not in weights)
            per_value = saved / 4 / (rows * tokens * MINILM.layers)
            row = {"kind": "saved", "mode": mode, "tokens": tokens, "saved_bytes": saved}
            print(
                json.dumps({**row, "values_per_token_per_layer": round(per_value, 1)}), flush=True
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lora", default="8,16", help="R,ALPHA of the LoRA mode")
    parser.add_argument("--steps", type=int, default=3, help="measured training steps")
    parser.add_argument(
        "--measure",
        default=",".join(f"{mode}:{batch}" for mode, batch in MEASURED),
        help="MODE:BATCH,... configurations whose peak RSS is measured",
    )
    parser.add_argument(
        "--parts",
        default="checkpoint,estimate,measure,saved",
        help="which parts to run (comma-separated)",
    )
    parser.add_argument("--measure-one", nargs=2, metavar=("MODE", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_one:
        mode, batch = args.measure_one
        print(json.dumps(measure_one(mode, int(batch), args.lora, args.steps)))
        return 0
    torch.set_num_threads(2)
    header = {
        "kind": "run",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
    }
    print(json.dumps(header), flush=True)
    parts = set(args.parts.split(","))
    dataset = load()
    if "checkpoint" in parts:
        checkpoint_sizes(dataset, args.lora)
    tokens = catalogue_tokens(dataset)
    if "estimate" in parts:
        estimate_grid(dataset, tokens, int(args.lora.split(",")[0]))
    if "measure" in parts:
        configurations = [
            (mode, int(batch))
            for mode, batch in (item.split(":") for item in args.measure.split(","))
        ]
        measure_all(dataset, tokens, args.lora, args.steps, configurations)
    if "saved" in parts:
        count_saved(args.lora)
    return 0


if __name__ == "__main__":
    sys.exit(main())
