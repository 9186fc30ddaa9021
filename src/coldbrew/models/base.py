"""The contract every coldbrew model keeps; the trainer and evaluator know only this.

* Every model is an ``nn.Module`` whose ``forward(batch) -> LossOutput`` *is* the training loss,
  so wrappers that hook ``__call__`` (DistributedDataParallel, ``torch.compile``) see the step.
* A recommender adds ``user_embeddings()``, ``item_embeddings()`` (cold items scored from their
  content) and ``score_users(users) -> (B, num_items)`` for full ranking.
* Data is not model state: what a model reads from a dataset (content features, word tables,
  the cold mask) lives in non-persistent buffers, so a checkpoint holds only what was learned
  and loads against another dataset of the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from coldbrew.data.dataset import WordIds
from coldbrew.errors import ColdbrewError


@dataclass
class Batch:
    """One recommendation step's samples: ``users[b]`` with ``items[b, 0]`` positive, the rest
    negatives."""

    users: torch.Tensor  # (B,) int64
    items: torch.Tensor  # (B, 1 + K) int64

    def __len__(self) -> int:
        return self.users.shape[0]


@dataclass
class ForecastBatch:
    """One forecasting step's windows: scaled inputs and the targets that follow them."""

    inputs: torch.Tensor  # (B, window) or (B, window, features) float
    targets: torch.Tensor  # (B, horizon) float

    def __len__(self) -> int:
        return self.inputs.shape[0]


@dataclass
class Teacher:
    """A collaborative backbone's embeddings that a cold-start model regresses, distils or
    borrows from (DeepMusic, DropoutNet, Heater, GAR, ALDI, content KNN): trained on the warm
    interactions only, so cold items' rows are zero."""

    users: torch.Tensor  # (num_users, dim) float32
    items: torch.Tensor  # (num_items, dim) float32, zero rows for cold items
    seconds: float = 0.0  # what training it took (kept with a cached backbone)


@dataclass
class Catalogue:
    """What a content model reads first from its dataset: its sizes, the item feature blocks
    and the cold items (``Catalogue.of(dataset)``)."""

    num_users: int
    num_items: int
    features: dict[str, torch.Tensor | WordIds]
    cold_items: torch.Tensor  # (num_cold,) int64

    @classmethod
    def of(cls, dataset) -> Catalogue:
        return cls(
            dataset.num_users,
            dataset.num_items,
            dataset.features,
            torch.from_numpy(dataset.cold_items),
        )


@dataclass
class LossOutput:
    """The total loss to minimise and its named terms (device tensors, never read in the step)."""

    total: torch.Tensor
    terms: dict[str, torch.Tensor]


class Recommender(nn.Module):
    """Base class: ``forward(batch)``, ``user_embeddings()``, ``item_embeddings()``, ``score_users``.

    ``item_embeddings`` must score cold items from their content (that is the point of a
    cold-start model); ``score_users`` defaults to the inner product of the two.
    """

    # True: take the step a GPU runs (fixed sizes, no host reads) on any device; tests and
    # ``coldbrew memory`` set it on a CPU (see ``coldbrew.models.content.host_syncs_are_free``)
    fixed_shapes: bool = False

    def forward(self, batch: Batch) -> LossOutput:  # pragma: no cover - abstract
        raise NotImplementedError

    def user_embeddings(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def item_embeddings(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def register_cold_mask(self, num_items: int, cold_items: torch.Tensor) -> None:
        """The buffer ``cold_mask`` ``(num_items,)`` bool, True at ``cold_items``: data, not
        model state, so it is not saved (``evaluate --data`` reads its own dataset's)."""
        cold_mask = torch.zeros(num_items, dtype=torch.bool)
        cold_mask[cold_items.long()] = True
        self.register_buffer("cold_mask", cold_mask, persistent=False)

    @torch.no_grad()
    def score_users(self, users: torch.Tensor) -> torch.Tensor:
        """Scores ``(len(users), num_items)`` for ranking."""
        return self.user_embeddings()[users] @ self.item_embeddings().T

    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Vectors ``(n, dim)`` of new items (not in the catalogue) from their content, in the
        space of ``user_embeddings``: what ``coldbrew recommend --item-text`` ranks users by."""
        raise ColdbrewError(
            f"{type(self).__name__} cannot score a new item from its content yet; models that "
            "can: clcrec, knn, ridge, marec, aldi, gar, deepmusic, dropoutnet, heater "
            "(--item-vector) and lm (--item-text)"
        )


class NothingToTrain:
    """Mixin, first among the bases, of the models solved in closed form or by lookup
    (``ModelSpec.trains`` False: a run evaluates them once): ``forward`` refuses in one line."""

    label = "this model"  # how the refusal names the model

    def forward(self, batch):
        raise ColdbrewError(f"{self.label} has nothing to train (ModelSpec.trains is False)")
