"""Content KNN's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TeacherOptions
from coldbrew.options import option


@dataclass
class KNNOptions(TeacherOptions):
    """Content KNN: a cold item borrows the backbone vectors of its most content-similar warm
    items, or (``residual`` > 0) their residuals around ridge's content map
    (``coldbrew.models.zoo.content_knn``); nothing to train."""

    # ml-1m-coldstart val cold Recall@20 (als backbone, seed 1): k=10/τ=0.02 0.081, 20/0.05 0.101,
    # 50/0.1 0.098, 100/0.03 0.093, 100/0.05 0.1035, 300/0.05 0.104: 100 at 0.05, the cheaper
    neighbors: int = option(100, "k: warm items each cold item borrows from", minimum=1)
    temperature: float = option(
        0.05, "softmax temperature over the k cosine similarities (small: the nearest)", above=0
    )
    residual: float = option(
        0.0,
        "ρ: 0 borrows the neighbours' backbone vectors (the classic KNN); above 0, a cold item "
        "takes ridge's map of its content plus ρ × its neighbours' residuals around that map",
        minimum=0,
    )
    ridge_lambda: float = option(
        1.0,
        "λ: L2 penalty of the content → item-vector map (ridge, and knn with residual > 0)",
        above=0,
    )
