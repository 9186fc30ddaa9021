"""DeepMusic's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TeacherOptions
from coldbrew.options import option


@dataclass
class DeepMusicOptions(TeacherOptions):
    """An MLP from item content to the backbone's item embedding (``--backbone`` and friends
    choose the backbone)."""

    hidden: int = option(256, "width of the content MLP's hidden layer", minimum=1)
    num_neg: int = option(
        1, "negatives per positive: the batch's items the MLP regresses", minimum=1
    )
