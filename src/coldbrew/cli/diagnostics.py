"""``coldbrew doctor|profile|tune``: parse, delegate to ``coldbrew.perf``, print a table or JSON."""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from coldbrew.cli.options import (
    add_command,
    add_config_options,
    config_flags,
    require_data,
    warn_synthetic,
)
from coldbrew.errors import ColdbrewError

EXAMPLES = {
    "doctor": "Examples:\n  coldbrew doctor\n  coldbrew doctor --json > doctor.json",
    "profile": "Examples:\n  coldbrew profile --data ml-1m-coldstart --features genre --model clcrec --steps 50\n"
    "  coldbrew profile --data synthetic --batch-size 256 --trace step.json --json",
    "tune": "Examples:\n  coldbrew tune --data ml-1m-coldstart --features genre --model clcrec --out configs/fast.yaml\n"
    "  coldbrew train --config configs/fast.yaml --out runs/fast",
    "memory": "Examples:\n  coldbrew memory --data ml-1m-coldstart --features genre --batch-size 4096\n"
    "  coldbrew memory --data synthetic:users=200000,items=1000000 --device-memory 80GB --gpu a100-80gb\n"
    "  coldbrew memory --data ml-1m-coldstart --features genre --world-size 8 --json\n\n"
    "Every figure is an estimate: the step runs as a GPU runs it, on shapes alone (no data, no\n"
    "arithmetic); the Memory page of the docs compares such estimates with measured peaks.",
}


def add_parsers(commands) -> None:
    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return add_command(commands, name, help_text, f"{help_text}.\n\n{EXAMPLES[name]}")

    doctor = add(
        "doctor",
        "check this machine: versions, GPUs, torch.compile, copy, matmul and sampler speed",
    )
    doctor.add_argument(
        "--seconds", type=float, default=0.5, help="time per throughput measurement (default 0.5)"
    )
    doctor.add_argument(
        "--compile-timeout",
        type=float,
        default=45.0,
        help="give up on the compile probe after this",
    )
    doctor.add_argument(
        "--no-compile-check",
        dest="compile_check",
        action="store_false",
        help="skip the compile probe",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object")

    profile = add("profile", "profile training steps and name the bottleneck")
    profile.add_argument("--config", help="YAML preset; flags override it")
    profile.add_argument("--steps", type=int, default=20, help="profiled steps (default 20)")
    profile.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    profile.add_argument(
        "--trace", metavar="FILE", help="write a Chrome trace (chrome://tracing, ui.perfetto.dev)"
    )
    profile.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_options(profile)

    tune = add("tune", "find the fastest batch size (and --compile) that fits; write a YAML preset")
    tune.add_argument("--config", help="YAML preset to start from; flags override it")
    tune.add_argument("--out", required=True, metavar="FILE.yaml", help="preset to write")
    tune.add_argument("--force", action="store_true", help="replace --out if it exists")
    tune.add_argument(
        "--budget", type=float, default=120.0, help="seconds for the whole search (default 120)"
    )
    tune.add_argument(
        "--no-compile-search",
        dest="compile_search",
        action="store_false",
        help="do not try --compile",
    )
    tune.add_argument(
        "--scale-lr", action="store_true", help="write the square-root-scaled learning rate too"
    )
    tune.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_options(tune)
    add_memory_parser(add)


def add_memory_parser(add) -> None:
    memory = add("memory", "estimate a training step's memory per device and the largest batch")
    memory.add_argument("--config", help="YAML preset; flags override it")
    memory.add_argument("--world-size", type=int, default=1, help="processes (GPUs), default 1")
    memory.add_argument(
        "--device-memory",
        default=None,
        help="memory of one device, e.g. 80GB or 24GiB (default: this GPU's, else available RAM)",
    )
    memory.add_argument(
        "--gpu",
        default=None,
        help="also estimate the step time on this GPU from the step's FLOPs and bytes: "
        "rtx4090, a100-80gb or h100-sxm",
    )
    memory.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_options(memory)


def memory_report(args: argparse.Namespace, started: float) -> dict:
    from coldbrew.config import make_config
    from coldbrew.system.runtime import resolve_device
    from coldbrew.training.memory.devices import GPUS, device_capacity, parse_size
    from coldbrew.training.memory.estimate import estimate_memory
    from coldbrew.training.run import load_run_dataset

    if args.world_size < 1:
        raise ColdbrewError(f"--world-size must be at least 1, not {args.world_size}")
    if args.gpu is not None and args.gpu not in GPUS:
        raise ColdbrewError(f"--gpu must be one of {', '.join(GPUS)}, not {args.gpu!r}")
    try:
        capacity = parse_size(args.device_memory) if args.device_memory else None
    except ValueError as error:
        raise ColdbrewError(f"--device-memory must be {error}") from None
    config = make_config(*config_layers(args))
    if capacity is None:
        capacity = device_capacity(resolve_device(config.device))
    return estimate_memory(
        config,
        load_run_dataset(config),
        world_size=args.world_size,
        device_memory=capacity,
        gpu=args.gpu,
    )


def config_layers(args: argparse.Namespace) -> tuple[dict, dict]:
    """(YAML preset, command-line flags) as given by the user."""
    from coldbrew.config import Flags, load_yaml

    preset = load_yaml(args.config) if args.config else {}
    flags = config_flags(args)
    if (
        getattr(args, "command", None) == "tune"
    ):  # its preset trains real runs: as train, it names its data
        require_data(flags, preset)
    else:
        warn_synthetic(flags, preset)
    return preset, Flags(flags)


def doctor_report(args: argparse.Namespace, started: float) -> dict:
    from coldbrew.perf.doctor import run_doctor

    for flag, value in (("--seconds", args.seconds), ("--compile-timeout", args.compile_timeout)):
        if not (value > 0 and math.isfinite(value)):
            raise ColdbrewError(f"{flag} must be a positive number of seconds, not {value}")
    return run_doctor(
        seconds=args.seconds, check_compile=args.compile_check, compile_timeout=args.compile_timeout
    )


def profile_report(args: argparse.Namespace, started: float) -> dict:
    from coldbrew.config import make_config
    from coldbrew.errors import ColdbrewError
    from coldbrew.perf.profile import profile_training
    from coldbrew.training.run import load_run_dataset

    if args.steps < 1:
        raise ColdbrewError("--steps must be at least 1")
    if args.warmup < 0:
        raise ColdbrewError("--warmup must be at least 0")
    if args.trace:
        check_writable_file(Path(args.trace), "--trace")
    config = make_config(*config_layers(args))
    return profile_training(
        config, load_run_dataset(config), steps=args.steps, trace=args.trace, warmup=args.warmup
    )


def tune_report(args: argparse.Namespace, started: float) -> dict:
    from coldbrew.config import make_config
    from coldbrew.perf.tune import tune
    from coldbrew.training.run import load_run_dataset

    check_writable_file(Path(args.out), "--out")
    if Path(args.out).exists() and not args.force:
        raise ColdbrewError(
            f"--out {args.out} exists: give another file name, or --force to replace it"
        )
    if not args.budget > 0:
        raise ColdbrewError(f"--budget must be positive, not {args.budget}")
    config = make_config(*config_layers(args))
    return tune(
        config,
        load_run_dataset(config),
        Path(args.out),
        budget=args.budget,
        search_compile=args.compile_search,
        scale_lr=args.scale_lr,
        started=started,
    )


def check_writable_file(path: Path, flag: str) -> None:
    """A file that can be written: not a folder, in a folder that exists and is writable."""
    from coldbrew.errors import ColdbrewError

    if path.is_dir():
        raise ColdbrewError(f"{flag} {path} is a folder; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise ColdbrewError(f"{flag} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ColdbrewError(f"{flag} {path}: folder {folder} is not writable")


def run(args: argparse.Namespace) -> int:
    """Run ``doctor``, ``profile`` or ``tune``; print a table or one JSON object. 1 if tune wrote nothing."""
    started = time.perf_counter()
    reports = {"doctor": doctor_report, "profile": profile_report, "tune": tune_report}
    reports["memory"] = memory_report
    report = reports[args.command](args, started)
    if args.json:
        print(json.dumps(report, default=str))
    else:
        from coldbrew.perf import tables

        print(getattr(tables, f"{args.command}_table")(report))
    return 1 if args.command == "tune" and not report["out"] else 0
