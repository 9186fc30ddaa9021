"""Heater's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TowerOptions
from coldbrew.options import option


@dataclass
class HeaterOptions(TowerOptions):
    """Randomized training, a mixture-of-experts content transformation and a similarity
    constraint, distilling the backbone (``--backbone`` and friends choose it)."""

    experts: int = option(5, "experts of the content transformation", minimum=1)
    randomize: float = option(
        0.5,
        "probability that a warm item's backbone embedding is swapped for its content one",
        minimum=0,
        maximum=1,
    )
    similarity_weight: float = option(
        0.1, "weight of the content-to-backbone similarity constraint", minimum=0
    )
    num_neg: int = option(4, "negatives per positive: sampled pairs per user", minimum=1)
