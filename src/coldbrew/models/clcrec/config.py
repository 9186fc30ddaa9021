"""CLCRec's options, torch-free so the CLI can list them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.options import option


@dataclass
class CLCRecConfig:
    """CLCRec's options, by the original's names. ``reg_weight``, ``num_neg``, ``lr_lambda``,
    ``temp_value`` (and ``lr`` 0.0027, ``registry.MODELS["clcrec"].run_defaults``) are the best
    of a 20-trial search on ml-1m-coldstart, rounded (BENCHMARKS.md, "Three seeds, a 20-trial search"); the
    original's values (0.1, 128, 0.5, 2.0, lr 0.001) come back with ``--protocol original``."""

    dim: int = option(64, "embedding size", minimum=1)
    hidden: int = option(256, "width of the content encoder's hidden layer", minimum=1)
    reg_weight: float = option(
        0.03, "weight of the mean-L2-norm regulariser (original: 0.1)", minimum=0
    )
    num_neg: int = option(64, "negatives per positive (original: 128)", minimum=1)
    distinct_negatives: bool = option(
        False, "a positive's negatives all differ (the original's random.sample; slower)"
    )
    lr_lambda: float = option(
        0.7, "λ: item-content vs user-item InfoNCE (original: 0.5)", minimum=0, maximum=1
    )
    temp_value: float = option(0.6, "InfoNCE temperature (original: 2.0)", above=0)
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
    # 255: on ml-1m-coldstart cold Recall@20 stays within the seed spread of the full term's
    # (3 seeds), at 0.82–1.05 of the throughput without the term against 0.55–0.81 (BENCHMARKS.md)
    neighbor_negatives: int = option(
        255,
        "the neighbor term's negatives per user, K others of the step at random; 0: all",
        minimum=0,
    )

    def negative_sampling(self) -> tuple[int, bool]:
        """Negatives per positive the recommendation task draws, and whether they all differ."""
        return self.num_neg, self.distinct_negatives
