"""Model registry: name -> builder taking (dataset, config)."""

from __future__ import annotations

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch, ForecastBatch, LossOutput, Recommender


def build_model(name: str, dataset, config) -> Recommender:
    if name == "clcrec":
        from coldbrew.models.clcrec import CLCRec
        from coldbrew.models.neighbors import NeighborGraph

        neighbors = None
        if config.neighbor_loss:
            neighbors = NeighborGraph.from_interactions(dataset.train, progress=not config.quiet)
        return CLCRec.from_dataset(
            dataset,
            dim=config.dim,
            hidden=config.hidden,
            reg_weight=config.reg_weight,
            lr_lambda=config.lr_lambda,
            temp_value=config.temp_value,
            num_sample=config.num_sample,
            mix_mode=config.mix_mode,
            neighbors=neighbors,
            neighbor_weight=config.neighbor_weight,
        )
    raise ColdbrewError(f"unknown model {name!r}; available: clcrec")


__all__ = ["Batch", "ForecastBatch", "LossOutput", "Recommender", "build_model"]
