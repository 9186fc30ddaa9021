"""``coldbrew recommend``: parse, delegate to ``coldbrew.recommend``, print a table or JSON."""

from __future__ import annotations

import argparse
import json

from coldbrew.cli.options import (
    add_command,
    add_other_data_layout,
    add_run_option,
    other_data_layout,
)
from coldbrew.errors import ColdbrewError

EXAMPLES = """Examples:
  coldbrew recommend --run runs/ml1m --user 42 --k 10
  coldbrew recommend --run runs/lm --item-text "Heat (1995). Genres: Action, Crime, Thriller."
  coldbrew recommend --run runs/clcrec --item-vector new_item.npy --k 50 --json
  coldbrew recommend --run runs/genre-only --item-genres Action,Sci-Fi
  coldbrew recommend --run runs/lm --item-text "Heat (1995). ..." --item-vector genres.npy
  coldbrew recommend --run runs/clcrec-text --item-text "Heat (1995). ..." --item-genres Action

--user gives a user's top items (training items left out, cold items included). A new item
gives the users for whom it stands out most (its lift: the score above the user's mean over
the catalogue, in the user's standard deviations; not personalised models refuse): clcrec and the zoo read --item-vector (a .npy vector
of the data's feature blocks, concatenated in order); where the data has a text block
(--features genre,text), they read --item-text too, encoded by the run's own text encoder as
coldbrew serve encodes it, with the other blocks (--item-genres or --item-vector: e.g.
ml-1m-coldstart's 19 genre flags). lm reads --item-text, and --item-vector too when it was
trained with feature blocks (the data's blocks other than its text vectors; without them they
count as zeros, with a warning).

The vector's columns: `coldbrew data info DATA --features ...` lists them ("new item
vector"), as do the run's config.yaml and results.json. MovieLens genre columns are sorted by
name (Action, Adventure, ..., Western, then unknown), not in u.item's flag order. Where every
column has a name (genre only), --item-genres names the ones that are 1 instead."""


def add_parser(commands) -> None:
    recommend = add_command(
        commands,
        "recommend",
        "a user's top items, or the users for a new item",
        "Recommend from a trained run's best checkpoint.\n\n" + EXAMPLES,
    )
    add_run_option(recommend)
    # --user, or a new item: its text and/or features (checked by LoadedRun.recommend)
    recommend.add_argument(
        "--user", help="a user id as the data gives it (42; c2 where the data's ids are text)"
    )
    recommend.add_argument("--item-text", help="a new item's text (title, genres, plot ...)")
    # not --item-features: that is the LM's training switch; the old spelling still works
    recommend.add_argument(
        "--item-vector",
        "--item-features",
        dest="item_features",
        metavar="FILE.npy",
        help="a new item's feature vector (a .npy file)",
    )
    recommend.add_argument(
        "--item-genres",
        metavar="NAMES",
        help="a new item's vector by its genre names, e.g. Action,Sci-Fi (the rest 0)",
    )
    recommend.add_argument("--k", type=int, default=20, help="how many to list (default 20)")
    recommend.add_argument("--data", default=None, help="other data (default: the run's own)")
    add_other_data_layout(recommend)
    recommend.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    recommend.add_argument(
        "--text-encoder",
        metavar="PATH",
        help="the run's text encoder folder where it lies now, when it has moved",
    )
    recommend.add_argument("--json", action="store_true", help="print JSON rows")


def run(args: argparse.Namespace) -> int:
    from coldbrew.config import check_device_name
    from coldbrew.recommend import load_run

    check_device_name(args.device)
    features = None
    if args.item_features is not None:
        import numpy as np

        try:
            features = np.load(args.item_features, allow_pickle=False)
        except (OSError, ValueError) as error:
            reason = str(error)
            if "pickled" in reason:  # what numpy says of any file that is not a .npy array
                reason = "not a .npy array (write one with numpy.save)"
            raise ColdbrewError(
                f"cannot read --item-vector {args.item_features}: {reason}"
            ) from None
    layout = other_data_layout(args)
    loaded = load_run(
        args.run, data=args.data, device=args.device, text_encoder=args.text_encoder, layout=layout
    )
    columns = None
    if args.item_genres is not None:
        columns = [name for name in args.item_genres.split(",") if name.strip()]
    rows = loaded.recommend(
        user=user_id(args.user, loaded.dataset.user_ids),
        item_text=args.item_text,
        item_features=features,
        k=args.k,
        item_columns=columns,
    )
    if args.json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        who = f"item {row['item']}" if "item" in row else f"user {row['user']}"
        extra = " (cold)" if row.get("cold") else ""
        text = f"  {row['title']}" if row.get("title") else ""  # the item's plain title
        lift = f"  lift {row['lift']:+.2f}" if "lift" in row else ""
        print(f"{row['rank']:4d}  {who:12s} {row['score']:9.4f}{lift}{extra}{text}")
    return 0


def user_id(text: str | None, source_ids) -> int | str | None:
    """``--user`` as the run's ids are: text where they are text, else an integer."""
    from coldbrew.recommend import has_text_ids

    if text is None or has_text_ids(source_ids):
        return text
    try:
        return int(text)
    except ValueError:
        raise ColdbrewError(
            f"--user must be an integer id (the data's own numbering), not {text!r}"
        ) from None
