"""Ridge: the collaborative backbone's item vectors regressed on item content in closed form;
cold items take the mapped vector of their content, users and warm items keep the backbone's.

Content ``X`` is every dense feature block row-normalised (``dense_blocks``) and concatenated,
as content KNN reads it. Over the warm items ``w`` (the backbone's rows ``V``), with an
unpenalised intercept ``b``, the map minimises

    ‖X_w W + 1 bᵀ − V_w‖² + λ ‖W‖²   (``objective``)

whose minimiser is ``W = (X̃ᵀX̃ + λI)⁻¹ X̃ᵀṼ`` on the column-centred ``X̃ = X_w − x̄``,
``Ṽ = V_w − v̄``, and ``b = v̄ − x̄ W`` (``fit_map``). A cold item's vector is ``x W + b``; with
``map_warm`` warm items take theirs too. The classic linear content → factor map of the
cold-start literature (the linear case of DeepMusic's regression, van den Oord et al. 2013;
Gantner et al. 2010's attribute-to-factor mapping); nothing is trained by gradient
(``ModelSpec.trains`` is False), so a run evaluates it once.

The backbone's vectors are persistent buffers (a checkpoint restores them); the content is data,
and the map is solved from both whenever ``item_embeddings`` is called (an ``F × F`` system,
milliseconds for a few hundred content dimensions).
"""

from __future__ import annotations

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Catalogue, Teacher
from coldbrew.models.content import normalized_raw_blocks
from coldbrew.models.zoo.ridge_config import RidgeOptions
from coldbrew.models.zoo.teacher import ContentMapper


def objective(
    content: torch.Tensor,
    targets: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    lam: float,
) -> torch.Tensor:
    """``‖content·weights + bias − targets‖² + λ‖weights‖²``: content ``(n, F)``, targets
    ``(n, D)``, weights ``(F, D)``, bias ``(D,)``."""
    residual = content @ weights + bias - targets
    return residual.square().sum() + lam * weights.square().sum()


def fit_map(
    content: torch.Tensor, targets: torch.Tensor, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The minimiser ``(weights (F, D), bias (D,))`` of ``objective``, solved in float64."""
    if content.shape[0] == 0:
        raise ColdbrewError(
            "ridge maps content to the warm items' vectors; there are no warm items"
        )
    x, v = content.double(), targets.double()
    x_mean, v_mean = x.mean(0), v.mean(0)
    centred_x, centred_v = x - x_mean, v - v_mean
    gram = centred_x.T @ centred_x  # (F, F)
    gram.diagonal().add_(lam)
    weights = torch.linalg.solve(gram, centred_x.T @ centred_v)  # (F, D)
    bias = v_mean - x_mean @ weights
    return weights.to(targets.dtype), bias.to(targets.dtype)


class Ridge(ContentMapper):
    label, reads = "ridge", "maps"

    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: RidgeOptions):
        super().__init__(catalogue, teacher, options)
        self.ridge_lambda, self.map_warm = options.ridge_lambda, options.map_warm

    def fitted_map(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(W, b)`` fitted on the warm items' content and backbone vectors."""
        warm = ~self.cold_mask
        return fit_map(self.content[warm], self.teacher_items[warm], self.ridge_lambda)

    @torch.no_grad()
    def item_embeddings(self) -> torch.Tensor:
        """Warm items: the backbone's vectors (or mapped, ``map_warm``); cold items: mapped."""
        weights, bias = self.fitted_map()
        mapped = self.content @ weights + bias
        if self.map_warm:
            return mapped
        return torch.where(self.cold_mask[:, None], mapped, self.teacher_items)

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        weights, bias = self.fitted_map()
        return normalized_raw_blocks(features, self.block_widths) @ weights + bias


def build(dataset: Dataset, config, teacher: Teacher | None) -> Ridge:
    """The registry's builder: ridge with ``config.model_options`` (``RidgeOptions``) over the
    collaborative backbone ``teacher`` (None: a saved run rebuilt; its checkpoint fills it)."""
    return Ridge.from_run(dataset, config, teacher)
