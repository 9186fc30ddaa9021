"""The ridge baseline's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.zoo.teacher_options import TeacherOptions
from coldbrew.options import option


@dataclass
class RidgeOptions(TeacherOptions):
    """Ridge: a closed-form linear map from item content to the backbone's item vectors
    (``coldbrew.models.zoo.ridge``); nothing to train by gradient."""

    # ml-1m-coldstart, MiniLM genre,text, als backbone, seed 1, val cold Recall@20 all-cold /
    # own-split by λ: 0.3 0.1023/0.2727, 1 0.1035/0.2762, 3 0.1031/0.2755, 10 0.1003/0.2728,
    # 30 0.0976/0.2622, 100 0.0932/0.2476 (BENCHMARKS.md, "Closed-form baselines"); val only
    ridge_lambda: float = option(
        1.0,
        "λ: L2 penalty of the content → item-vector map (ridge, and knn with residual > 0)",
        above=0,
    )
    map_warm: bool = option(
        False, "warm items take the mapped vector too (default: their backbone vectors)"
    )
