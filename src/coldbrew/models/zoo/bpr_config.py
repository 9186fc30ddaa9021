"""BPR-MF's options, torch-free so the CLI lists them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.options import option


@dataclass
class BPROptions:
    """Matrix factorisation trained with the BPR loss on sampled warm negatives. It reads no
    content: cold items score zero (a warm baseline, and the zoo's collaborative backbone)."""

    dim: int = option(64, "embedding size", minimum=1)
    reg: float = option(
        0.01, "L2 weight on the step's user, positive and negative rows (squared norms)", minimum=0
    )
    num_neg: int = option(1, "negatives per positive (classic BPR: 1)", minimum=1)

    def negative_sampling(self) -> tuple[int, bool]:
        """Negatives per positive the recommendation task draws, and whether they all differ."""
        return self.num_neg, False
