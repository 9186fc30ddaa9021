"""CLCRec's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.options import option


@dataclass
class CLCRecConfig:
    """CLCRec's options (the original's names and its MovieLens defaults)."""

    dim: int = option(64, "embedding size", minimum=1)
    hidden: int = option(256, "width of the content encoder's hidden layer", minimum=1)
    reg_weight: float = option(0.1, "weight of the mean-L2-norm regulariser", minimum=0)
    num_neg: int = option(128, "negatives per positive", minimum=1)
    distinct_negatives: bool = option(
        False, "a positive's negatives all differ (the original's random.sample; slower)"
    )
    lr_lambda: float = option(0.5, "λ: item-content vs user-item InfoNCE", minimum=0, maximum=1)
    temp_value: float = option(2.0, "InfoNCE temperature", above=0)
    num_sample: float = option(
        0.5, "fraction of item rows replaced by content in the user-item term", minimum=0, maximum=1
    )
    mix_mode: str = option(
        "original",
        "original: num_sample x rows draws with replacement; bernoulli: each row with p=num_sample",
        choices=("original", "bernoulli"),
    )
    neighbor_loss: bool = option(False, "add the neighbor-graph term")
    neighbor_weight: float = option(0.1, "weight of the neighbor-graph term", minimum=0)
    neighbor_temp: float = option(2.0, "the neighbor-graph term's InfoNCE temperature", above=0)

    def resolved_num_neg(self) -> int:
        """Negatives per positive the recommendation task draws."""
        return self.num_neg
