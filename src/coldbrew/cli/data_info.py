"""``coldbrew data info``: a dataset's statistics, its text block described without encoding."""

from __future__ import annotations

import argparse
import json

from coldbrew.cli.options import percent
from coldbrew.errors import ColdbrewError

NAMED_COLUMNS = 20  # a block of up to this many columns shows every name
SHOWN_COLUMNS = 5  # a wider one (2,000 authors) shows the first few and counts the rest


def run_info(args: argparse.Namespace) -> int:
    """Load the dataset as ``train`` would (its split, cold items and report half) but leave
    the text block unencoded: ``text_block_plan`` says what encoding it would take."""
    from coldbrew.config import MAX_SEED
    from coldbrew.data import load_dataset
    from coldbrew.data.splits.cold_split import apply_cold_split
    from coldbrew.data.splits.selection import carve_report
    from coldbrew.data.tables.settings import parse_layout_flags
    from coldbrew.options import coerce

    seed = coerce("seed", args.seed, int, from_text=True)
    if not 0 <= seed <= MAX_SEED:
        raise ColdbrewError(f"option 'seed' must be in 0..{MAX_SEED}, not {seed}")
    share = coerce("report_share", args.report_share, float, from_text=True)
    selection_seed = coerce("selection_seed", args.selection_seed, int, from_text=True)
    dataset = load_dataset(
        args.data,
        trust_pickle=args.trust_pickle,
        features=args.features,
        seed=seed,
        text_encoder=args.text_encoder,
        text_vectors=False,  # described below, not encoded
        layout=parse_layout_flags(args.layout) if args.layout else None,
    )
    dataset = apply_cold_split(dataset, args.cold_split, selection_seed)  # as train does
    dataset = carve_report(dataset, share, selection_seed)  # the halves a run sees
    summary = dataset.summary()
    plan = text_plan(dataset, args.features, args.text_encoder)
    if plan is not None:  # the block's shape as train would make it, and what that takes
        summary["features"]["text"] = [dataset.num_items, plan["width"]]
        summary["text_encoder"] = args.text_encoder
        summary["text"] = plan
    if args.json:
        print(json.dumps(summary))
        return 0
    print_summary(summary, dataset, plan)
    return 0


def text_plan(dataset, features: str | None, text_encoder: str) -> dict | None:
    """The text block's plan (``text_block_plan``) where the dataset has item texts, text is
    asked for (or nothing is, so all) and the ``[text]`` extra is installed; else None."""
    from coldbrew.data.features import text_encoder_available
    from coldbrew.data.text.sentence_models import TextEncoder
    from coldbrew.data.text.text_plan import text_block_plan

    asked = features is None or "text" in [name.strip() for name in features.split(",")]
    if dataset.item_text is None or not asked or not text_encoder_available():
        return None
    if "text" in dataset.features:  # a source whose text block is its own (word ids)
        return None
    return text_block_plan(dataset.item_text, TextEncoder.parse(text_encoder))


def print_summary(summary: dict, dataset, plan: dict | None) -> None:
    from coldbrew.data.dataset import describe_layout
    from coldbrew.data.text.text_plan import describe_plan

    summary.pop("feature_columns", None)  # said below, in the new item vector's order
    summary.pop("text", None)  # said below, in words
    if "cold_split" in summary:  # every cold item's id is in --json; here the first few
        made = summary["cold_split"]["items"]
        summary["cold_split"]["items"] = made[:5] + (["..."] if len(made) > 5 else [])
    for key, value in summary.items():
        shown = percent(value) if key == "density" else value
        print(f"{key:20s} {shown}")
    layout = [shortened(entry) for entry in dataset.feature_layout()]
    if plan is not None:
        layout.append({"block": "text", "width": plan["width"]})
        print(f"{'text block':20s} {describe_plan(plan)}")
    print(f"{'new item vector':20s} {describe_layout(layout)}")
    for note in dataset.notes:
        print(f"note: {note}")


def shortened(entry: dict) -> dict:
    """A layout entry whose column names are the first few and a count of the others."""
    columns = list(entry.get("columns") or [])
    if len(columns) <= NAMED_COLUMNS:
        return entry
    more = f"... {len(columns) - SHOWN_COLUMNS:,} more"
    return {**entry, "columns": [*columns[:SHOWN_COLUMNS], more]}
