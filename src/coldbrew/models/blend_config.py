"""A blend's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.options import option


@dataclass
class BlendOptions:
    """Runs whose per-user standardised scores are summed with ``weights`` (``coldbrew blend``
    chooses them on val cold Recall@20; ``coldbrew train --model blend`` takes them as given)."""

    runs: list[str] = option([], "the runs blended (single-seed run directories), in order")
    weights: list[float] = option([], "each run's weight, in the order of --runs", minimum=0)
    chosen_by: str | None = option(
        None,
        "the objective coldbrew blend chose the weights by on val: monitored (the "
        "cold-candidate convention's cold Recall@20) or joint (both conventions' geometric "
        "mean); unset: the weights were given",
        choices=("monitored", "joint"),
    )

    def negative_sampling(self) -> tuple[int, bool]:
        """A blend trains nothing; the task still asks how a sample would be drawn."""
        return 1, False
