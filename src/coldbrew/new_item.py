"""A new item's feature row when its text fills the data's ``text`` block: the text encoded by
the run's own sentence encoder, the other dense blocks given, joined in the data's block order.

CLCRec and the zoo read the data's dense feature blocks; when one of them is a ``text`` block
made from the items' texts by a sentence encoder, a new item may be described by its text and
the other blocks. ``coldbrew recommend --item-text`` (``coldbrew.recommend``) and
``coldbrew serve``'s ``POST /items/score`` (``coldbrew.serving.new_items``) both build the row
here, so both score the same text the same way. Blocks are described as the export's recipe
describes them: ``{"name", "width", "columns"?}``, in order.

Both rank a new item's users by its lift (``UserBaseline``), not by its raw score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from coldbrew.data.text.sentence_folders import SentenceModel
from coldbrew.errors import ColdbrewError

ZERO_FEATURES = "the item's features are all zero: its users are ranked from no content at all"
NAMED_COLUMNS_SHOWN = 24  # a block's column names listed in a message, at most
BASELINE_CHUNK = 1 << 16  # catalogue items read at a time for the users' baselines


@dataclass(frozen=True)
class UserBaseline:
    """Each user's mean and standard deviation of scores over the catalogue's items: what a
    new item's users are ranked against.

    A new item's users are ranked by its *lift* for each user, ``(score - mean) / std``: how
    far the item stands above what that user scores a typical item, in that user's own units.
    A raw score puts the users with the longest vectors (often the most active) on top of
    every new item's list; the lift does not depend on a user's scale. Both statistics come
    from the item vectors' mean ``m`` and covariance ``C`` (``mean = u.m``, ``std =
    sqrt(u^T C u)``): no score matrix is made. A user whose scores do not vary (a zero
    vector) gets lift 0."""

    mean: torch.Tensor  # (U,) float32
    std: torch.Tensor  # (U,) float32

    @classmethod
    def of(cls, users: torch.Tensor, items: torch.Tensor) -> UserBaseline:
        """The baselines of ``users`` (U, D) over ``items`` (I, D), summed in float64 over
        chunks of items (two passes: the mean, then the centred covariance)."""
        users = users.detach().double()
        chunks = [chunk.detach() for chunk in items.split(BASELINE_CHUNK)]
        count, width = max(len(items), 1), users.shape[1]
        centre = torch.zeros(width, dtype=torch.float64, device=users.device)
        for chunk in chunks:
            centre += chunk.to(users.device, torch.float64).sum(0)
        centre /= count
        covariance = torch.zeros(width, width, dtype=torch.float64, device=users.device)
        for chunk in chunks:
            centred = chunk.to(users.device, torch.float64) - centre
            covariance += centred.T @ centred
        variance = ((users @ (covariance / count)) * users).sum(1).clamp_min(0)
        return cls((users @ centre).float(), variance.sqrt().float())

    def lift(self, scores: torch.Tensor) -> torch.Tensor:
        """``(U,)``: each user's ``(score - mean) / std`` of a new item's ``scores`` (U,)."""
        spread = self.std.to(scores.device)
        lifted = (scores.float() - self.mean.to(scores.device)) / spread.clamp_min(1e-30)
        return torch.where(spread > 0, lifted, torch.zeros_like(lifted))


def same_for_every_user(values: torch.Tensor) -> bool:
    """Whether a new item's scores or lifts (U,) are one value for every user (two users at
    least): its list of users is then only their tie order."""
    if len(values) < 2:
        return False
    low, high = float(values.min()), float(values.max())
    return high - low <= 1e-6 * max(1.0, abs(low), abs(high))


def flat_list(scores: torch.Tensor, lift: torch.Tensor) -> str | None:
    """The warning for a new item whose users are only listed in tie order: one score for
    every user, or a lift of 0 for every one (it scores as each user's typical item)."""
    if same_for_every_user(scores):
        return (
            f"the item scores {float(scores[0]):.4f} for every user, so its users are listed "
            "in tie order: describe the item by more of its content"
        )
    if same_for_every_user(lift):
        return (
            "the item stands out for no user (it scores as each user's typical item), so its "
            "users are listed in tie order: describe the item by more of its content"
        )
    return None


def one_list_for_all(model: str) -> str:
    """Why a model that is not personalised (``ModelSpec.personalised``) lists no users for
    a new item."""
    return (
        f"{model} is not personalised: it gives a new item one score for every user, so a "
        "list of the item's users would only be their tie order; list a user's items (--user), "
        "or train a personalised model (clcrec, aldi, ...) to find a new item's users"
    )


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
        count = f"{block['width']} column{'' if block['width'] == 1 else 's'}"
        parts.append(f"{block['name']} ({count}{': ' + shown if names else ''})")
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
