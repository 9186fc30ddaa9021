"""A new item's feature row when its text fills the data's ``text`` block: the text encoded by
the run's own sentence encoder, the other dense blocks given, joined in the data's block order.

CLCRec and the zoo read the data's dense feature blocks; when one of them is a ``text`` block
made from the items' texts by a sentence encoder, a new item may be described by its text and
the other blocks. ``coldbrew recommend --item-text`` (``coldbrew.recommend``) and
``coldbrew serve``'s ``POST /items/score`` (``coldbrew.serving.new_items``) both build the row
here, so both score the same text the same way. Blocks are described as the export's recipe
describes them: ``{"name", "width", "columns"?}``, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import torch

from coldbrew.data.text.sentence_folders import SentenceModel
from coldbrew.errors import ColdbrewError

ZERO_FEATURES = "the item's features are all zero: its users are ranked from no content at all"
NAMED_COLUMNS_SHOWN = 24  # a block's column names listed in a message, at most


def item_blocks(dataset) -> list[dict]:
    """The data's dense blocks in the order models join them: ``{"name", "width",
    "columns"?}`` (``columns`` where the source names each column, e.g. genre flags)."""
    return [
        {"name": entry["block"], "width": entry["width"]}
        | ({"columns": entry["columns"]} if entry.get("columns") else {})
        for entry in dataset.feature_layout()
    ]


def text_block_of(model, dataset) -> str | None:
    """``"text"`` when ``model`` reads the data's dense blocks (not the LM, which reads text
    through its own backbone) and the data has a ``text`` block made from the items' joined
    texts; else None (also for one vector per text column: ``per_column_refusal``)."""
    from coldbrew.models.base import Recommender

    if type(model).encode_items is Recommender.encode_items or hasattr(model, "feature_widths"):
        return None
    if getattr(dataset, "text_fields", None):
        return None
    block = dataset.features.get("text")
    return "text" if isinstance(block, torch.Tensor) and dataset.item_text is not None else None


def per_column_refusal(dataset) -> str:
    """Why a new item's one text cannot fill a text block of one vector per column."""
    return (
        f"this run's text block holds one vector per text column ({', '.join(dataset.text_fields)}; "
        "text_mode: per_column), which one new-item text cannot fill: give the item's whole "
        "vector (--item-vector), or train with text_mode: joined"
    )


def describe_blocks(blocks: list[dict]) -> str:
    """``genre (19 columns: Action, Adventure, ...)``, block after block."""
    parts = []
    for block in blocks:
        names = list(block.get("columns") or [])
        shown = ", ".join(names[:NAMED_COLUMNS_SHOWN]) + (
            ", ..." if len(names) > NAMED_COLUMNS_SHOWN else ""
        )
        parts.append(f"{block['name']} ({block['width']} columns{': ' + shown if names else ''})")
    return ", then ".join(parts) or "none"


def other_blocks(blocks: list[dict], text_block: str) -> list[dict]:
    return [block for block in blocks if block["name"] != text_block]


def needs_other_blocks(blocks: list[dict], text_block: str, how: str) -> str:
    """The refusal of a text without the other blocks: which blocks, and ``how`` to give them."""
    return (
        f"this run's items need {describe_blocks(other_blocks(blocks, text_block))} besides "
        f"{text_block}: {how}"
    )


class TextBlockEncoder:
    """A text's row of the ``text`` block, by the sentence encoder whose members' settings
    are ``models`` (``TextEncoder.models``, or an export's ``described_models``; each
    member's vectors side by side), loaded once, on the CPU as the data's vectors were made."""

    def __init__(self, models: Sequence[SentenceModel]):
        self.members = list(models)
        self.backbones: list = [None] * len(self.members)

    def warm_up(self) -> None:
        """Load the sentence encoder now (the first text otherwise pays for it)."""
        from coldbrew.data.text.backbones import load_backbone

        for index, member in enumerate(self.members):
            if self.backbones[index] is None:
                self.backbones[index] = load_backbone(member.backbone, "cpu", progress=False)

    def encode(self, text: str) -> np.ndarray:
        """``(1, width)`` float32: ``text`` as the data's text block encodes an item's text."""
        from coldbrew.data.text.embedder import encode_texts

        self.warm_up()
        rows = [
            encode_texts(
                [text],
                **asdict(member),
                cache=None,
                progress=False,
                device="cpu",
                loaded=lambda loaded=loaded: loaded,
            )
            for member, loaded in zip(self.members, self.backbones, strict=True)
        ]
        return torch.cat(rows, dim=1).numpy()


def full_row(
    blocks: list[dict], text_block: str, encoded: np.ndarray, others: np.ndarray | None
) -> np.ndarray:
    """The ``(1, width)`` row of every block: ``encoded`` in the text block, the other blocks
    from ``others`` (their columns concatenated in order; None when there are none)."""
    expected = sum(block["width"] for block in other_blocks(blocks, text_block))
    given = 0 if others is None else others.shape[1]
    if given != expected:  # the callers check first, with their own words for the fix
        raise ColdbrewError(f"the blocks besides {text_block} have {expected} columns, not {given}")
    parts, used = [], 0
    for block in blocks:
        if block["name"] == text_block:
            parts.append(encoded)
        else:
            parts.append(others[:, used : used + block["width"]])
            used += block["width"]
    return np.concatenate(parts, axis=1).astype(np.float32)
