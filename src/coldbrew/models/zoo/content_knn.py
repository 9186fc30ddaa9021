"""Content KNN: a cold item's vector is a similarity-weighted average of the collaborative
backbone's vectors of its ``k`` most content-similar warm items; users are the backbone's.

Content is every dense feature block row-normalised (``dense_blocks``), concatenated and
normalised again, so cosine similarity weighs each block equally. Cold item ``c`` with nearest
warm items ``n_1 .. n_k`` (cosines ``s_1 .. s_k``) gets ``Σ_j softmax(s / τ)_j · e_{n_j}``.
There is nothing to train (``ModelSpec.trains`` is False): the run evaluates the model once.
The classic item-based baseline of the cold-start literature (e.g. the KNN of
YuanchenBei/ColdRec); this one averages backbone vectors rather than scores, so it ranks with
one inner product like every other model.

The backbone's vectors are persistent buffers (a checkpoint restores them); the content is data
and the cold vectors are computed from it whenever ``item_embeddings`` is called, in chunks of
``CHUNK`` cold items (a ``(CHUNK, warm)`` similarity block at a time).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Catalogue, Teacher
from coldbrew.models.content import normalized_raw_blocks
from coldbrew.models.zoo.knn_config import KNNOptions
from coldbrew.models.zoo.teacher import ContentMapper

CHUNK = 1024


def neighbor_vectors(
    queries: torch.Tensor,
    candidates: torch.Tensor,
    candidate_vectors: torch.Tensor,
    neighbors: int,
    temperature: float,
) -> torch.Tensor:
    """``(Q, D)``: each unit-norm query row ``(Q, F)``'s softmax(cosine / τ)-weighted average
    of the vectors ``(W, D)`` of its ``neighbors`` most similar candidates ``(W, F)``."""
    count = min(neighbors, candidates.shape[0])
    rows = []
    for start in range(0, queries.shape[0], CHUNK):
        similarity = queries[start : start + CHUNK] @ candidates.T  # (chunk, W)
        top, index = similarity.topk(count, dim=1)  # (chunk, k)
        weights = torch.softmax(top / temperature, dim=1)
        rows.append((weights[..., None] * candidate_vectors[index]).sum(1))  # (chunk, D)
    return torch.cat(rows) if rows else candidate_vectors.new_zeros(0, candidate_vectors.shape[1])


class ContentKNN(ContentMapper):
    label, reads = "content KNN", "compares"

    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: KNNOptions):
        super().__init__(catalogue, teacher, options)
        self.neighbors, self.temperature = options.neighbors, options.temperature
        self.content = F.normalize(self.content, dim=1)  # cosine: each block weighs the same

    @torch.no_grad()
    def item_embeddings(self) -> torch.Tensor:
        """Warm items: the backbone's vectors; cold items: their warm neighbours' average."""
        vectors = self.teacher_items.clone()
        vectors[self.cold_mask] = self.borrow(self.content[self.cold_mask])
        return vectors

    def borrow(self, content: torch.Tensor) -> torch.Tensor:
        """``(n, D)`` vectors of items with unit-norm ``content`` ``(n, F)``."""
        warm = ~self.cold_mask
        return neighbor_vectors(
            content,
            self.content[warm],
            self.teacher_items[warm],
            self.neighbors,
            self.temperature,
        )

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        blocks = normalized_raw_blocks(features, self.block_widths)
        return self.borrow(F.normalize(blocks, dim=1))


def build(dataset: Dataset, config, teacher: Teacher | None) -> ContentKNN:
    """The registry's builder: content KNN with ``config.model_options`` (``KNNOptions``) over
    the collaborative backbone ``teacher`` (None: a saved run rebuilt; its checkpoint fills it)."""
    return ContentKNN.from_run(dataset, config, teacher)
