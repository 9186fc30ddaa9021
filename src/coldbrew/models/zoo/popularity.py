"""Content popularity: the one ranking every user gets, warm items by how often they were
interacted with in training, cold items by the popularity their content predicts.

Warm item ``i`` scores ``log(1 + n_i)``, ``n_i`` its training interactions. A cold item has no
interactions, so its score is read from its content ``x`` (every dense feature block
row-normalised and joined, as ridge reads it): ``x w + b``, where ``(w, b)`` is ridge's closed
form (``coldbrew.models.zoo.ridge.fit_map``) over the warm items,

    min ‖X_w w + b − log(1 + n_w)‖² + λ‖w‖²   (``objective``, the intercept unpenalised).

Users all have the vector ``(1)``, so a score is the item's and the model is one more
``Recommender`` (the evaluator, ``recommend`` and a blend see nothing new). Alone it is the
"most popular" baseline of the cold-start literature with popularity predicted from content (a
personalised model should beat it). In a blend (``coldbrew blend``) it is a popularity term:
per-user standardised, its weight chosen on the select half like any run's. Ranking among the
cold items, which of them many users will take is much of what a model is scored on
(BENCHMARKS.md, "Content popularity in the champion's blend").

The fitted ``(w, b)`` are persistent buffers (a checkpoint holds them); the counts and the
content are data.
"""

from __future__ import annotations

import numpy as np
import torch

from coldbrew.data.dataset import Dataset, WordIds
from coldbrew.models.base import NothingToTrain, Recommender
from coldbrew.models.content import content_matrix, new_item_features, normalized_raw_blocks
from coldbrew.models.zoo.ridge import fit_map
from coldbrew.models.zoo.ridge import objective as ridge_objective


def objective(
    content: torch.Tensor,
    counts: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor | float,
    lam: float,
) -> torch.Tensor:
    """``‖content·weights + bias − log(1 + counts)‖² + λ‖weights‖²``: content ``(n, F)``,
    counts ``(n,)``, weights ``(F,)``, bias a scalar or ``(1,)``; ridge's objective with the
    log counts as its one target column."""
    targets = torch.log1p(counts)[:, None]
    return ridge_objective(content, targets, weights[:, None], torch.as_tensor(bias), lam)


class ContentPopularity(NothingToTrain, Recommender):
    label = "popularity"

    def __init__(
        self,
        features: dict[str, torch.Tensor | WordIds],
        counts: torch.Tensor,
        cold_items: torch.Tensor,
        num_users: int,
        *,
        ridge_lambda: float = 1.0,
    ):
        super().__init__()
        self.num_users = num_users
        num_items = len(counts)
        content, self.block_widths = content_matrix(features, "popularity predicts from")
        self.register_cold_mask(num_items, cold_items)
        # data, not model state (see coldbrew.models.base)
        self.register_buffer("observed", torch.log1p(counts.float()), persistent=False)
        self.register_buffer("content", content, persistent=False)
        warm = ~self.cold_mask
        weights, bias = fit_map(content[warm], self.observed[warm, None], ridge_lambda)
        self.register_buffer("weights", weights[:, 0].contiguous())  # (F,)
        self.register_buffer("bias", bias)  # (1,)

    def predicted(self, content: torch.Tensor) -> torch.Tensor:
        """``(n,)`` predicted ``log(1 + interactions)`` of items with row-normalised content."""
        return content @ self.weights + self.bias

    def user_embeddings(self) -> torch.Tensor:
        return torch.ones(self.num_users, 1, device=self.weights.device)

    @torch.no_grad()
    def item_embeddings(self) -> torch.Tensor:
        """``(items, 1)``: warm items their observed score, cold items the predicted one."""
        scores = torch.where(self.cold_mask, self.predicted(self.content), self.observed)
        return scores[:, None]

    @torch.no_grad()
    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """New items from their raw feature vector, scored as a cold item with that content."""
        features = new_item_features(type(self).__name__, texts, features)
        content = normalized_raw_blocks(features.to(self.weights.device), self.block_widths)
        return self.predicted(content)[:, None]


def build(dataset: Dataset, config) -> ContentPopularity:
    """The registry's builder: content popularity with ``config.model_options``
    (``PopularityOptions``), fitted on ``dataset``'s training interactions."""
    counts = torch.from_numpy(np.asarray(dataset.train.sum(0), dtype=np.float64).ravel())
    return ContentPopularity(
        dataset.features,
        counts,
        torch.from_numpy(dataset.cold_items),
        dataset.num_users,
        ridge_lambda=config.model_options.ridge_lambda,
    )
