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
    # als, 15 sweeps: as accurate on ml-1m-coldstart's held-out warm interactions as coldbrew's
    # BPR-MF at 30 epochs (Recall@20 0.291 vs 0.293, 3 seeds each) for a twelfth of its CPU
    # seconds; 30 sweeps add nothing (0.292). BENCHMARKS.md, "The zoo's collaborative backbone"
    backbone: str = option(
        "als",
        "collaborative backbone trained on warm interactions: als (implicit's ALS, the zoo "
        "extra) or bpr (coldbrew's BPR-MF model)",
        choices=("bpr", "als"),
    )
    backbone_dim: int = option(64, "the backbone's embedding size", minimum=1)
    backbone_epochs: int = option(
        15,
        "the backbone's training epochs (als: alternating sweeps; bpr ranks a little better at 30)",
        minimum=1,
    )
    backbone_reg: float = option(
        0.01,
        "the backbone's L2 regularisation (als: a constant on every vector, not scaled by its "
        "count of interactions, so a larger backbone_alpha weakens it relatively)",
        minimum=0,
    )
    backbone_alpha: float = option(
        1.0,
        "als: the weight of an observed interaction against an unobserved one (weight 1); 1 "
        "weighs both the same, larger trusts the observed more (bpr ignores it)",
        above=0,
    )

    def negative_sampling(self) -> tuple[int, bool]:
        """Negatives per positive the recommendation task draws, and whether they all differ:
        the model's ``num_neg``; 1 for a model without one (it trains nothing, but the task
        still asks how a sample would be drawn)."""
        return getattr(self, "num_neg", 1), False

    def teacher_key(self) -> dict:
        """The values that identify a trained backbone (its cache key, beside dataset and seed)."""
        return {f.name: getattr(self, f.name) for f in fields(TeacherOptions)}


@dataclass
class TowerOptions(TeacherOptions):
    """The towers of DropoutNet and Heater (``coldbrew.models.zoo.teacher.TowerStudent``)."""

    dim: int = option(64, "size of the towers' output embeddings", minimum=1)
    hidden: int = option(256, "width of the towers' and the content encoder's layers", minimum=1)
