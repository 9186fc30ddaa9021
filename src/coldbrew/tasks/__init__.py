"""Tasks: what a problem owns (batches, evaluation, the monitored metric); see ``base.py``."""

from __future__ import annotations

from typing import Any


def build_task(name: str, dataset: Any, config: Any, device: Any) -> Any:
    """The task ``name`` (a model spec's ``task``) for ``dataset`` on ``device``."""
    if name == "recommendation":
        from coldbrew.tasks.recommendation import RecommendationTask

        return RecommendationTask.from_config(dataset, config, device)
    raise ValueError(f"unknown task {name!r}")  # pragma: no cover - registry entries are fixed
