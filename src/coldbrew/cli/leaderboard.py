"""``coldbrew leaderboard`` and ``coldbrew blend``: parse, delegate to ``coldbrew.research``
(``leaderboard``, ``blend``), print the table. Nothing here imports torch."""

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

LEADERBOARD_EXAMPLES = """Examples:
  coldbrew leaderboard --data ml-1m-coldstart --features genre,text \\
      --models clcrec,knn,deepmusic --seeds 1,2,3 --out runs/board
  coldbrew leaderboard --data ml-100k --features genre,text --models clcrec,lm --seeds 1,2,3 \\
      --epochs 20 --out runs/board-100k --markdown
  coldbrew leaderboard --config configs/best.yaml --data ml-1m-coldstart --out runs/best
  coldbrew leaderboard --data ml-1m-coldstart --features genre,text --models clcrec,aldi,ridge \\
      --seeds 1 --folds 5 --jobs 2 --out runs/folds   # folds choose, all of validation reports
  coldbrew leaderboard ... --out /shared/runs/board --claims postgresql://host/db  # one worker
      of many: run the same command on each machine; its runs are handed out
  coldbrew leaderboard --data ml-100k --features genre,text --models knn,deepmusic,gar,ridge \\
      --seeds 1,2 --jobs 2 --out runs/board-2    # two models at once, one per core
  coldbrew leaderboard --data ml-1m-coldstart --features genre,text --models aldi,ridge \\
      --text-encoders minilm,mpnet@128 --folds 5 --seeds 1 --out runs/encoders \\
      --blend aldi@mpnet@128+ridge@minilm   # rows aldi@minilm, aldi@mpnet@128, ridge@...
Running the same command again trains only what is missing and prints the table."""

BLEND_EXAMPLES = """Examples:
  coldbrew blend --runs runs/clcrec,runs/knn --out runs/blend
  coldbrew blend --runs runs/board/clcrec/seed-1,runs/board/gar/seed-1 --cold-candidates split \
      --out runs/blend-split
  coldbrew blend --runs runs/a,runs/b --weights 0.7,0.3 --out runs/blend-fixed
  coldbrew blend --runs runs/a,runs/b --objective joint --out runs/blend-joint  # both conventions
Then: coldbrew evaluate --run runs/blend; coldbrew recommend --run runs/blend --user 1; coldbrew compare runs/blend runs/clcrec."""


def add_parser(commands) -> None:
    board = add_command(
        commands,
        "leaderboard",
        "train several models over seeds; one table on both cold-candidate conventions",
        "Train every model once per seed (OUT/MODEL/seed-N), score each on both "
        "conventions of the cold group (all: every cold item; split: the split's own cold "
        "items), and print mean ± std over seeds.\n\n" + LEADERBOARD_EXAMPLES,
    )
    board.add_argument(
        "--models", metavar="LIST", help="e.g. clcrec,knn,gar (default: the --config's models)"
    )
    board.add_argument("--seeds", metavar="LIST", help="default: the --config's seeds, else 1,2,3")
    board.add_argument("--out", required=True, metavar="DIR", help="leaderboard directory")
    board.add_argument(
        "--text-encoders",
        metavar="LIST",
        help="a row per model and text encoder, e.g. minilm,mpnet@128: rows MODEL@ENCODER "
        "(ridge@mpnet@128) on the same split or folds; a model that reads no text block gets "
        "one row; instead of --text-encoder",
    )
    board.add_argument(
        "--blend",
        metavar="A+B,...",
        help="also blend these models' runs per seed (weights chosen on val), e.g. clcrec+knn; "
        "(A+B)+C blends the finished blend of A and B with C; with --text-encoders name rows: "
        "aldi@mpnet@128+ridge@minilm",
    )
    add_objective_option(
        board,
        "how each blend's weights are chosen on val: monitored, the runs' cold-candidate "
        "convention (default), or joint: both conventions' geometric mean",
        "--blend-objective",
        default=None,
    )
    board.add_argument(
        "--config",
        help="YAML preset every model starts from (its leaderboard: section may name the models, "
        "text_encoders, blend, blend_objective, seeds and jobs); flags override it",
    )
    board.add_argument(
        "--jobs",
        metavar="N",
        help="train N models at once, each in its own process (auto: one per free core; "
        "default 1, or the --config's)",
    )
    board.add_argument(
        "--claims",
        metavar="WHERE",
        help="share this board with other workers running the same command on the same --out: "
        "its runs are handed out through a database URL (postgresql://...) or a folder every "
        "worker reaches; each worker prints the table once all is done",
    )
    board.add_argument("--markdown", action="store_true", help="print a Markdown table")
    board.add_argument(
        "--wide", action="store_true", help="print every column (each metric, group and split)"
    )
    board.add_argument("--no-plot", dest="plot", action="store_false", help="no leaderboard.png")
    add_config_options(board, model_options=False, unlisted=("model", "seed", "fold"))


def add_blend_parser(commands) -> None:
    blend = add_command(
        commands,
        "blend",
        "combine trained runs' per-user standardised scores; weights chosen on val",
        "Blend single-seed runs of the same data: each run's scores standardised "
        "per user, summed with the weights (a grid over the simplex) that give the best val cold "
        "Recall@20. The blend is a run of its own in --out.\n\n" + BLEND_EXAMPLES,
    )
    blend.add_argument("--runs", required=True, metavar="LIST", help="run directories, 2 to 6")
    blend.add_argument("--out", required=True, metavar="DIR", help="the blend's run directory")
    blend.add_argument("--weights", metavar="LIST", help="fixed weights instead of the search")
    blend.add_argument(
        "--cold-candidates",
        choices=("all", "split"),
        help="the cold items a split's users rank (default: the first run's)",
    )
    add_objective_option(
        blend,
        "what the weights maximise on val: cold Recall@20 under --cold-candidates "
        "(default), or joint: its geometric mean under both conventions",
    )
    blend.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    blend.add_argument("--quiet", action="store_true", help="print the result only")


def run_blend(args: argparse.Namespace) -> int:
    from coldbrew.research.boards.blend import blend

    runs = [part.strip() for part in args.runs.split(",") if part.strip()]
    weights = None
    if args.weights:
        try:
            weights = [float(part) for part in args.weights.split(",")]
        except ValueError:
            raise ColdbrewError(
                f"--weights must be numbers like 0.7,0.3, not {args.weights!r}"
            ) from None
    overrides = {"device": args.device, "quiet": args.quiet}
    if args.cold_candidates:
        overrides["cold_candidates"] = args.cold_candidates
    log = (lambda _: None) if args.quiet else print
    options = {"weights": weights, "objective": args.objective, "overrides": overrides}
    results = blend(runs, args.out, **options, log=log)
    from coldbrew.research.summary import reported_split

    split, label = reported_split(results["metrics"])
    cold = results["metrics"].get(split, {}).get("cold", {})
    how = "weights given" if weights else f"weights chosen on val, {args.objective} objective"
    if "recall@20" not in cold:  # data with no cold split: nothing to score the blend on
        print(f"blend in {args.out} ({how}): not scored, the data has no cold val items")
        return 0
    print(f"blend in {args.out}: {label} cold recall@20 {cold['recall@20']:.4f} ({how})")
    return 0


def run(args: argparse.Namespace) -> int:
    from coldbrew.config import Flags, load_yaml
    from coldbrew.research.boards.blend_names import parse_blends
    from coldbrew.research.boards.encoder_rows import board_rows
    from coldbrew.research.boards.leaderboard import board_preset, leaderboard, parse_models
    from coldbrew.research.search.parallel import parse_jobs
    from coldbrew.research.seeds import parse_seeds

    flags = config_flags(args)
    for refused in ("model", "seed"):
        if refused in flags:
            raise ColdbrewError(f"give --{refused}s LIST to the leaderboard, not --{refused}")
    if "fold" in flags:
        raise ColdbrewError("the leaderboard trains every fold: give --folds K, not --fold")
    preset = load_yaml(args.config) if args.config else {}
    named = board_preset(preset)  # flags win over the preset's leaderboard: section
    models = args.models or named.get("models")
    if not models:
        raise ColdbrewError("give --models LIST, e.g. clcrec,knn (or a --config that names them)")
    models = parse_models(models)
    encoders = board_encoders(args.text_encoders, flags, preset, named)
    # a blend joins the board's rows: its models, or MODEL@ENCODER with encoders
    rows = (
        [row for row, _ in board_rows((preset, Flags(flags)), models, encoders)]
        if encoders
        else models
    )
    seeds = parse_seeds(args.seeds or named.get("seeds") or "1,2,3")
    blends = parse_blends(args.blend or named.get("blend"), rows)
    blend_objective = args.blend_objective or named.get("blend_objective") or "monitored"
    jobs = parse_jobs(args.jobs or named.get("jobs") or 1)
    require_data(flags, preset)  # as train: a board on generated data looks like a real one
    base_layers = (preset, Flags(flags))
    quiet = bool(flags.get("quiet"))
    board = leaderboard(
        base_layers,
        models,
        seeds,
        args.out,
        blends=blends,
        blend_objective=blend_objective,
        plot=args.plot,
        jobs=jobs,
        claims=args.claims,
        text_encoders=encoders,
        log=(lambda _: None) if quiet else print,
    )
    if args.markdown:
        from pathlib import Path

        from coldbrew.research.boards.leaderboard import LEADERBOARD_MD

        print((Path(args.out) / LEADERBOARD_MD).read_text(), end="")
    else:
        print(board["wide_table"] if args.wide else board["table"])
        if not quiet:
            print(peak_memory_line())
    return 0


def board_encoders(given: str | None, flags: dict, preset: dict, named: dict) -> list[str]:
    """The board's text encoders: ``--text-encoders``, else the preset's ``leaderboard:
    text_encoders`` unless ``--text-encoder`` gives one (flags win over the preset); none for a
    board of one encoder. One encoder and a list from the same place are refused."""
    from coldbrew.config import canonical_key
    from coldbrew.research.boards.encoder_rows import parse_text_encoders

    in_preset = "text_encoder" in {canonical_key(str(key)) for key in preset}
    if given and "text_encoder" in flags:
        raise ColdbrewError(
            "give --text-encoders LIST (a row per encoder) or --text-encoder NAME (one), not both"
        )
    if not given and named.get("text_encoders") and in_preset:
        raise ColdbrewError(
            "the --config gives text_encoder and leaderboard: text_encoders; keep one of them"
        )
    if given:
        return parse_text_encoders(given)
    if named.get("text_encoders") and "text_encoder" not in flags:
        return parse_text_encoders(named["text_encoders"])
    return []


def peak_memory_line() -> str:
    """``peak memory: 1.2 GB in this process, 3.4 GB in its largest child``: the board's (its
    children: the --jobs workers, and any process a run started)."""
    from coldbrew.system.timing import peak_rss_bytes

    line = f"peak memory: {peak_rss_bytes() / 1e9:.1f} GB in this process"
    workers = peak_rss_bytes(children=True)
    return line + (f", {workers / 1e9:.1f} GB in its largest child" if workers else "")
