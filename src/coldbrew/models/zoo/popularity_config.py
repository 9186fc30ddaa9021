"""The content popularity baseline's options, torch-free so the CLI can list them without
importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.options import option


@dataclass
class PopularityOptions:
    """Content popularity (``coldbrew.models.zoo.popularity``): every user gets the same ranking,
    warm items by their training interactions, cold items by the popularity their content
    predicts; nothing to train by gradient. A baseline, and a blend's popularity term."""

    # λ 1 was set before any blend was measured; afterwards, in the champion's blend on
    # ml-1m-coldstart (mpnet@128 genre,text), no λ of 0.1, 0.3, 3 or 10 led it on the select half
    # under both conventions (BENCHMARKS.md, "Content popularity in the champion's blend")
    ridge_lambda: float = option(
        1.0, "λ: L2 penalty of the content → log(1 + interactions) map", above=0
    )

    def negative_sampling(self) -> tuple[int, bool]:
        """Content popularity trains nothing; the task still asks how a sample would be drawn."""
        return 1, False
