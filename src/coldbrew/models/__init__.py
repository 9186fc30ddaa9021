"""Model registry: name -> builder taking (dataset, config)."""

from __future__ import annotations

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch, LossOutput, Recommender


def build_model(name: str, dataset, config) -> Recommender:
    if name == "clcrec":
        from coldbrew.models.clcrec import CLCRec

        return CLCRec.from_dataset(
            dataset,
            dim=config.dim,
            hidden=config.hidden,
            reg_weight=config.reg_weight,
            lr_lambda=config.lr_lambda,
            temp_value=config.temp_value,
            num_sample=config.num_sample,
            mix_mode=config.mix_mode,
        )
    raise ColdbrewError(f"unknown model {name!r}; available: clcrec")


__all__ = ["Batch", "LossOutput", "Recommender", "build_model"]
