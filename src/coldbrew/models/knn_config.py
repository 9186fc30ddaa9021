"""Content KNN's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.models.teacher_options import TeacherOptions
from coldbrew.options import option


@dataclass
class KNNOptions(TeacherOptions):
    """Content KNN: a cold item borrows the backbone vectors of its most content-similar warm
    items (``coldbrew.models.content_knn``); nothing to train."""

    neighbors: int = option(20, "k: warm items each cold item borrows from", minimum=1)
    temperature: float = option(
        0.05, "softmax temperature over the k cosine similarities (small: the nearest)", above=0
    )

    def negative_sampling(self) -> tuple[int, bool]:
        """KNN trains nothing; the task still asks how a sample would be drawn."""
        return 1, False
