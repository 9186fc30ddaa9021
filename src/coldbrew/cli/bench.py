"""``coldbrew bench sample|train|eval``: parse, call ``coldbrew.perf.bench``, print one JSON line."""

from __future__ import annotations

import argparse
import json

from coldbrew.cli.options import add_command, add_layout_option, warn_synthetic
from coldbrew.errors import ColdbrewError

# bench's negatives per positive when not given: CLCRec's original 128, not each model's default
NUM_NEG = "128"


def add_parser(commands) -> None:
    bench = add_command(
        commands,
        "bench",
        "measure the sampler, training steps or evaluation",
        "Measure one part on your data and print one JSON line.\n\nExamples:\n"
        "  coldbrew bench train --data synthetic --num-neg 128 --batch-size 4096 --json\n"
        "  coldbrew bench sample --data ../shared/data/clcrec-movielens --trust-pickle --num-neg 128\n"
        "  coldbrew bench train --data ml-1m-coldstart --against model=lm "
        "--against neighbor_loss=true,neighbor_negatives=0",
    )
    bench.add_argument("what", choices=["sample", "train", "eval"], help="the part to measure")
    bench.add_argument(
        "--data",
        default=None,
        help="dataset directory or name (default: synthetic, with a warning)",
    )
    add_layout_option(bench)
    bench.add_argument("--trust-pickle", action="store_true", help="allow pickled .npy files")
    bench.add_argument("--features", default=None, help="modalities to load (e.g. genre,text)")
    bench.add_argument(
        "--feature-dims",
        default=None,
        help="replace item features by random ones of these widths, e.g. 2048,128,100",
    )
    bench.add_argument(
        "--num-neg",
        default=None,
        help=f"negatives per positive, for a model that has the option (default {NUM_NEG})",
    )
    bench.add_argument("--batch-size", default="4096", help="samples per step (default 4096)")
    bench.add_argument(
        "--seconds",
        type=float,
        default=10.0,
        help="time budget of the measured region (default 10)",
    )
    bench.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    bench.add_argument("--model", default="clcrec", help="registered model (default clcrec)")
    bench.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    bench.add_argument("--precision", default="auto", help="auto, fp32, bf16 or fp16")
    bench.add_argument("--compile", action="store_true", help="torch.compile the step")
    bench.add_argument(
        "--neighbor-loss",
        action="store_true",
        help="train with the neighbor-graph term (precomputed first, untimed)",
    )
    bench.add_argument(
        "--neighbor-negatives",
        default=None,
        help="with --neighbor-loss: the term's negatives per user (default 255; 0: all)",
    )
    bench.add_argument("--seed", default="1", help="seed (default 1)")
    bench.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="OPTION=VALUE[,...]",
        help="also time the run with these options changed, its calls in turn with the run's "
        "in one process, on the same data and rows (repeatable)",
    )
    bench.add_argument("--json", action="store_true", help="print only the JSON line")


def feature_widths(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        widths = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ColdbrewError(
            f"--feature-dims must be widths like 2048,128,100, not {text!r}"
        ) from None
    if not widths or min(widths) < 1:
        raise ColdbrewError(
            f"--feature-dims must be positive widths like 2048,128,100, not {text!r}"
        )
    return widths


# the variants share the run's dataset and device
SHARED_OPTIONS = ("data", "layout", "features", "trust_pickle", "device", "feature_dims")


def variant_flags(text: str) -> dict[str, str]:
    """``"model=lm,lora=8,16"`` -> ``{"model": "lm", "lora": "8,16"}``: a piece without ``=``
    continues the previous value."""
    flags: dict[str, str] = {}
    key = None
    for piece in text.split(","):
        if "=" in piece:
            key, value = piece.split("=", 1)
            key = key.strip().lstrip("-").replace("-", "_")
            flags[key] = value.strip()
        elif key is not None:
            flags[key] += "," + piece.strip()
        if key is None or not key:
            raise ColdbrewError(f"--against must be OPTION=VALUE[,OPTION=VALUE...], not {text!r}")
    shared = [key for key in flags if key in SHARED_OPTIONS]
    if shared:
        raise ColdbrewError(
            f"--against cannot change {shared[0]} (every variant runs on the run's data and "
            f"device), in {text!r}"
        )
    return flags


def with_negatives(flags: dict[str, str], num_neg: str | None) -> dict[str, str]:
    """``flags`` with bench's negatives per positive (``num_neg``, else ``NUM_NEG``) where their
    model has the option and they do not set it; a model without it (content KNN, a blend)
    gets none."""
    from coldbrew.options import hints
    from coldbrew.registry import model_spec

    if "num_neg" in flags or "num_neg" not in hints(model_spec(flags["model"]).config):
        return flags
    return {**flags, "num_neg": NUM_NEG if num_neg is None else num_neg}


def run(args: argparse.Namespace) -> int:
    from coldbrew.config import Flags, make_config

    if not args.seconds > 0:
        raise ColdbrewError(f"--seconds must be positive, not {args.seconds}")
    if args.warmup < 0:
        raise ColdbrewError(f"--warmup must be >= 0, not {args.warmup}")
    widths = feature_widths(args.feature_dims)
    if args.data is None:
        warn_synthetic({}, {})
    flags = {
        "data": args.data or "synthetic",
        "layout": args.layout or None,
        "features": args.features,
        "trust_pickle": args.trust_pickle,
        "model": args.model,
        "batch_size": args.batch_size,
        "device": args.device,
        "precision": args.precision,
        "compile": args.compile,
        "seed": args.seed,
        "quiet": True,
    }
    if args.neighbor_loss:
        flags["neighbor_loss"] = True
        flags["neighbor_negatives"] = args.neighbor_negatives
    elif args.neighbor_negatives is not None:
        raise ColdbrewError("--neighbor-negatives applies with --neighbor-loss")
    flags = {k: v for k, v in flags.items() if v is not None}
    run_flags = with_negatives(flags, args.num_neg)
    if args.num_neg is not None and "num_neg" not in run_flags:
        raise ColdbrewError(f"--num-neg: model {args.model} draws no negatives (no num_neg option)")
    config = make_config(Flags(run_flags))
    variants = {
        text: make_config(Flags(with_negatives({**flags, **variant_flags(text)}, args.num_neg)))
        for text in args.against
    }
    from coldbrew.perf.bench import run_bench

    result = run_bench(
        args.what,
        config,
        feature_widths=widths,
        seconds=args.seconds,
        warmup=args.warmup,
        variants=variants,
    )
    if not args.json:
        print(
            f"{args.what}: {result['samples_per_second']:,.0f} samples/s over "
            f"{result['seconds']:.2f}s on {result['device']}"
        )
        for name, row in result.get("variants", {}).items():
            print(
                f"  {name}: {row['samples_per_second']:,.0f} samples/s, "
                f"{row['throughput_over_base']:.2f}x the run's"
            )
    print(json.dumps(result))
    return 0
