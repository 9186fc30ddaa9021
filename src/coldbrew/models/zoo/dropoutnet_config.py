"""DropoutNet's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TowerOptions
from coldbrew.options import option


@dataclass
class DropoutNetOptions(TowerOptions):
    """User and item towers trained to reproduce the backbone's scores, the item's preference
    input dropped out (``--backbone`` and friends choose the backbone)."""

    dropout: float = option(
        0.5, "probability that an item's preference input is zeroed in a step", minimum=0, maximum=1
    )
    num_neg: int = option(4, "negatives per positive: sampled pairs per user", minimum=1)
