"""``coldbrew data init FILES...``: guess a ``coldbrew.yaml`` for your own files and print the
guesses (``coldbrew.data.tables.guess``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from coldbrew.cli.options import add_command, add_layout_option

INIT_EXAMPLES = """Examples:
  coldbrew data init shop/events.csv shop/products.csv     # writes shop/coldbrew.yaml
  coldbrew data info shop                                   # what was read, dropped, guessed
  coldbrew train --data shop --cold-split time:0.2 --out runs/shop

  coldbrew data init shop/                                  # every table file in shop/

Interactions: two id columns whose values repeat (an e-mail column is the user); the items
table: one row per id, holding the interactions' items. Long or many-valued text becomes
text, '|'-lists of short labels and few-valued labels categories, numbers numeric; index,
URL, constant and empty columns are skipped. Each guess is printed with its reason: edit
coldbrew.yaml where one is wrong (docs: Data page, "What data init guesses")."""


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
        help="CSV/TSV (any separator or encoding), JSON Lines or Parquet files, maybe "
        "compressed; or a folder (its table files are read)",
    )
    init.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="where coldbrew.yaml goes (default: the files' folder)",
    )
    init.add_argument("--force", action="store_true", help="replace an existing coldbrew.yaml")
    add_layout_option(
        init,
        "a setting written over the guesses, e.g. --layout k_core=5 or --layout "
        "separator=';' (coldbrew.yaml's keys; encoding, separator and quote also read the files)",
    )


def run_init(args: argparse.Namespace) -> int:
    import os

    from coldbrew.data.tables.guess import guess, write_spec
    from coldbrew.data.tables.settings import (
        FILE_KEYS,
        READ_KEYS,
        parse_layout_flags,
    )

    given = parse_layout_flags(args.layout)
    files = [Path(name).resolve() for name in args.files]
    spec, lines = guess(files, {key: given[key] for key in READ_KEYS if key in given})
    for key, value in given.items():
        given[key] = Path(value).resolve() if key in FILE_KEYS else value
        lines.append(f"given: {key}: {value}")
    spec.update(given)
    folders = [path if path.is_dir() else path.parent for path in files]
    folder = Path(args.out).resolve() if args.out else Path(os.path.commonpath(folders))
    folder.mkdir(parents=True, exist_ok=True)  # --out may name a new folder
    target = write_spec(spec, folder, force=args.force)
    for line in lines:
        print(line if line.startswith("given: ") else f"guessed: {line}")
    print(f"wrote {target}; check it, then: coldbrew data info {folder}")
    return 0
