"""The ``coldbrew`` command line: subcommands that parse their options and call the library
(``coldbrew.training``, ``coldbrew.research`` ...). Nothing here imports torch until a command
runs, so ``--help`` is instant."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from coldbrew.errors import ColdbrewError

# the commands that run torch: each takes coldbrew.system.threads' thread count first
COMPUTE_COMMANDS = frozenset(
    {"train", "evaluate", "data", "search", "leaderboard", "forecast", "recommend", "bench"}
    | {"doctor", "profile", "tune", "memory", "serve", "export", "blend"}
)
# COLDBREW_DEBUG=1: errors raise with their traceback instead of the one-line message
DEBUG_VARIABLE = "COLDBREW_DEBUG"

DESCRIPTION = """Train and compare recommenders that can recommend brand-new items from their
content (genres, text, feature vectors): CLCRec, a zoo of published cold-start models, a
language-model recommender over item texts, and a forecaster of daily interactions.

Start here:
  coldbrew data info ml-1m-coldstart --features genre,text       # look at your data
  coldbrew train --data ml-1m-coldstart --features genre,text --out runs/ml1m
  coldbrew recommend --run runs/ml1m --user 42 --k 10
  coldbrew serve --run runs/ml1m --port 8000                      # HTTP: /users/42/items
  coldbrew leaderboard --data ml-1m-coldstart --features genre,text \\
      --models clcrec,knn,gar --seeds 1,2,3 --out runs/board

More examples:
  coldbrew train --model gar --help          # a model's own options and defaults
  coldbrew train --data ml-1m-coldstart --features genre,text --seeds 1,2,3 --out runs/ml1m-3
  coldbrew evaluate --run runs/ml1m --split test
  coldbrew search --space configs/search_clcrec.yaml --trials 20 --out runs/study \\
      --data ml-1m-coldstart --epochs 8
  coldbrew compare runs/ml1m-3 runs/study/trial-* --markdown
  coldbrew export --run runs/ml1m --out exports/ml1m --index hnsw
  coldbrew blend --runs runs/board/clcrec/seed-1,runs/board/knn/seed-1 --out runs/blend
  coldbrew forecast --data ml-100k --series genre --window 7,14,30 --out runs/genre
  coldbrew doctor                            # is this machine what I think it is?
  coldbrew profile --data ml-1m-coldstart --features genre --steps 50
  coldbrew memory --data ml-1m-coldstart --features genre --batch-size 8192"""

EPILOG = """Each command has its own examples: coldbrew COMMAND --help.
An error is one line; COLDBREW_DEBUG=1 shows the traceback instead.
The original CLCRec's main.py flags (--l_r, --has_v ...) work on coldbrew train."""


def build_parser() -> argparse.ArgumentParser:
    from coldbrew.cli import (
        bench,
        diagnostics,
        forecast,
        leaderboard,
        recommend,
        research,
        runs,
        serving,
    )

    parser = argparse.ArgumentParser(
        prog="coldbrew",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from coldbrew.version import __version__

    parser.add_argument("--version", action="version", version=f"coldbrew {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands"
    )
    runs.add_parsers(commands)
    research.add_parsers(commands)
    leaderboard.add_parser(commands)
    leaderboard.add_blend_parser(commands)
    forecast.add_parser(commands)
    recommend.add_parser(commands)
    serving.add_parsers(commands)
    bench.add_parser(commands)
    diagnostics.add_parsers(commands)
    return parser


# each command's handler, as "module:function" of coldbrew.cli
HANDLERS = {
    "train": "runs:run_train",
    "evaluate": "runs:run_evaluate",
    "data": "runs:run_data",
    "search": "research:run_search",
    "compare": "research:run_compare",
    "leaderboard": "leaderboard:run",
    "blend": "leaderboard:run_blend",
    "forecast": "forecast:run",
    "recommend": "recommend:run",
    "export": "serving:run_export",
    "serve": "serving:run_serve",
    "bench": "bench:run",
    "doctor": "diagnostics:run",
    "profile": "diagnostics:run",
    "tune": "diagnostics:run",
    "memory": "diagnostics:run",
}


def handler(command: str):
    module, _, function = HANDLERS[command].partition(":")
    return getattr(importlib.import_module(f"coldbrew.cli.{module}"), function)


def main(argv: list[str] | None = None) -> int:
    from coldbrew.cli.options import focus_help_on

    focus_help_on(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        refuse_unknown(parser, args, unknown)
    args.raw_argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")
    try:
        refuse_empty_paths(args)
        with (
            threads_for(args.command),
            one_line_warnings(quiet=bool(getattr(args, "quiet", False))),
            interrupts() as seen,
        ):
            code = handler(args.command)(args)
        if seen:  # a library swallowed the KeyboardInterrupt (in a finaliser, say): still 130
            raise KeyboardInterrupt
        return code
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


def refuse_unknown(parser: argparse.ArgumentParser, args, unknown: list[str]) -> None:
    """Unknown words: the subcommand's usage (not the top level's) and the closest valid option
    name; exits 2 as argparse does."""
    import difflib

    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = commands.choices[args.command]
    nested = getattr(args, "data_command", None)  # coldbrew data info|convert
    sub = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
    if nested and sub:
        command = sub[0].choices[nested]
    valid = [name for name in command._option_string_actions if name.startswith("--")]
    word = unknown[0]
    close = difflib.get_close_matches(word.partition("=")[0], valid, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else f" (see {command.prog} --help)"
    if args.command == "leaderboard" and word.startswith("--"):
        from coldbrew.research.boards.leaderboard import model_option_owners

        owners = model_option_owners(word.partition("=")[0][2:])
        if owners:  # a model's option: the leaderboard trains several models
            hint = (
                f": {word.partition('=')[0]} is an option of {', '.join(owners)}; a leaderboard "
                f"trains several models, so give it under its model in --config, e.g. "
                f"{{{owners[0]}: {{{word.partition('=')[0][2:].replace('-', '_')}: ...}}}}"
            )
    command.error(
        f"unrecognized argument{'s' if len(unknown) > 1 else ''} {' '.join(unknown)}{hint}"
    )


def refuse_empty_paths(args: argparse.Namespace) -> None:
    """``--out ""`` (an unset shell variable, say) would mean the current folder or a default
    one: every command refuses it."""
    for name in ("out", "resume", "run", "runs"):
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            raise ColdbrewError(f"--{name} is empty: give a folder, e.g. --{name} runs/x")


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


class interrupts:
    """Ctrl-C raises KeyboardInterrupt as usual and is also remembered, so a command whose
    interrupt was swallowed on the way (Python ignores one raised in a finaliser or a
    ``__del__``) still exits 130 instead of 0. Its state is what the interrupted command
    left: every command writes atomically and resumes from what is finished."""

    def __enter__(self) -> list[int]:
        import signal
        import threading

        self.seen: list[int] = []
        self.previous = None
        installed = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if installed and threading.current_thread() is threading.main_thread():

            def on_interrupt(number, frame):
                self.seen.append(number)
                raise KeyboardInterrupt

            self.previous = signal.signal(signal.SIGINT, on_interrupt)
        return self.seen

    def __exit__(self, *exc) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


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
