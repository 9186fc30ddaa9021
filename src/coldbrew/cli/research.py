"""``coldbrew train --seeds``, ``coldbrew search`` and ``coldbrew compare``: parse, delegate to
``coldbrew.research``, print a table. Nothing here imports torch, optuna or matplotlib."""

from __future__ import annotations

import argparse

from coldbrew.cli.options import (
    add_command,
    add_config_options,
    add_objective_option,
    config_flags,
    require_data,
)
from coldbrew.errors import ColdbrewError

SEARCH_EXAMPLES = """Examples:
  coldbrew search --space configs/search_clcrec.yaml --trials 20 --out runs/study \\
      --data ml-1m-coldstart --features genre,text --epochs 8 --patience 3 --quiet
  coldbrew search --space space.yaml --trials 30 --timeout 3600 --seeds 1,2 --out runs/study2
  coldbrew train --config runs/study/best.yaml --seeds 1,2,3 --out runs/best
  # the same command on every machine: the workers share one study and its 40 trials
  coldbrew search --space space.yaml --trials 40 --out runs/study3 \\
      --storage postgresql://coldbrew@db-host/studies --study-name clcrec-mpnet

SPACE.yaml gives each searched option a distribution, e.g.
  lr: {log_uniform: [0.0005, 0.01]}
  num_neg: {int: [32, 256], step: 32}
  temp_value: {uniform: [0.5, 4.0]}
  batch_size: {categorical: [1024, 2048, 4096]}
  epochs: 8            # a plain value is fixed for every trial
Running the same command again continues the study in --out (stored in STUDY/study.db), or
with --storage the study of that name in the database (or journal:PATH, a journal file)."""

COMPARE_EXAMPLES = """Examples:
  coldbrew compare runs/default runs/tuned
  coldbrew compare runs/study/trial-* --markdown
  coldbrew compare runs/a runs/b --metric val/cold/recall@20 --metric test/cold/recall@20"""


def add_train_options(train: argparse.ArgumentParser) -> None:
    train.add_argument(
        "--seeds",
        metavar="LIST",
        help="train once per seed (e.g. 1,2,3) into RUN_DIR/seed-N; RUN_DIR/results.json holds "
        "mean ± std of every metric and timing. With --resume: finished seeds are skipped",
    )
    add_tensorboard_option(train)


def add_tensorboard_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-tensorboard",
        dest="tensorboard",
        action="store_false",
        help="no TensorBoard event files (curves.png is still written)",
    )


def add_parsers(commands) -> None:
    add_search_parser(commands)
    add_compare_parser(commands)


def add_search_parser(commands) -> None:
    search = add_command(
        commands,
        "search",
        "tune options with Optuna (TPE, median pruning); write the best as a preset",
        "Search options with Optuna: TPE sampling, median pruning on each epoch's "
        "validation metric, a resumable study in --out.\n\n" + SEARCH_EXAMPLES,
    )
    search.add_argument("--space", required=True, metavar="SPACE.yaml", help="the search space")
    search.add_argument(
        "--trials", type=int, required=True, metavar="N", help="trials in the study in all"
    )
    search.add_argument(
        "--out", required=True, metavar="STUDY", help="study directory (resumed if it holds one)"
    )
    search.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="start no trial after S seconds"
    )
    search.add_argument(
        "--seeds", metavar="LIST", help="train each trial once per seed; the mean is its value"
    )
    search.add_argument(
        "--startup-trials",
        type=int,
        default=5,
        metavar="N",
        help="random trials before TPE, and trials before pruning starts (default 5)",
    )
    search.add_argument(
        "--prune-warmup",
        type=int,
        default=1,
        metavar="EPOCHS",
        help="never prune before this epoch (default 1)",
    )
    add_objective_option(
        search,
        "a trial's value: the monitored metric on the select half (default), or joint: "
        "the geometric mean of the select half's cold metric under both --cold-candidates "
        "conventions (the other scored again from each best checkpoint)",
    )
    add_shared_study_options(search)
    search.add_argument("--config", help="YAML preset every trial starts from; flags override it")
    search.add_argument("--json", action="store_true", help="print the trials as JSON")
    add_tensorboard_option(search)
    add_config_options(search)


def add_shared_study_options(search: argparse.ArgumentParser) -> None:
    """Where the study lives when workers on many machines share it."""
    search.add_argument(
        "--storage",
        metavar="URL",
        help="keep the study in a database (postgresql://user@host/db, any SQLAlchemy URL) or "
        "an Optuna journal file (journal:PATH) that workers on many machines share: each runs "
        "the same command and --trials counts the study's trials in all (default: "
        "STUDY/study.db, one process)",
    )
    search.add_argument(
        "--study-name",
        metavar="NAME",
        help="the study's name in --storage, so one database holds many (default coldbrew)",
    )
    search.add_argument(
        "--heartbeat",
        type=int,
        metavar="S",
        help="with a database: seconds between a trial's heartbeats; a trial silent for twice "
        "that is taken as dead and its settings tried again (default 60)",
    )


def add_compare_parser(commands) -> None:
    compare = add_command(
        commands,
        "compare",
        "one table of runs (multi-seed runs as mean ± std)",
        "Compare finished runs: model, data, the settings that differ, the best "
        "epoch's metrics, best epoch, seconds to it, samples/s.\n\n" + COMPARE_EXAMPLES,
    )
    compare.add_argument("runs", nargs="+", metavar="RUN", help="run directories")
    compare.add_argument("--markdown", action="store_true", help="print a Markdown table")
    compare.add_argument(
        "--metric",
        action="append",
        metavar="SPLIT/SECTION/METRIC",
        help="a metric column, e.g. val/cold/ndcg@50 (repeatable; default: the monitored one "
        "and NDCG at its cut-off)",
    )


def run_training(args: argparse.Namespace, config, run_dir: str, distributed) -> dict:
    """Train one run, or one per seed (``--seeds``, or ``--resume`` of a multi-seed run)."""
    from coldbrew.research.curves import train_with_curves
    from coldbrew.research.seeds import (
        is_multi_seed_run,
        parse_seeds,
        refresh_parent_results,
        train_seeds,
    )

    seeds = parse_seeds(args.seeds) if args.seeds is not None else None
    if seeds and "seed" in config_flags(args):
        raise ColdbrewError("give --seed N or --seeds LIST, not both")
    quiet = config.quiet or not distributed.is_main
    options = {
        "resume": bool(args.resume),
        "distributed": distributed,
        "tensorboard": args.tensorboard,
        "log": (lambda line: None) if quiet else print,
    }
    if seeds or (args.resume and is_multi_seed_run(args.resume)):
        return train_seeds(config, run_dir, seeds, **options)
    results = train_with_curves(config, run_dir, **options)
    if distributed.is_main:  # a seed of a multi-seed run, trained on its own
        refresh_parent_results(run_dir, log=options["log"])
    return results


def print_seed_table(results: dict) -> None:
    from coldbrew.research.summary import format_mean_std

    seeds = ",".join(str(seed) for seed in results["seeds"])
    for split, groups in (results.get("metrics") or {}).items():
        for group, values in groups.items():
            cells = "  ".join(f"{name}={format_mean_std(value)}" for name, value in values.items())
            print(f"{'val(chose)' if split == 'val' else split:10s} {group:5s} {cells}")
    timing = results.get("timing") or {}
    print(
        f"seeds {seeds}: best epoch {format_mean_std(results.get('best_epoch'), 1)}; "
        f"{format_mean_std(timing.get('seconds_to_best'), 1)} s to the best epoch; "
        f"{format_mean_std(timing.get('samples_per_second'), 0)} samples/s (mean ± std)"
    )


def run_search(args: argparse.Namespace) -> int:
    import json

    from coldbrew.config import Flags, load_yaml
    from coldbrew.research.search.report import format_trials_table
    from coldbrew.research.search.space import load_space
    from coldbrew.research.search.study import search
    from coldbrew.research.seeds import parse_seeds

    flags = config_flags(args)
    seeds = parse_seeds(args.seeds) if args.seeds is not None else None
    if seeds and "seed" in flags:
        raise ColdbrewError("give --seed N or --seeds LIST, not both")
    if args.startup_trials < 0 or args.prune_warmup < 0:
        raise ColdbrewError("--startup-trials and --prune-warmup must be at least 0")
    shared = {"study_name": args.study_name, "heartbeat": args.heartbeat}
    if args.storage is None and any(value is not None for value in shared.values()):
        raise ColdbrewError("--study-name and --heartbeat go with --storage URL")
    preset = load_yaml(args.config) if args.config else {}
    require_data(flags, preset)  # as train: a study on generated data looks like a real one
    base_layers = (preset, Flags(flags))
    space = load_space(args.space, base_layers)
    result = search(
        base_layers,
        space,
        args.out,
        trials=args.trials,
        timeout=args.timeout,
        seeds=seeds,
        startup_trials=args.startup_trials,
        warmup_epochs=args.prune_warmup,
        objective=args.objective,
        tensorboard=args.tensorboard,
        storage=args.storage,
        **{name: value for name, value in shared.items() if value is not None},
        log=print,
    )
    if args.json:
        print(json.dumps(result["rows"]))
        return 0
    print(format_trials_table(result["rows"], result["monitor"]))
    if result["preset"]:
        print(
            f"best: trial {result['best']['trial']}, val {result['monitor']} "
            f"{result['best']['value']:.4f}; preset written to {result['preset']}"
        )
    else:
        print("no trial completed: no preset written")
    return 0 if result["preset"] else 1


def run_compare(args: argparse.Namespace) -> int:
    import warnings

    from coldbrew.research.boards.compare import compare_table, format_table, unscored_runs

    header, rows = compare_table(args.runs, args.metric)
    print(format_table(header, rows, markdown=args.markdown))
    unscored = unscored_runs(args.runs)
    if unscored:
        warnings.warn(
            f"{', '.join(unscored)} scored nothing: trained on data with no cold split, so "
            "their metric columns are empty; train with --cold-split time:0.2, or compare "
            "models with coldbrew leaderboard --folds 5",
            stacklevel=1,
        )
    return 0
