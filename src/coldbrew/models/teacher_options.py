"""The options of the collaborative backbone that a cold-start model learns from (torch-free).

A zoo model (DeepMusic, DropoutNet, Heater, GAR, ALDI, content KNN) declares its options as a
dataclass that inherits ``TeacherOptions``, so ``--backbone`` and friends appear in its help and
its run records them; ``coldbrew.training.backbone.collaborative_teacher`` reads only these
fields, and caches the trained backbone per dataset, seed and these values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from coldbrew.options import option


@dataclass
class TeacherOptions:
    # als: implicit's ALS, as accurate on warm interactions as coldbrew's BPR-MF on ml-1m-coldstart
    # for about a tenth of the CPU time (BENCHMARKS.md, "The zoo's collaborative backbone")
    backbone: str = option(
        "als",
        "collaborative backbone trained on warm interactions: als (implicit's ALS, the zoo "
        "extra) or bpr (coldbrew's BPR-MF model)",
        choices=("bpr", "als"),
    )
    backbone_dim: int = option(64, "the backbone's embedding size", minimum=1)
    backbone_epochs: int = option(
        30, "the backbone's training epochs (als: alternating sweeps)", minimum=1
    )
    backbone_reg: float = option(0.01, "the backbone's L2 regularisation", minimum=0)

    def teacher_key(self) -> dict:
        """The values that identify a trained backbone (its cache key, beside dataset and seed)."""
        return {f.name: getattr(self, f.name) for f in fields(TeacherOptions)}
