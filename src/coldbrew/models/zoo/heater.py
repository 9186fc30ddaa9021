"""Heater (Zhu, Lin, He, Wang, Caverlee and Jiang, "Recommendation for New Users and New Items
via Randomized Training and Mixture-of-Experts Transformation", SIGIR 2020): distil a
collaborative backbone through a content transformation that warm items are trained to share.

* Backbone: user ``U_u`` and item ``V_i`` embeddings trained on warm interactions
  (``coldbrew.training.backbone``; zero for cold items).
* Mixture-of-experts transformation of content: a ``coldbrew.models.content.ContentEncoder``
  trunk (blocks row-normalised, ``Linear(hidden)`` → LeakyReLU → ``Linear(hidden)``), tanh,
  then ``experts`` linear experts to the backbone's width, mixed by a softmax gate over the
  same trunk: ``C_i = Σ_k softmax(g(x_i))_k · E_k(x_i)``. The public code gates with tanh and
  puts a tanh after the mixture; this follows the paper's softmax mixture and leaves the
  output unbounded, since the similarity constraint pulls it towards the backbone's unbounded
  embeddings. The experts share the trunk (one encoder call) rather than each reading the raw
  content.
* Randomized training: each distinct warm item of a step enters the item tower as ``C_i``
  instead of ``V_i`` with probability ``randomize``; cold items always do (training and
  scoring), as new items do (``coldbrew recommend --item-vector``); warm items are scored from
  ``V_i``.
* Towers (the paper's final transformation): item ``Linear(hidden)`` → tanh → ``Linear(dim)``
  over ``V_i`` or ``C_i``, user the same over ``U_u``. The public code's batch norm is left
  out.
* Loss: mean over the step's sampled pairs of ``(f_U(u) · f_V(i) − U_u · V_i)²`` (the
  backbone's scores, as in the paper) plus ``similarity_weight`` × the similarity constraint,
  mean over the step's item occurrences of ‖C_i − V_i‖².
"""

from __future__ import annotations

import torch
from torch import nn

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Batch, Catalogue, LossOutput, Teacher
from coldbrew.models.zoo.heater_config import HeaterOptions
from coldbrew.models.zoo.teacher import TowerStudent, occurrence_mean


class Heater(TowerStudent):
    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: HeaterOptions):
        super().__init__(catalogue, teacher, options)
        self.randomize, self.similarity_weight = options.randomize, options.similarity_weight
        self.num_experts, self.teacher_dim = options.experts, options.backbone_dim
        hidden, experts = options.hidden, options.experts
        self.experts = nn.Linear(hidden, experts * self.teacher_dim)  # every expert in one matmul
        self.gate = nn.Linear(hidden, experts)
        self.add_towers(self.teacher_dim, hidden, options.dim)  # item: the backbone's or C_i

    def content_vectors(self, items: torch.Tensor | None = None) -> torch.Tensor:
        """The mixture of experts ``(n, d)`` over the content of ``items`` (None: all)."""
        return self.mixture(self.content(items))

    def mixture(self, encoded: torch.Tensor) -> torch.Tensor:
        """The mixture of experts ``(n, d)`` over the content encoder's output ``(n, hidden)``."""
        trunk = torch.tanh(encoded)  # (n, hidden)
        weights = torch.softmax(self.gate(trunk), dim=1)  # (n, E)
        outputs = self.experts(trunk).view(-1, self.num_experts, self.teacher_dim)  # (n, E, d)
        return torch.bmm(weights.unsqueeze(1), outputs).squeeze(1)  # (n, 1, E) @ (n, E, d)

    def forward(self, batch: Batch) -> LossOutput:
        users, items = batch.users, batch.items  # (B,), (B, 1 + K)
        distinct, inverse = self.step_items(items)
        content = self.content_vectors(distinct)  # (n, d)
        preference = self.teacher_items[distinct]  # (n, d)
        swapped = self.content_only(distinct, self.randomize)  # (n, 1)
        item_vectors = self.item_tower(torch.where(swapped, content, preference))
        regression = self.score_regression(users, items, item_vectors, inverse)
        similarity = occurrence_mean((content - preference).square().sum(-1), inverse)
        total = regression + self.similarity_weight * similarity
        return LossOutput(total=total, terms={"regression": regression, "similarity": similarity})

    def item_embeddings(self) -> torch.Tensor:
        """Warm items from the backbone, cold items from the content transformation."""
        inputs = torch.where(self.cold_mask[:, None], self.content_vectors(), self.teacher_items)
        return self.item_tower(inputs)

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        """New items as cold ones: from the content transformation."""
        return self.item_tower(self.mixture(self.content.encode_raw(features)))


def build(dataset: Dataset, config, teacher: Teacher | None) -> Heater:
    """The registry's builder: Heater with ``config.model_options`` (``HeaterOptions``)."""
    return Heater.from_run(dataset, config, teacher)
