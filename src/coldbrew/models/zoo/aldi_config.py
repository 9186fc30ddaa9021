"""ALDI's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TeacherOptions
from coldbrew.options import option


@dataclass
class ALDIOptions(TeacherOptions):
    """ALDI (Huang et al., SIGIR 2023): a content student distilled from the warm backbone
    (``coldbrew.models.zoo.aldi``)."""

    hidden: int = option(256, "width of the student's hidden layers", minimum=1)
    rating_weight: float = option(
        0.1, "γ: rating distribution alignment (|teacher - student| scores)", minimum=0
    )
    ranking_weight: float = option(
        1.0, "α: ranking alignment (the student's pairwise margins match the teacher's)", minimum=0
    )
    identity_weight: float = option(
        1.0, "β: identification alignment (how an item stands out from others)", minimum=0
    )
    item_weighting: bool = option(
        True, "weight the ranking and identification terms by the teacher's item reliability"
    )
    weight_slope: float = option(
        0.01, "a in tanh(min(a x interactions, M)): how fast an item's weight grows", above=0
    )
    weight_cap: float = option(3.0, "M in tanh(min(a x interactions, M))", above=0)
    num_neg: int = option(8, "negatives per positive", minimum=1)
