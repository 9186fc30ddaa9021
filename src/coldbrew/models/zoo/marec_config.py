"""MARec's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.options import option


@dataclass
class MARecOptions:
    """MARec (Monteil et al. 2024) with an EASE backbone, in closed form
    (``coldbrew.models.zoo.marec``): warm items' columns are EASE's, cold items' come from their
    content similarity to warm items, aligned with the click data. Nothing to train by
    gradient."""

    # ml-1m-coldstart, MiniLM genre,text, seed 1, val cold Recall@20 all-cold / own-split:
    # λ 30/100/300 with k=100: 0.0816/0.2256, 0.0822/0.2272, 0.0827/0.2289; k=0 (all): 0.064/0.16
    # (BENCHMARKS.md, "Closed-form baselines"); chosen on val only
    ease_lambda: float = option(
        300.0, "λ: EASE's L2 penalty on the item-item weights (warm and cold columns)", above=0
    )
    alignment: float = option(
        1.0,
        "β: weight of the alignment term (a cold column's scores XB follow the content "
        "scores XG); sets the cold items' scale against the warm ones",
        above=0,
    )
    neighbors: int = option(
        100,
        "a cold item's content similarity kept to its k most similar warm items (0: all)",
        minimum=0,
    )
    negative_weight: float = option(
        0.2,
        "weight of the non-interactions when each feature block's similarity weight μ is "
        "fitted (MARec's weighted regression; the interactions weigh 1)",
        above=0,
    )

    similarity_temperature: float = option(
        0.0,
        "τ: 0 keeps G's columns linear in the cosines (MARec's); above 0, each cold item's "
        "column is softmax(cosine / τ) over its k nearest warm items (sums to 1)",
        minimum=0,
    )

    def negative_sampling(self) -> tuple[int, bool]:
        """MARec trains nothing; the task still asks how a sample would be drawn."""
        return 1, False
