"""MARec (Monteil et al., "MARec: Metadata Alignment for cold-start Recommendation", RecSys
2024, arXiv 2404.13298) with an EASE backbone, in closed form.

EASE (Steck 2019) scores user ``u``'s item ``j`` as ``x_u b_j``: ``x_u`` the user's training
row, ``B`` an item-item weight matrix with a zero diagonal. A cold item has no interactions, so
EASE alone gives its column nothing. MARec adds an alignment term: a metadata similarity ``G``
(item × item) turns a user's history into content scores ``XG``, and cold columns of ``XB`` are
pulled towards them. Here ``B`` minimises, column by column,

    ‖X − XB‖² + λ‖B‖² + β Σ_{j cold} ‖X b_j − X g_j‖²,   diag(B) = 0   (``objective``)

* warm column ``j``: plain EASE, ``B = I − P·diag(1/diag P)`` with ``P = (XᵀX + λI)⁻¹``
  (``ease_weights``);
* cold column ``j``: ``X_j = 0``, so ``((1 + β)XᵀX + λI) b_j = β XᵀX g_j`` (its diagonal entry
  is zero without a multiplier): ``b_j = S g_j`` with the smoother
  ``S = β((1 + β)XᵀX + λI)⁻¹XᵀX`` (``alignment_smoother``). In the directions the click data
  knows well ``X b_j`` is ``XG``'s content score scaled by ``β / (1 + β)``; in the directions
  it barely knows (small singular values of ``X``) the content score is shrunk away.

``G = Σ_k μ_k C_k`` over the dense feature blocks ``k`` (genre, text, ...), ``C_k`` the cosine
similarity of block ``k``'s rows; ``μ`` is fitted as MARec fits it, by a weighted least-squares
regression of ``X`` on the per-block content scores ``X C_k`` over warm items (zero diagonal,
an intercept, weight 1 on interactions and ``negative_weight`` on the rest: ``block_weights``).

Where this follows the paper and where it deviates (the authors' public notebooks were read to
learn the method; nothing is copied):

* followed: the EASE backbone with its zero-diagonal closed form; the alignment target ``XG``
  built from per-block cosine similarities whose weights come from MARec's weighted regression;
  cold items scored only through ``G``; everything closed form.
* deviation: MARec weighs the alignment per item by a ramp over the items' interaction counts
  (items below the 10th percentile, cold items most) and solves it with one shared inverse,
  ``(XᵀX + λI + XᵀX̃ D)⁻¹``, which is not the exact minimiser of a quadratic. Here the weight
  is ``β`` on cold items and 0 on warm ones, which makes the objective separable per column
  and its minimiser exact (two ``warm × warm`` solves); warm items are plain EASE.
* deviation: MARec shrinks cosines of sparse tag counts (``shrinkage``); the blocks here are
  dense (genre one-hot, sentence embeddings), compared by plain cosine, optionally kept to each
  cold item's ``neighbors`` most similar warm items.
* deviation, optional (``similarity_temperature`` τ > 0): a cold item's column of ``G`` becomes
  ``softmax(s / τ)`` over its ``neighbors`` nearest warm items, ``s`` its μ-weighted cosines
  with ``μ`` scaled to ``Σ|μ_k| = 1`` (``sharpened_similarity``). Sentence embeddings give
  nearly every pair a similar positive cosine, so a linear ``G`` column is almost flat and a
  cold item's score is close to a sum over the user's history; the softmax makes each column
  weigh its nearest warm items and sum to 1 (a content KNN in EASE's smoothed space). The
  authors' code keeps the linear shape (with shrunk cosines and no top-k); the softmax is
  this project's (BENCHMARKS.md, "MARec with sharpened similarities").

Scores are ``X B``: ``user_embeddings`` are the users' training rows ``(users, items)`` (data,
not model state) and ``item_embeddings`` are ``Bᵀ`` ``(items, items)``. The learned state is
``ease`` and ``smoother`` (``warm × warm``) and ``block_weights`` ``μ``; cold columns are
computed from the content whenever ``item_embeddings`` is called, so moving content between
cold items moves their scores with it. Memory and time grow with ``items²`` and ``items³``:
meant for catalogues of thousands of items (ml-1m-coldstart: 2.8k warm items, a few seconds).
"""

from __future__ import annotations

import numpy as np
import torch

from coldbrew.data.dataset import Dataset, WordIds
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import NothingToTrain, Recommender
from coldbrew.models.content import content_matrix, new_item_features, normalized_raw_blocks

MAX_ITEMS = 30_000  # a dense items × items matrix of float32 is 3.6 GB here


def objective(
    interactions: torch.Tensor,
    weights: torch.Tensor,
    similarity: torch.Tensor,
    cold_mask: torch.Tensor,
    lam: float,
    beta: float,
) -> torch.Tensor:
    """``‖X − XB‖² + λ‖B‖² + β Σ_{j cold} ‖X b_j − X g_j‖²``: ``X`` ``(users, items)``, ``B``
    and ``G`` ``(items, items)``, ``cold_mask`` ``(items,)``."""
    scores = interactions @ weights
    alignment = (scores - interactions @ similarity)[:, cold_mask]
    return (
        (interactions - scores).square().sum()
        + lam * weights.square().sum()
        + beta * alignment.square().sum()
    )


def ease_weights(gram: torch.Tensor, lam: float) -> torch.Tensor:
    """EASE's ``B`` ``(n, n)`` for the Gram matrix ``XᵀX`` ``(n, n)``: zero diagonal, and
    ``B_ij = −P_ij / P_jj`` elsewhere with ``P = (XᵀX + λI)⁻¹``."""
    regularised = gram.clone()
    regularised.diagonal().add_(lam)
    inverse = torch.linalg.inv(regularised)
    weights = -inverse / inverse.diagonal()[None, :]
    weights.diagonal().zero_()
    return weights


def alignment_smoother(gram: torch.Tensor, lam: float, beta: float) -> torch.Tensor:
    """``S = β((1 + β)XᵀX + λI)⁻¹XᵀX`` ``(n, n)``: a cold column is ``b_j = S g_j``."""
    system = (1.0 + beta) * gram
    system.diagonal().add_(lam)
    return beta * torch.linalg.solve(system, gram)


def block_weights(
    interactions: torch.Tensor, similarities: list[torch.Tensor], negative_weight: float
) -> torch.Tensor:
    """MARec's per-block weights ``μ`` ``(K,)``: the weighted least-squares fit, with an
    intercept, of the binary ``interactions`` ``(users, n)`` on the content scores
    ``interactions @ C_k`` (each ``C_k`` ``(n, n)`` with its diagonal zeroed), weight 1 on
    interactions and ``negative_weight`` elsewhere."""
    clicks = (interactions > 0).float()
    x = clicks.double()
    sample_weight = negative_weight + (1.0 - negative_weight) * x
    columns = []
    for similarity in similarities:
        off_diagonal = similarity.float().clone()
        off_diagonal.diagonal().zero_()
        # float32 products (the sums below are float64): half the time of a float64 product
        columns.append((clicks @ off_diagonal).double())
    columns.append(torch.ones_like(x))  # the intercept
    count = len(columns)
    normal = torch.zeros(count, count, dtype=torch.float64)
    target = torch.zeros(count, dtype=torch.float64)
    for row in range(count):
        weighted = sample_weight * columns[row]
        target[row] = (weighted * x).sum()
        for col in range(row, count):
            normal[row, col] = normal[col, row] = (weighted * columns[col]).sum()
    solution = torch.linalg.lstsq(normal, target[:, None]).solution[:, 0]
    return solution[:-1].float()


def keep_nearest(similarity: torch.Tensor, neighbors: int) -> torch.Tensor:
    """``similarity`` ``(warm, n)`` with all but each column's ``neighbors`` largest entries
    zeroed (0: unchanged)."""
    if neighbors == 0 or neighbors >= similarity.shape[0]:
        return similarity
    top, index = similarity.topk(neighbors, dim=0)
    return torch.zeros_like(similarity).scatter_(0, index, top)


def sharpened_similarity(
    similarity: torch.Tensor, neighbors: int, temperature: float
) -> torch.Tensor:
    """``similarity`` ``(warm, n)`` turned column by column into ``softmax(s / τ)`` over its
    ``neighbors`` largest entries (0: all), zero elsewhere: each column sums to 1."""
    count = similarity.shape[0] if neighbors == 0 else min(neighbors, similarity.shape[0])
    top, index = similarity.topk(count, dim=0)
    return torch.zeros_like(similarity).scatter_(0, index, torch.softmax(top / temperature, dim=0))


class MARec(NothingToTrain, Recommender):
    label = "marec"

    def __init__(
        self,
        features: dict[str, torch.Tensor | WordIds],
        interactions: torch.Tensor,
        cold_items: torch.Tensor,
        *,
        ease_lambda: float = 300.0,
        alignment: float = 1.0,
        neighbors: int = 100,
        negative_weight: float = 0.2,
        similarity_temperature: float = 0.0,
    ):
        super().__init__()
        num_items = interactions.shape[1]
        if num_items > MAX_ITEMS:
            raise ColdbrewError(
                f"marec solves dense items x items systems; {num_items} items is more than "
                f"{MAX_ITEMS} (use ridge or knn on large catalogues)"
            )
        content, self.block_widths = content_matrix(features, "marec compares")
        self.num_items, self.neighbors = num_items, neighbors
        self.temperature = similarity_temperature
        # data, not model state (see coldbrew.models.base)
        self.register_buffer("interactions", interactions.float(), persistent=False)
        self.register_buffer("content", content, persistent=False)
        self.register_cold_mask(num_items, cold_items)
        warm = torch.nonzero(~self.cold_mask).flatten()
        self.register_buffer("warm", warm, persistent=False)
        warm_clicks = self.interactions[:, warm].double()
        gram = warm_clicks.T @ warm_clicks  # (warm, warm)
        similarities = [block[warm] @ block[warm].T for block in self.split_blocks(self.content)]
        self.register_buffer("ease", ease_weights(gram, ease_lambda).float())
        self.register_buffer("smoother", alignment_smoother(gram, ease_lambda, alignment).float())
        self.register_buffer(
            "block_weights", block_weights(warm_clicks, similarities, negative_weight)
        )

    def split_blocks(self, content: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return content.split(self.block_widths, dim=1)

    def content_similarity(self, content: torch.Tensor) -> torch.Tensor:
        """``G``'s columns ``(warm, n)`` for items with row-normalised ``content`` ``(n, F)``:
        ``Σ_k μ_k`` · block ``k``'s cosine with each warm item, kept to the nearest; with
        ``similarity_temperature`` τ > 0, the softmax over the nearest of the same sum, with
        ``μ`` scaled to ``Σ|μ_k| = 1``."""
        warm_blocks = self.split_blocks(self.content[self.warm])
        weights = self.block_weights
        if self.temperature > 0:
            weights = weights / weights.abs().sum().clamp_min(1e-12)
        similarity = sum(
            weight * (warm_block @ block.T)
            for weight, warm_block, block in zip(
                weights, warm_blocks, self.split_blocks(content), strict=True
            )
        )
        if self.temperature > 0:
            return sharpened_similarity(similarity, self.neighbors, self.temperature)
        return keep_nearest(similarity, self.neighbors)

    def user_embeddings(self) -> torch.Tensor:
        return self.interactions

    @torch.no_grad()
    def item_embeddings(self) -> torch.Tensor:
        """``Bᵀ`` ``(items, items)``: warm columns EASE's, cold columns ``S G``."""
        warm, cold = self.warm, torch.nonzero(self.cold_mask).flatten()
        weights = torch.zeros(self.num_items, self.num_items, device=self.ease.device)
        weights[warm[:, None], warm[None, :]] = self.ease
        cold_columns = self.smoother @ self.content_similarity(self.content[cold])
        weights[warm[:, None], cold[None, :]] = cold_columns
        return weights.T

    @torch.no_grad()
    def score_users(self, users: torch.Tensor) -> torch.Tensor:
        """``X[users] B`` ``(len(users), items)``, the sparse training rows times ``B``: a
        user's few interactions, not every item, per score."""
        weights = self.item_embeddings().T  # (items, items) B
        return torch.sparse.mm(self.interactions[users].to_sparse(), weights)

    @torch.no_grad()
    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """New items from their raw feature vector, scored as a cold item with that content:
        ``(n, items)``, in the space of ``user_embeddings`` (the users' training rows)."""
        features = new_item_features(type(self).__name__, texts, features)
        content = normalized_raw_blocks(features.to(self.ease.device), self.block_widths)
        columns = self.smoother @ self.content_similarity(content)  # (warm, n)
        vectors = torch.zeros(len(content), self.num_items, device=self.ease.device)
        vectors[:, self.warm] = columns.T
        return vectors


def build(dataset: Dataset, config) -> MARec:
    """The registry's builder: MARec with ``config.model_options`` (``MARecOptions``), solved
    on ``dataset``'s training interactions."""
    options = config.model_options
    interactions = torch.from_numpy(np.asarray(dataset.train.todense(), dtype=np.float32))
    return MARec(
        dataset.features,
        interactions,
        torch.from_numpy(dataset.cold_items),
        ease_lambda=options.ease_lambda,
        alignment=options.alignment,
        neighbors=options.neighbors,
        negative_weight=options.negative_weight,
        similarity_temperature=options.similarity_temperature,
    )
