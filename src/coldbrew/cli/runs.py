"""``coldbrew data|train|evaluate``: parse, delegate to ``coldbrew.training`` and ``coldbrew.data``."""

from __future__ import annotations

import argparse
import json
import time

from coldbrew.cli.options import (
    add_command,
    add_config_options,
    add_layout_option,
    add_other_data_layout,
    add_run_option,
    config_flags,
    other_data_layout,
    require_data,
)
from coldbrew.cli.research import add_train_options, print_seed_table, run_training
from coldbrew.errors import ColdbrewError

TRAIN_EXAMPLES = """Examples:
  coldbrew train --data ml-1m-coldstart --features genre,text --out runs/ml1m
  coldbrew train --config configs/clcrec_movielens.yaml --data DIR --trust-pickle --out runs/orig
  coldbrew train --resume runs/ml1m --epochs 60     # continue a run (only how it runs may
                                                    # change: --epochs, --patience, --device ...)
  coldbrew train --model_name=CLCRec --data_path=Data/movielens --trust-pickle --l_r=0.001
                                                    # the original main.py's flags
  coldbrew train --data ml-1m-coldstart --features genre,text --seeds 1,2,3 --out runs/ml1m-3
  coldbrew train --resume runs/ml1m-3               # finished seeds are skipped

Options come from --config YAML (flat, or a model's options under its name), then flags.
--data (or data: in --config) is required; --data synthetic trains on generated data."""


def add_parsers(commands) -> None:
    add_data_parsers(commands)
    add_train_parser(commands)
    add_evaluate_parser(commands)


def add_data_parsers(commands) -> None:
    """``coldbrew data info|convert|init``."""
    from coldbrew.cli.data_init import add_init_parser

    data = commands.add_parser("data", help="inspect or convert datasets").add_subparsers(
        dest="data_command", required=True
    )
    add_info_parser(data)
    add_convert_parser(data)
    add_init_parser(data)


def add_info_parser(data_commands) -> None:
    info = data_commands.add_parser("info", help="load a dataset and print its statistics")
    info.add_argument("data", help="directory or name (ml-100k, ml-1m-coldstart, synthetic)")
    info.add_argument("--features", default=None, help="modalities to load, e.g. genre,text")
    info.add_argument(
        "--text-encoder",
        default="minilm",
        metavar="minilm|mpnet|PATH[@TOKENS][+...]",
        help="sentence encoder of text features: minilm (384-d), mpnet (768-d; make "
        "install-mpnet) or a sentence-transformers folder; NAME@TOKENS reads at most TOKENS "
        "of each text; A+B joins encoders (default: minilm)",
    )
    info.add_argument(
        "--seed", default="1", help="seed of the split where data draws one (default: 1, as train)"
    )
    info.add_argument(
        "--trust-pickle", action="store_true", help="allow the original CLCRec pickled .npy files"
    )
    info.add_argument(
        "--report-share",
        default="0.5",
        help="share of validation items shown as the report half, as train cuts it (default: "
        "0.5; 0: none)",
    )
    info.add_argument(
        "--selection-seed", default="0", help="seed of the report half (default: 0, as train)"
    )
    info.add_argument(
        "--cold-split",
        default="files",
        metavar="files|time:F|random:F",
        help="which items are cold, as train chooses them (default: files, the data's own)",
    )
    add_layout_option(info)
    info.add_argument("--json", action="store_true", help="print one JSON object")


def add_convert_parser(data_commands) -> None:
    convert = data_commands.add_parser(
        "convert", help="rewrite a CLCRec-layout dataset in a pickle-free format"
    )
    convert.add_argument("src", help="CLCRec-layout directory (pickled .npy files)")
    convert.add_argument("dst", help="directory to write")
    convert.add_argument(
        "--trust-pickle", action="store_true", help="required: the source files are pickles"
    )


def add_train_parser(commands) -> None:
    train = add_command(
        commands,
        "train",
        "train a model",
        "Train a model; writes RUN_DIR/{config.yaml,train.log,best.pt,last.pt,results.json},\n"
        "TensorBoard event files and curves.png (loss terms and validation metrics by epoch).\n\n"
        + TRAIN_EXAMPLES,
        usage="coldbrew train [--model NAME] [--data DATA] [--out RUN_DIR] [OPTION ...]",
    )
    train.add_argument(
        "--out", help="run directory (created; must be empty; default runs/MODEL-TIME)"
    )
    train.add_argument("--config", help="YAML preset; flags override it")
    train.add_argument(
        "--resume", metavar="RUN_DIR", help="continue a stopped run from its last checkpoint"
    )
    train.add_argument(
        "--nproc",
        type=int,
        default=None,
        metavar="N",
        help="train in N processes (DDP): runs torchrun --standalone --nproc-per-node N "
        "-m coldbrew train with the other options",
    )
    add_train_options(train)
    add_config_options(train, original_flags=True)


def add_evaluate_parser(commands) -> None:
    evaluate = add_command(
        commands,
        "evaluate",
        "evaluate a run's best checkpoint",
        "Evaluate a run's best checkpoint; writes RUN_DIR/evaluation.json.\n\n"
        "Examples:\n  coldbrew evaluate --run runs/ml1m\n"
        "  coldbrew evaluate --run runs/ml1m --data other-split --split test --json",
    )
    add_run_option(evaluate)
    evaluate.add_argument(
        "--data", default=None, help="evaluate on other data (default: the run's own)"
    )
    add_other_data_layout(evaluate)
    evaluate.add_argument(
        "--split",
        choices=["val", "report", "test"],
        action="append",
        help="default: every split the data has (val: the half that chose; report: the rest)",
    )
    evaluate.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    evaluate.add_argument(
        "--text-encoder",
        default=None,
        metavar="minilm|mpnet|PATH[@TOKENS][+...]",
        help="sentence encoder of text features (default: the run's; give the folder's new "
        "place when a PATH encoder moved)",
    )
    evaluate.add_argument(
        "--allow-other-encoder",
        action="store_true",
        help="score with a --text-encoder other than the run's model (into "
        "evaluation-other-encoder.json, not evaluation.json)",
    )
    evaluate.add_argument(
        "--protocol",
        choices=["coldbrew", "original"],
        default=None,
        help="re-score with coldbrew's masking (-inf, a group ranks its own items) or the "
        "original CLCRec's (1e-15 for training and other-group items); default: the run's",
    )
    evaluate.add_argument(
        "--cold-candidates",
        choices=["all", "split"],
        default=None,
        help="a split's users ranked over every cold item (all) or the split's own (split); "
        "default: the run's",
    )
    evaluate.add_argument(
        "--trust-pickle",
        action="store_true",
        default=None,
        help="allow the original CLCRec pickled .npy files",
    )
    evaluate.add_argument("--json", action="store_true", help="print JSON instead of a table")


def default_run_dir(model: str) -> str:
    return f"runs/{model}-{time.strftime('%Y%m%d-%H%M%S')}"


def split_label(split: str) -> str:
    """How a table names a split: val is the half of validation that chose (best epoch, ...)."""
    return "val(chose)" if split == "val" else split


def print_metrics_table(metrics: dict) -> None:
    """One line per split and group. The cold group's ``cold_signal`` flag (1.0 on every
    line it was) is shown only when it is 0: no cold candidate scored differently, so the
    cold figures are ties broken by chance (docs/ranking-ties.md)."""
    from coldbrew.evaluation.engine import COLD_SIGNAL

    for split, groups in metrics.items():
        for group, values in groups.items():
            cells = "  ".join(
                f"{name}={value:.4f}" for name, value in values.items() if name != COLD_SIGNAL
            )
            if values.get(COLD_SIGNAL) == 0.0:
                cells += "  no cold signal (every cold item scored alike: chance-level ranks)"
            print(f"{split_label(split):10s} {group:5s} {cells}")


def train_config(args: argparse.Namespace):
    from coldbrew.config import Flags, check_usable_options, load_yaml, make_config
    from coldbrew.training.run import resume_config

    if args.resume and args.out:
        raise ColdbrewError("--resume RUN_DIR continues RUN_DIR in place; do not also give --out")
    flags = config_flags(args)
    preset = load_yaml(args.config) if args.config else {}
    if args.resume:  # the run keeps its own settings; flags given now (e.g. --epochs) go on top
        config = resume_config(args.resume, preset, Flags(flags))
        refuse_finished_run(args.resume, config, flags)
        return config
    config = make_config(preset, Flags(flags))
    check_usable_options(config, flags)
    require_data(flags, preset)
    return config


# the options that let a finished run train on (resume_config allows each to change)
STOPPING_OPTIONS = ("epochs", "patience", "min_gain", "time_budget", "min_epochs")


def refuse_finished_run(run_dir: str, config, given: dict) -> None:
    """``--resume`` of a run that finished (its results.json written), with nothing that lets
    it train on: refused, naming what would (it used to say "resuming", train nothing and
    exit 0). A multi-seed run's own results are left to its seeds (finished ones are skipped)."""
    from pathlib import Path

    from coldbrew.config import canonical_key

    try:
        results = json.loads((Path(run_dir) / "results.json").read_text())
        done, stopped = int(results["epochs_run"]), results.get("stopped", "max_epochs")
    except (OSError, ValueError, KeyError, TypeError):  # unfinished, or a multi-seed run's
        return
    if stopped == "max_epochs":
        if config.epochs > done:
            return
        raise ColdbrewError(
            f"{run_dir} finished its {done} epochs; give --epochs M > {done} to continue it "
            f"(e.g. --resume {run_dir} --epochs {done + 10})"
        )
    if stopped not in ("early_stop", "time_budget"):
        return  # a failed run (non_finite, diverged) resumes as it did: not "finished"
    if any(canonical_key(key) in STOPPING_OPTIONS for key in given):
        return  # the stopping rule decides with the new settings
    why = {
        "early_stop": f"early stop: {config.patience} evaluations without a gain",
        "time_budget": f"its --time-budget of {config.time_budget}s spent",
    }[stopped]
    raise ColdbrewError(
        f"{run_dir} finished: it stopped after epoch {done} ({why}); give a larger --patience "
        f"or --time-budget (and --epochs) to continue it, or start a new run with --out"
    )


def launch_with_torchrun(args: argparse.Namespace) -> int:
    """``coldbrew train --nproc N ...`` is ``torchrun --standalone --nproc-per-node N -m
    coldbrew train ...``: the standard launcher, with every other option passed through."""
    import os
    import subprocess
    import sys

    if args.nproc < 1:
        raise ColdbrewError(f"--nproc must be at least 1, not {args.nproc}")
    passed, skip = [], False
    for item in args.raw_argv:
        if skip:
            skip = False
        elif item == "--nproc":
            skip = True
        elif not item.startswith("--nproc="):
            passed.append(item)
    if not args.out and not args.resume:  # one name for every rank
        passed += ["--out", default_run_dir(train_config(args).model)]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += [f"--nproc-per-node={args.nproc}", "-m", "coldbrew", *passed]
    return subprocess.run(command, env=dict(os.environ)).returncode


def run_train(args: argparse.Namespace) -> int:
    import os

    if args.nproc is not None and "RANK" not in os.environ:
        return launch_with_torchrun(args)
    config = train_config(args)
    check_environment_variables()
    run_dir = args.resume or args.out
    if not run_dir:
        if "RANK" in os.environ:
            raise ColdbrewError(
                "with several processes, give --out RUN_DIR (one name for all ranks)"
            )
        run_dir = default_run_dir(config.model)
        if not config.quiet:
            print(f"no --out given: writing the run to {run_dir}")
    from coldbrew.training.distributed import Distributed

    distributed = Distributed.from_environment()
    try:
        results = run_training(args, config, run_dir, distributed)
    finally:
        distributed.stop()
    if not config.quiet and distributed.is_main and "seeds" in results:
        print_seed_table(results)
        print(f"results in {run_dir}/results.json")
    elif not config.quiet and distributed.is_main:
        print_metrics_table(results["metrics"])
        print(f"{timing_summary(results, config)}; results in {run_dir}/results.json")
    return 0


def timing_summary(results: dict, config) -> str:
    """The last line's times: a trained model's epochs and samples/s; a closed-form one's
    (ridge, knn ...: no training step) says so. A zoo model's backbone counts either way."""
    from coldbrew.registry import model_spec

    timing = results["timing"]
    backbone = timing.get("backbone_seconds") or 0.0
    with_backbone = f" + backbone {backbone:.1f}s" if backbone else ""
    if not model_spec(config.model).trains:
        return (
            f"{config.model} is fitted in closed form (no epochs, no samples/s): "
            f"fit and evaluation {timing['eval_seconds']:.1f}s{with_backbone}"
        )
    return (
        f"best epoch {results['best_epoch']} of {results['epochs_run']}; "
        f"train {timing['train_seconds']:.1f}s{with_backbone}, eval {timing['eval_seconds']:.1f}s, "
        f"{timing['samples_per_second']:,.0f} samples/s"
    )


def check_environment_variables() -> None:
    """The fault-injection and allocator variables, refused before the run directory exists."""
    from coldbrew.system.runtime import keeps_freed_memory
    from coldbrew.training.memory.safety import injected_steps

    injected_steps()
    keeps_freed_memory()


def run_evaluate(args: argparse.Namespace) -> int:
    from coldbrew.config import check_device_name
    from coldbrew.training.run_evaluation import evaluate_run

    check_device_name(args.device)
    from coldbrew.research.seeds import is_multi_seed_run

    if is_multi_seed_run(args.run):
        raise ColdbrewError(
            f"{args.run} is a multi-seed run: evaluate one seed's run, e.g. --run {args.run}/seed-N"
        )
    output = evaluate_run(
        args.run,
        data=args.data,
        layout=other_data_layout(args),
        splits=args.split,
        device=args.device,
        trust_pickle=args.trust_pickle,
        protocol=args.protocol,
        cold_candidates=args.cold_candidates,
        text_encoder=args.text_encoder,
        allow_other_encoder=args.allow_other_encoder,
    )
    if args.json:
        print(json.dumps(output))
    else:
        print_metrics_table(output["metrics"])
    return 0


def run_data(args: argparse.Namespace) -> int:
    if args.data_command == "init":
        from coldbrew.cli.data_init import run_init

        return run_init(args)
    if args.data_command == "convert":
        from pathlib import Path

        from coldbrew.data import resolve_data_path
        from coldbrew.data.loaders.clcrec_layout import convert

        source = resolve_data_path(args.src)
        print(f"wrote {convert(source, Path(args.dst), trust_pickle=args.trust_pickle)}")
        return 0
    from coldbrew.cli.data_info import run_info

    return run_info(args)
