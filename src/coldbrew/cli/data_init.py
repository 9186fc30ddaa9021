"""``coldbrew data init FILES...``: guess a ``coldbrew.yaml`` for your own files and print the
guesses (``coldbrew.data.tables.guess``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from coldbrew.cli.options import add_command

INIT_EXAMPLES = """Examples:
  coldbrew data init shop/events.csv shop/products.csv     # writes shop/coldbrew.yaml
  coldbrew data info shop                                   # what was read, dropped, guessed
  coldbrew train --data shop --cold-split time:0.2 --out runs/shop

Interactions: a user and an item column (rating and timestamp optional). Items: one id column;
long or mostly distinct text columns become text, '|'-lists and short labels categories,
numbers numeric. Edit coldbrew.yaml where a guess is wrong."""


def add_init_parser(data_commands) -> None:
    init = add_command(
        data_commands,
        "init",
        "guess a coldbrew.yaml for your own CSV/TSV/Parquet files",
        "Guess which file holds the interactions and the items, and what each column "
        "is; write DIR/coldbrew.yaml and print every guess.\n\n" + INIT_EXAMPLES,
    )
    init.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="CSV/TSV (any separator or encoding), JSON Lines or Parquet files, maybe compressed",
    )
    init.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="where coldbrew.yaml goes (default: the files' folder)",
    )
    init.add_argument("--force", action="store_true", help="replace an existing coldbrew.yaml")


def run_init(args: argparse.Namespace) -> int:
    import os

    from coldbrew.data.tables.guess import guess, write_spec

    files = [Path(name).resolve() for name in args.files]
    spec, lines = guess(files)
    folder = (
        Path(args.out).resolve()
        if args.out
        else Path(os.path.commonpath([f.parent for f in files]))
    )
    target = write_spec(spec, folder, force=args.force)
    for line in lines:
        print(f"guessed: {line}")
    print(f"wrote {target}; check it, then: coldbrew data info {folder}")
    return 0
