"""Content KNN: a cold item's vector is a similarity-weighted average of the collaborative
backbone's vectors of its ``k`` most content-similar warm items; users are the backbone's.

Content is every dense feature block row-normalised (``dense_blocks``), concatenated and
normalised again, so cosine similarity weighs each block equally. Cold item ``c`` with nearest
warm items ``n_1 .. n_k`` (cosines ``s_1 .. s_k``) gets ``Σ_j softmax(s / τ)_j · e_{n_j}``.
There is nothing to train (``ModelSpec.trains`` is False): the run evaluates the model once.
The classic item-based baseline of the cold-start literature (e.g. the KNN of
YuanchenBei/ColdRec); this one averages backbone vectors rather than scores, so it ranks with
one inner product like every other model.

With ``residual`` ρ > 0 the neighbours lend what ridge's content map misses instead: with the
ridge map ``r(x) = xW + b`` fitted on the warm items (``coldbrew.models.zoo.ridge``, its
``ridge_lambda``, on the same joined blocks), cold item ``c`` gets
``r(x_c) + ρ Σ_j softmax(s / τ)_j · (e_{n_j} − r(x_{n_j}))``: the map's estimate corrected by
how wrong it was on the most similar warm items (ρ = 0 would be ridge itself). On
ml-1m-coldstart at mpnet@128 the classic KNN, searched, read 0.451 own-split cold Recall@20 on
the select half, below ridge's 0.506; ρ 0.5 read 0.513 and the searched ρ 0.055, close to
ridge, 0.507 (BENCHMARKS.md, "Content KNN around the ridge map").

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
from coldbrew.models.zoo.ridge import fit_map
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
        self.residual, self.ridge_lambda = options.residual, options.ridge_lambda
        # ridge maps the joined blocks as ridge reads them; the cosine reads them normalised
        self.register_buffer("unit_content", F.normalize(self.content, dim=1), persistent=False)

    @torch.no_grad()
    def item_embeddings(self) -> torch.Tensor:
        """Warm items: the backbone's vectors; cold items: borrowed from their warm neighbours."""
        vectors = self.teacher_items.clone()
        vectors[self.cold_mask] = self.borrow(self.content[self.cold_mask])
        return vectors

    def borrow(self, content: torch.Tensor) -> torch.Tensor:
        """``(n, D)`` vectors of items whose joined row-normalised blocks are ``content``
        ``(n, F)``: the neighbours' average vector, or (``residual`` ρ > 0) the ridge map's
        vector plus ρ × the neighbours' average residual around the map."""
        warm = ~self.cold_mask
        targets = self.teacher_items[warm]
        if self.residual > 0:
            weights, bias = fit_map(self.content[warm], targets, self.ridge_lambda)
            targets = targets - (self.content[warm] @ weights + bias)
        borrowed = neighbor_vectors(
            F.normalize(content, dim=1),
            self.unit_content[warm],
            targets,
            self.neighbors,
            self.temperature,
        )
        if self.residual > 0:
            return content @ weights + bias + self.residual * borrowed
        return borrowed

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        return self.borrow(normalized_raw_blocks(features, self.block_widths))


def build(dataset: Dataset, config, teacher: Teacher | None) -> ContentKNN:
    """The registry's builder: content KNN with ``config.model_options`` (``KNNOptions``) over
    the collaborative backbone ``teacher`` (None: a saved run rebuilt; its checkpoint fills it)."""
    return ContentKNN.from_run(dataset, config, teacher)
