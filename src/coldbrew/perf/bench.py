"""``coldbrew bench sample|train|eval``: measure one part on the user's data, print one JSON line."""

from __future__ import annotations

import argparse
import datetime
import json

import torch


def add_bench_parser(commands) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure the sampler, training steps or evaluation",
        description="Examples:\n  coldbrew bench train --data synthetic --num-neg 128 --batch-size 4096 --json\n"
        "  coldbrew bench sample --data ../shared/data/clcrec-movielens --trust-pickle --num-neg 128",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("what", choices=["sample", "train", "eval"])
    bench.add_argument("--data", default="synthetic")
    bench.add_argument("--trust-pickle", action="store_true")
    bench.add_argument("--features", default=None, help="modalities to load (e.g. genre,text)")
    bench.add_argument(
        "--feature-dims",
        default=None,
        help="replace item features by random ones of these widths, e.g. 2048,128,100",
    )
    bench.add_argument("--num-neg", type=int, default=128)
    bench.add_argument("--batch-size", type=int, default=4096)
    bench.add_argument(
        "--seconds", type=float, default=10.0, help="time budget of the measured region"
    )
    bench.add_argument("--warmup", type=int, default=3)
    bench.add_argument("--model", default="clcrec")
    bench.add_argument("--device", default="auto")
    bench.add_argument("--precision", default="auto")
    bench.add_argument("--compile", action="store_true")
    bench.add_argument(
        "--neighbor-loss",
        action="store_true",
        help="train with the neighbor-graph term (precomputed first, untimed)",
    )
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--json", action="store_true", help="print only the JSON line")


def random_features(num_items: int, dims: str, seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    widths = [int(d) for d in dims.split(",") if d.strip()]
    names = ["visual", "acoustic", "text"] + [f"feature{i}" for i in range(3, len(widths))]
    return {names[i]: torch.rand(num_items, w, generator=generator) for i, w in enumerate(widths)}


def run_bench(args: argparse.Namespace) -> int:
    from coldbrew.config import make_config
    from coldbrew.data import load_dataset
    from coldbrew.perf.timing import peak_memory_bytes, time_repeated
    from coldbrew.training.runtime import device_name
    from coldbrew.training.trainer import Trainer, evaluate_model

    dataset = load_dataset(
        args.data,
        trust_pickle=args.trust_pickle,
        features=args.features or ([] if args.feature_dims else None),
    )
    if args.feature_dims:
        dataset.features = random_features(dataset.num_items, args.feature_dims, args.seed)
    config = make_config(
        {
            "data": args.data,
            "model": args.model,
            "num_neg": args.num_neg,
            "batch_size": args.batch_size,
            "device": args.device,
            "precision": args.precision,
            "compile": args.compile,
            "seed": args.seed,
            "quiet": True,
            "neighbor_loss": getattr(args, "neighbor_loss", False),
        }
    )
    trainer = Trainer(config, dataset)
    device = trainer.runtime.device
    generator = torch.Generator(device=device).manual_seed(args.seed)
    batch = config.batch_size

    def random_rows() -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.randint(
            len(trainer.train_users), (batch,), device=device, generator=generator
        )
        return trainer.train_users[index], trainer.train_items[index]

    if args.what == "sample":
        users, _ = random_rows()
        calls, elapsed = time_repeated(
            lambda: trainer.sampler.sample(users, config.num_neg),
            device,
            warmup=args.warmup,
            seconds=args.seconds,
        )
        samples = calls * batch
    elif args.what == "train":
        calls, elapsed = time_repeated(
            lambda: trainer.train_step(*random_rows()),
            device,
            warmup=args.warmup,
            seconds=args.seconds,
        )
        samples = calls * batch
    else:

        def full_evaluation():
            return [
                evaluate_model(trainer.model, dataset, split, config)
                for split in ("val", "test")
                if dataset.groups(split)
            ]

        calls, elapsed = time_repeated(
            full_evaluation, device, warmup=1, seconds=args.seconds, min_calls=2
        )
        samples = calls * dataset.num_users
    result = {
        "benchmark": args.what,
        "dataset": dataset.name,
        "users": dataset.num_users,
        "items": dataset.num_items,
        "train_interactions": dataset.num_train,
        "feature_dims": {
            name: list(f.shape)[1]
            for name, f in dataset.features.items()
            if isinstance(f, torch.Tensor)
        },
        "num_neg": config.num_neg,
        "batch_size": batch,
        "calls": calls,
        "seconds": elapsed,
        "seconds_per_call": elapsed / calls,
        "samples_per_second": samples / elapsed,
        "epoch_seconds_estimate": dataset.num_train / (samples / elapsed)
        if args.what != "eval"
        else None,
        "peak_memory_bytes": peak_memory_bytes(device),
        "device": device_name(device),
        "precision": trainer.runtime.precision,
        "compile": config.compile,
        "neighbor_loss": config.neighbor_loss,
        "sampler": trainer.sampler.method,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if not args.json:
        print(
            f"{args.what}: {result['samples_per_second']:,.0f} samples/s over {elapsed:.2f}s on {result['device']}"
        )
    print(json.dumps(result))
    return 0
