"""``coldbrew`` command line: thin subcommands that parse and delegate to the library.

Examples:
  coldbrew data info ml-1m-coldstart --features genre
  coldbrew data convert --trust-pickle Data/movielens movielens-safe
  coldbrew train --data ml-1m-coldstart --features genre,text --out runs/ml1m
  coldbrew train --data Data/movielens --trust-pickle --l_r=0.001 --num_neg=128 --has_v=True
  coldbrew evaluate --run runs/ml1m --split test
  coldbrew bench train --data synthetic --num-neg 128 --batch-size 4096 --json
  coldbrew doctor
  coldbrew profile --data synthetic --batch-size 256 --steps 20
  coldbrew tune --data synthetic --out fast.yaml --budget 60
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from coldbrew.errors import ColdbrewError


def parse_bool(text: str) -> bool:
    lowered = str(text).lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {text!r}")


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field (``--batch-size``), plus the original CLCRec spellings."""
    from coldbrew.config import ALIASES, TrainConfig

    aliases: dict[str, list[str]] = {}
    for old, new in ALIASES.items():
        aliases.setdefault(new, []).append(old)
    defaults = TrainConfig()
    for field in dataclasses.fields(TrainConfig):
        name = field.name
        flags = sorted(
            {f"--{name.replace('_', '-')}", f"--{name}"} | {f"--{a}" for a in aliases.get(name, [])}
        )
        default = getattr(defaults, name)
        kind = field.type if isinstance(field.type, str) else field.type.__name__
        options: dict = {
            "dest": name,
            "default": argparse.SUPPRESS,
            "help": f"(default: {default})",
        }
        if kind.startswith("bool"):
            options.update(type=parse_bool, nargs="?", const=True, metavar="BOOL")
        elif kind.startswith("int"):
            options["type"] = int
        elif kind.startswith("float"):
            options["type"] = float
        parser.add_argument(*flags, **options)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coldbrew", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    data = commands.add_parser("data", help="inspect or convert datasets").add_subparsers(
        dest="data_command", required=True
    )
    info = data.add_parser("info", help="load a dataset and print its statistics")
    info.add_argument("data", help="directory or name (ml-100k, ml-1m-coldstart, synthetic)")
    info.add_argument("--features", default=None, help="modalities to load, e.g. genre,text")
    info.add_argument(
        "--trust-pickle", action="store_true", help="allow the original CLCRec pickled .npy files"
    )
    info.add_argument("--json", action="store_true")
    convert = data.add_parser(
        "convert", help="rewrite a CLCRec-layout dataset in a pickle-free format"
    )
    convert.add_argument("src")
    convert.add_argument("dst")
    convert.add_argument(
        "--trust-pickle", action="store_true", help="required: the source files are pickles"
    )

    train = commands.add_parser(
        "train", help="train a model", description="Train a model; writes RUN_DIR/results.json."
    )
    train.add_argument("--out", help="run directory (created; must be empty)")
    train.add_argument("--config", help="YAML preset; flags override it")
    train.add_argument(
        "--resume", metavar="RUN_DIR", help="continue a killed run from its last checkpoint"
    )
    add_config_options(train)

    evaluate = commands.add_parser("evaluate", help="evaluate a run's best checkpoint")
    evaluate.add_argument("--run", required=True, help="run directory written by 'coldbrew train'")
    evaluate.add_argument(
        "--data", default=None, help="evaluate on other data (default: the run's own)"
    )
    evaluate.add_argument("--split", choices=["val", "test"], action="append", help="default: both")
    evaluate.add_argument("--device", default="auto")
    evaluate.add_argument("--trust-pickle", action="store_true", default=None)
    evaluate.add_argument("--json", action="store_true", help="print JSON instead of a table")

    from coldbrew.perf.bench import add_bench_parser

    add_bench_parser(commands)
    from coldbrew.perf.diagnostics_cli import add_diagnostics_parsers

    add_diagnostics_parsers(commands)
    return parser


def print_metrics_table(metrics: dict) -> None:
    for split, groups in metrics.items():
        for group, values in groups.items():
            cells = "  ".join(f"{name}={value:.4f}" for name, value in values.items())
            print(f"{split:5s} {group:5s} {cells}")


def run_train(args: argparse.Namespace) -> int:
    from coldbrew.config import load_yaml, make_config
    from coldbrew.training.run import resume_config, train

    overrides = {
        k: v for k, v in vars(args).items() if k not in ("command", "out", "config", "resume")
    }
    preset = load_yaml(args.config) if args.config else {}
    # a resumed run keeps its own settings; flags given now (e.g. --epochs) go on top
    if args.resume:
        config = resume_config(args.resume, preset, overrides)
    else:
        config = make_config(preset, overrides)
    run_dir = args.resume or args.out
    if not run_dir:
        raise ColdbrewError("train needs --out RUN_DIR (or --resume RUN_DIR)")
    results = train(config, run_dir, resume=bool(args.resume))
    if not config.quiet:
        print_metrics_table(results["metrics"])
        timing = results["timing"]
        print(
            f"best epoch {results['best_epoch']} of {results['epochs_run']}; "
            f"train {timing['train_seconds']:.1f}s, eval {timing['eval_seconds']:.1f}s, "
            f"{timing['samples_per_second']:,.0f} samples/s; results in {run_dir}/results.json"
        )
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    from coldbrew.training.run import evaluate_run

    output = evaluate_run(
        args.run,
        data=args.data,
        splits=args.split or ("val", "test"),
        device=args.device,
        trust_pickle=args.trust_pickle,
    )
    if args.json:
        print(json.dumps(output))
    else:
        print_metrics_table(output["metrics"])
    return 0


def run_data(args: argparse.Namespace) -> int:
    if args.data_command == "convert":
        from pathlib import Path

        from coldbrew.data import resolve_data_path
        from coldbrew.data.clcrec_layout import convert

        destination = convert(
            resolve_data_path(args.src), Path(args.dst), trust_pickle=args.trust_pickle
        )
        print(f"wrote {destination}")
        return 0
    from coldbrew.data import load_dataset

    dataset = load_dataset(args.data, trust_pickle=args.trust_pickle, features=args.features)
    summary = dataset.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key:20s} {value}")
        for note in dataset.notes:
            print(f"note: {note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"train": run_train, "evaluate": run_evaluate, "data": run_data}
    try:
        if args.command == "bench":
            from coldbrew.perf.bench import run_bench

            return run_bench(args)
        if args.command in ("doctor", "profile", "tune"):
            from coldbrew.perf.diagnostics_cli import run_diagnostics

            return run_diagnostics(args)
        return handlers[args.command](args)
    except ColdbrewError as error:
        print(f"coldbrew: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("coldbrew: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
