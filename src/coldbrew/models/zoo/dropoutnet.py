"""DropoutNet (Volkovs, Yu and Poutanen, "DropoutNet: Addressing Cold Start in Recommender
Systems", NeurIPS 2017): towers over [preference, content] taught to reproduce a collaborative
model's scores, the preference input dropped out so that content alone must carry cold items.

* The preference inputs are the collaborative backbone's embeddings (trained on warm
  interactions, ``coldbrew.training.backbone``): user ``U_u``, item ``V_i`` (zero for cold
  items, which have none).
* Item tower: ``[V_i · keep_i, content_i]`` → ``Linear(hidden)`` → tanh → ``Linear(dim)``, the
  content branch a ``coldbrew.models.content.ContentEncoder`` (blocks row-normalised,
  ``Linear(hidden)`` → LeakyReLU → ``Linear(hidden)``, shared with CLCRec's design). User tower:
  ``U_u`` → ``Linear(hidden)`` → tanh → ``Linear(dim)`` (users here have no content, and every
  user is warm, so the paper's user dropout is left out).
* Input dropout: each distinct item of a step has its preference input zeroed with
  probability ``dropout`` (the paper's 0.5); the paper draws per training pair, here an item's
  draw holds for its pairs of the step (one tower call per distinct item). Cold items are
  always zeroed, in training and scoring alike, as the paper infers them; so are new items
  (``coldbrew recommend --item-vector``).
* Loss: mean over the step's sampled pairs (each user's positive and its negatives) of
  ``(f_U(u) · f_V(i) − U_u · V_i)²``, the paper's objective. The paper's batch norm is left
  out (it makes a step depend on its batch's statistics); its deeper towers ([800, 400] in the
  public code) are one hidden layer here, ``hidden`` wide.
"""

from __future__ import annotations

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Batch, Catalogue, LossOutput, Teacher
from coldbrew.models.zoo.dropoutnet_config import DropoutNetOptions
from coldbrew.models.zoo.teacher import TowerStudent


class DropoutNet(TowerStudent):
    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: DropoutNetOptions):
        super().__init__(catalogue, teacher, options)
        self.dropout = options.dropout
        # the item tower reads [preference, content]
        self.add_towers(options.backbone_dim + options.hidden, options.hidden, options.dim)

    def item_vectors(self, preference: torch.Tensor, content: torch.Tensor) -> torch.Tensor:
        """Item tower outputs ``(n, dim)`` of preference inputs ``(n, d)`` (zero rows: dropped
        or cold) and content ``(n, hidden)``."""
        return self.item_tower(torch.cat([preference, content], dim=1))

    def forward(self, batch: Batch) -> LossOutput:
        users, items = batch.users, batch.items  # (B,), (B, 1 + K)
        distinct, inverse = self.step_items(items)
        keep = ~self.content_only(distinct, self.dropout)  # (n, 1)
        preference = self.teacher_items[distinct] * keep.float()
        item_vectors = self.item_vectors(preference, self.content(distinct))
        regression = self.score_regression(users, items, item_vectors, inverse)
        return LossOutput(total=regression, terms={"regression": regression})

    def item_embeddings(self) -> torch.Tensor:
        """Warm items from preference and content, cold items from content alone."""
        warm = (~self.cold_mask[:, None]).float()
        return self.item_vectors(self.teacher_items * warm, self.content())

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        """New items as cold ones: from content alone."""
        content = self.content.encode_raw(features)  # (n, hidden)
        no_preference = content.new_zeros(len(content), self.teacher_items.shape[1])
        return self.item_vectors(no_preference, content)


def build(dataset: Dataset, config, teacher: Teacher | None) -> DropoutNet:
    """The registry's builder: DropoutNet with ``config.model_options`` (``DropoutNetOptions``)."""
    return DropoutNet.from_run(dataset, config, teacher)
