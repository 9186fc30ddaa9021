"""``coldbrew`` command line: thin subcommands that parse and delegate to the library.

Examples:
  coldbrew data info ml-1m-coldstart --features genre
  coldbrew data convert --trust-pickle Data/movielens movielens-safe
  coldbrew train --data ml-1m-coldstart --features genre,text --out runs/ml1m
  coldbrew train --data Data/movielens --trust-pickle --model_name=CLCRec --l_r=0.001 --num_neg=128 --has_v=True
  coldbrew train --data ml-1m-coldstart --features genre,text --seeds 1,2,3 --out runs/ml1m-3
  coldbrew evaluate --run runs/ml1m --split test
  coldbrew search --space space.yaml --trials 20 --out runs/study --data ml-1m-coldstart --epochs 8
  coldbrew compare runs/ml1m-3 runs/study/trial-* --markdown
  coldbrew forecast --data ml-100k --series genre --window 7,14,30 --out runs/genre
  coldbrew recommend --run runs/ml1m --user 42 --k 10
  coldbrew bench train --data synthetic --num-neg 128 --batch-size 4096 --json
  coldbrew doctor
  coldbrew profile --data synthetic --batch-size 256 --steps 20
  coldbrew tune --data synthetic --out fast.yaml --budget 60

Nothing here imports torch until a command runs.
"""

from __future__ import annotations

import argparse
import os
import sys

from coldbrew.errors import ColdbrewError

# the commands that run torch: each takes coldbrew.system.threads' thread count first
COMPUTE_COMMANDS = frozenset(
    {"train", "evaluate", "data", "search", "leaderboard", "forecast", "recommend", "bench"}
    | {"doctor", "profile", "tune", "memory"}
)
# COLDBREW_DEBUG=1: errors raise with their traceback instead of the one-line message
DEBUG_VARIABLE = "COLDBREW_DEBUG"


def build_parser() -> argparse.ArgumentParser:
    from coldbrew.cli import bench, diagnostics, forecast, leaderboard, recommend, research, runs

    parser = argparse.ArgumentParser(
        prog="coldbrew", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    from coldbrew.version import __version__

    parser.add_argument("--version", action="version", version=f"coldbrew {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    runs.add_parsers(commands)
    research.add_parsers(commands)
    leaderboard.add_parser(commands)
    leaderboard.add_blend_parser(commands)
    forecast.add_parser(commands)
    recommend.add_parser(commands)
    bench.add_parser(commands)
    diagnostics.add_parsers(commands)
    return parser


def handler(command: str):
    from coldbrew.cli import bench, diagnostics, forecast, leaderboard, recommend, research, runs

    handlers = {
        "train": runs.run_train,
        "evaluate": runs.run_evaluate,
        "data": runs.run_data,
        "search": research.run_search,
        "compare": research.run_compare,
        "leaderboard": leaderboard.run,
        "blend": leaderboard.run_blend,
        "forecast": forecast.run,
        "recommend": recommend.run,
        "bench": bench.run,
        "doctor": diagnostics.run,
        "profile": diagnostics.run,
        "tune": diagnostics.run,
        "memory": diagnostics.run,
    }
    return handlers[command]


def main(argv: list[str] | None = None) -> int:
    from coldbrew.cli.options import focus_help_on

    focus_help_on(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    args.raw_argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")
    try:
        with (
            threads_for(args.command),
            one_line_warnings(quiet=bool(getattr(args, "quiet", False))),
        ):
            return handler(args.command)(args)
    except ColdbrewError as error:
        if debug:
            raise
        print(f"coldbrew: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the machine's fault (disk full, no permission): one line too
        if debug:
            raise
        print(f"coldbrew: error: {describe_os_error(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("coldbrew: interrupted", file=sys.stderr)
        return 130


def threads_for(command: str):
    """No more torch threads than free cores for a command that computes (COLDBREW_THREADS or
    OMP_NUM_THREADS override; ``coldbrew.system.threads``)."""
    if command not in COMPUTE_COMMANDS:
        import contextlib

        return contextlib.nullcontext()
    from coldbrew.system.threads import chosen_threads

    return chosen_threads()


def describe_os_error(error: OSError) -> str:
    """``No space left on device: runs/x/best.pt (...)`` from an ``OSError``: one line."""
    reason = error.strerror or str(error) or type(error).__name__
    where = f" {error.filename}" if error.filename else ""
    return f"{reason}{':' if where else ''}{where} (set {DEBUG_VARIABLE}=1 for the traceback)"


class one_line_warnings:
    """Warnings as ``coldbrew: warning: message`` lines (no source path), none with --quiet."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __enter__(self):
        import warnings

        self.saved = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if not self.quiet:
                print(f"coldbrew: warning: {message}", file=sys.stderr)

        warnings.showwarning = show
        return self

    def __exit__(self, *exc) -> None:
        import warnings

        warnings.showwarning = self.saved


if __name__ == "__main__":
    sys.exit(main())
