"""GAR's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TeacherOptions
from coldbrew.options import option


@dataclass
class GAROptions(TeacherOptions):
    """GAR (Chen et al., SIGIR 2022): a content generator against a recommender that ranks the
    backbone's warm item vectors over generated ones (``coldbrew.models.zoo.gar``)."""

    hidden: int = option(256, "width of the generator's hidden layer", minimum=1)
    tower_dim: int = option(200, "width of the recommender's user and item towers", minimum=1)
    rank_weight: float = option(
        0.9,
        "α: the recommender ranks the positive over a negative (α) and over its generated "
        "vector (1 - α)",
        minimum=0,
        maximum=1,
    )
    similarity_weight: float = option(
        0.5,
        "λ: the generator's L1 distance to the backbone vector (λ) against its adversarial "
        "term (1 - λ)",
        minimum=0,
        maximum=1,
    )
    reg_weight: float = option(
        0.01, "L2 penalty on the towers' user and item outputs (keeps scores bounded)", minimum=0
    )
    num_neg: int = option(8, "negatives per positive", minimum=1)
