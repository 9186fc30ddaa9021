"""DeepMusic (van den Oord, Dieleman and Schrauwen, "Deep content-based music recommendation",
NeurIPS 2013): regress a collaborative model's item factors from content.

* The teacher is the collaborative backbone trained on warm interactions
  (``coldbrew.training.backbone``; the paper's weighted matrix factorisation is ``--backbone
  als``). Users are the backbone's user embeddings, unchanged.
* A content MLP (``coldbrew.models.content.ContentEncoder``: every feature block
  row-normalised, concatenated, ``Linear(hidden)`` → LeakyReLU → ``Linear(d)``) is trained to
  predict the backbone's embedding of each warm item of the step (positive and negatives):
  loss = mean over the step's item occurrences of ‖MLP(content) − backbone item‖², the paper's
  mean-squared-error objective. The paper's convolutional network over audio spectrograms
  becomes this MLP because the content here is tabular (genres, text vectors).
* Scoring: cold items (and new ones, ``coldbrew recommend --item-vector``) by the MLP; warm
  items keep the backbone's embedding. The paper evaluates items whose factors come from
  content only; peers (ColdRec's DeepMusic) keep the collaborative factors of warm items, as
  here, since those are what the MLP imitates.
"""

from __future__ import annotations

import torch

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Batch, Catalogue, LossOutput, Teacher
from coldbrew.models.content import ContentEncoder
from coldbrew.models.zoo.deepmusic_config import DeepMusicOptions
from coldbrew.models.zoo.teacher import TeacherModel, occurrence_mean


class DeepMusic(TeacherModel):
    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: DeepMusicOptions):
        super().__init__(catalogue, teacher, options)
        self.encoder = ContentEncoder(
            catalogue.features, catalogue.num_items, options.backbone_dim, options.hidden
        )

    def forward(self, batch: Batch) -> LossOutput:
        distinct, inverse = self.step_items(batch.items)  # (n,), (B, 1 + K)
        predicted = self.encoder(distinct)  # (n, d): each distinct item once
        distance = (predicted - self.teacher_items[distinct]).square().sum(-1)  # (n,)
        regression = occurrence_mean(distance, inverse)
        return LossOutput(total=regression, terms={"regression": regression})

    def user_embeddings(self) -> torch.Tensor:
        return self.teacher_users

    def item_embeddings(self) -> torch.Tensor:
        """Warm items by the backbone, cold items by the content MLP."""
        return torch.where(self.cold_mask[:, None], self.encoder(), self.teacher_items)

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        return self.encoder.encode_raw(features)


def build(dataset: Dataset, config, teacher: Teacher | None) -> DeepMusic:
    """The registry's builder: DeepMusic with ``config.model_options`` (``DeepMusicOptions``)."""
    return DeepMusic.from_run(dataset, config, teacher)
