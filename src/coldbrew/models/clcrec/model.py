"""CLCRec (Wei et al., ACM MM 2021): contrastive learning for cold-start recommendation.

Faithful to the authors' code (github.com/weiyinwei/CLCRec, ``model_CLCRec.py``):

* ID embeddings for users and items, initialised ``xavier_normal_`` over one
  ``(num_users + num_items, dim)`` table as the original does (std ``sqrt(2 / (N + dim))``).
* Content encoder: every feature block row-normalised, concatenated, ``Linear(256)`` →
  LeakyReLU → ``Linear(dim)``. Word-id text (TikTok) is a learned 128-d word table,
  mean-pooled per item, then row-normalised.
* Loss = λ·InfoNCE(normalised positive-item ID embedding ↔ normalised content embeddings of
  the positive and its negatives) + (1−λ)·InfoNCE(user ID embedding ↔ item rows, where a random
  ``num_sample`` fraction of rows use the content embedding instead of the ID embedding; neither
  side normalised, as in the original) + ``reg_weight``·(mean ‖user‖ + mean ‖item‖)/2.
  Both InfoNCE terms use temperature ``temp_value`` and are computed with log-sum-exp.
* ``num_sample``: the original draws ``num_sample × rows`` row indices *with replacement*, so
  about 1 − e^(−0.5) ≈ 39 % of rows use content at 0.5. ``mix_mode="original"`` (default)
  reproduces that; ``mix_mode="bernoulli"`` replaces each row with probability ``num_sample``.
* Optional third term (not in the original), ``neighbors=NeighborGraph``: ``neighbor_weight`` ×
  InfoNCE(mean ID embedding of a user's neighbors ↔ mean content embedding of the items they
  share) at its own temperature ``neighbor_temp``, against ``neighbor_negatives`` other users
  of the step at random (0: every other user), reported as ``"neighbor"``; see
  ``coldbrew.models.clcrec.neighbors``.

Speed: the encoder runs once per step on the distinct items of the batch (``distinct_items``;
with the neighbor term, the users' common items join that one call). The ``B·(1+K)`` products
of the two InfoNCE terms are computed by one of three equal paths (``scoring``): ``fused``
(sampled products, no ``(B, 1+K, dim)`` tensor; see ``gather_dot``; the CPU default), ``gather``
(gather the rows, then batched products) or ``dense`` (score every distinct item, then pick);
on a GPU ``auto`` picks dense while the distinct items are few per batch row, else gather.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import unset_fake_temporarily

from coldbrew.data.dataset import Dataset, WordIds
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch, LossOutput, Recommender
from coldbrew.models.clcrec.neighbors import NeighborGraph
from coldbrew.models.content import (
    ContentEncoder,
    distinct_items,
    host_syncs_are_free,
    info_nce,
    new_item_features,
)
from coldbrew.models.gather_dot import DENSE_RATIO, gather_dot


class CLCRec(Recommender):
    def __init__(
        self,
        num_users: int,
        num_items: int,
        features: dict[str, torch.Tensor | WordIds],
        cold_items: torch.Tensor,
        *,
        dim: int = 64,
        hidden: int = 256,
        reg_weight: float = 0.1,
        lr_lambda: float = 0.5,
        temp_value: float = 2.0,
        num_sample: float = 0.5,
        mix_mode: str = "original",
        scoring: str = "auto",
        neighbors: NeighborGraph | None = None,
        neighbor_weight: float = 0.1,
        neighbor_temp: float = 2.0,
        neighbor_negatives: int = 0,
    ):
        super().__init__()
        if mix_mode not in ("original", "bernoulli"):
            raise ColdbrewError(f"mix_mode must be 'original' or 'bernoulli', not {mix_mode!r}")
        if scoring not in ("auto", "fused", "dense", "gather"):
            raise ColdbrewError(f"scoring must be auto, fused, dense or gather, not {scoring!r}")
        self.scoring = scoring
        self.num_users, self.num_items = num_users, num_items
        self.reg_weight, self.lr_lambda = reg_weight, lr_lambda
        self.temp_value, self.num_sample, self.mix_mode = temp_value, num_sample, mix_mode
        std = math.sqrt(2.0 / (num_users + num_items + dim))  # xavier_normal_ of the joint table
        self.user_embedding = nn.Parameter(torch.randn(num_users, dim) * std)
        self.item_embedding = nn.Parameter(torch.randn(num_items, dim) * std)
        self.encoder = ContentEncoder(features, num_items, dim, hidden)
        self.register_cold_mask(num_items, cold_items)
        self.neighbors, self.neighbor_weight = neighbors, neighbor_weight
        self.neighbor_temp, self.neighbor_negatives = neighbor_temp, neighbor_negatives

    @classmethod
    def from_dataset(cls, dataset: Dataset, **options) -> CLCRec:
        cold = torch.from_numpy(dataset.cold_items)
        return cls(dataset.num_users, dataset.num_items, dataset.features, cold, **options)

    # ------------------------------------------------------------------ training
    def content_mix_mask(self, shape: torch.Size, device: torch.device) -> torch.Tensor:
        """Which item rows use the content embedding in the user↔item term."""
        rows = math.prod(shape)
        if self.mix_mode == "bernoulli":
            return torch.rand(shape, device=device) < self.num_sample
        mask = torch.zeros(rows, dtype=torch.bool, device=device)
        chosen = torch.randint(rows, (int(rows * self.num_sample),), device=device)
        return mask.index_fill_(0, chosen, True).view(shape)  # no host scalar copied in

    def forward(self, batch: Batch) -> LossOutput:
        users, items = batch.users, batch.items  # (B,), (B, 1 + K)
        encoded = items.reshape(-1)
        if self.neighbors is not None:  # the term's users (N,) and their common items (N, C)
            step_users, valid, common = self.neighbors.step(
                users, trim=host_syncs_are_free(users, self.fixed_shapes)
            )
            encoded = torch.cat([encoded, common.reshape(-1)])  # (B·(1 + K) + N·C,)
        cpu_path = host_syncs_are_free(items, self.fixed_shapes)
        distinct, inverse = distinct_items(encoded, self.num_items, trim=cpu_path)
        inverse, common_inverse = (
            inverse[: items.numel()].view(items.shape),
            inverse[items.numel() :],
        )
        content = self.encoder(distinct)  # (n, D): each distinct item encoded once
        item_vectors = self.item_embedding[distinct]  # (n, D)
        user_rows = self.user_embedding[users]  # (B, D)
        anchor = F.normalize(item_vectors[inverse[:, 0]], dim=1)  # (B, D) positive's ID embedding
        use_content = self.content_mix_mask(items.shape, items.device)
        score = self.score_path(len(distinct), items.shape[1], items.device, cpu_path)
        cosine, user_item = score(anchor, user_rows, content, item_vectors, inverse, use_content)
        item_content = info_nce(cosine / self.temp_value)
        user_item = info_nce(user_item / self.temp_value)
        # the mean item norm over the (B, 1 + K) entries, each distinct item counted as often as
        # it is drawn (no (B, 1 + K) gather)
        # (a fixed size, unlike bincount's: coldbrew memory traces the step; index_put_ has a
        # deterministic CUDA kernel)
        ones = item_vectors.new_ones(inverse.numel())
        counts = item_vectors.new_zeros(len(distinct))
        counts.index_put_((inverse.reshape(-1),), ones, accumulate=True)
        item_norms = (item_vectors.norm(dim=1) * counts).sum() / inverse.numel()
        regularizer = (user_rows.norm(dim=1).mean() + item_norms) / 2
        total = (
            self.lr_lambda * item_content
            + (1 - self.lr_lambda) * user_item
            + self.reg_weight * regularizer
        )
        terms = {"item_content": item_content, "user_item": user_item, "reg": regularizer}
        if self.neighbors is not None:
            terms["neighbor"] = self.neighbors.loss(
                step_users,
                valid,
                self.user_embedding,
                content,
                common_inverse.view(common.shape),  # (N, C) rows of content
                self.neighbor_temp,
                self.neighbor_negatives or None,  # 0: every other user
            )
            total = total + self.neighbor_weight * terms["neighbor"]
        return LossOutput(total=total, terms=terms)

    def score_path(self, num_distinct: int, row_width: int, device: torch.device, cpu_path: bool):
        """The ``scores_*`` method for this step (all three give the same values: the
        item↔content cosines and the user↔item products, content or ID rows as ``use_content``
        says); ``cpu_path``: whether the step may take the CPU's choices
        (``host_syncs_are_free``)."""
        scoring = self.scoring
        if scoring == "fused" and device.type != "cpu":
            raise ColdbrewError("scoring='fused' runs on the CPU only (not yet run on a GPU)")
        if scoring == "auto" and cpu_path:
            scoring = "fused"  # measured fastest on CPU (BENCHMARKS.md, training throughput)
        elif scoring == "auto":  # dense products beat gathers while distinct items are few
            scoring = "dense" if num_distinct <= DENSE_RATIO * row_width else "gather"
        return {
            "fused": self.scores_fused,
            "dense": self.scores_dense,
            "gather": self.scores_gathered,
        }[scoring]

    @staticmethod
    def scores_fused(anchor, user_rows, content, item_vectors, inverse, use_content):
        """Sampled products of the ``B·(1+K)`` pairs only; no ``(B, 1+K, D)`` tensor. The
        user↔item term reads one table, content rows then ID rows, each entry the row its
        ``use_content`` names: one product per entry, not one per table."""
        num_rows = len(content)
        unit_content = F.normalize(content, dim=1)
        cosine = gather_dot(anchor.unsqueeze(1), unit_content, inverse)  # (B, 1 + K, 1)
        rows = torch.where(use_content, inverse, inverse + num_rows)  # (B, 1 + K)
        table = torch.cat([content, item_vectors])  # (2n, D)
        user_item = gather_dot(user_rows.unsqueeze(1), table, rows)  # (B, 1 + K, 1)
        return cosine[..., 0], user_item[..., 0]

    @staticmethod
    def scores_gathered(anchor, user_rows, content, item_vectors, inverse, use_content):
        """Gather ``(B, 1+K, D)`` rows, then batched products; cost ∝ B·(1+K)·D."""
        content_rows = F.embedding(
            inverse, content
        )  # (B, 1 + K, D); embedding backward beats index_put
        content_norms = content.norm(dim=1).clamp_min(1e-12)[inverse]  # (B, 1 + K)
        # One product serves both terms: (B, 1+K, D) @ (B, D, 2) -> (B, 1+K, 2)
        both = torch.bmm(content_rows, torch.stack([anchor, user_rows], dim=2))
        user_id = torch.bmm(F.embedding(inverse, item_vectors), user_rows.unsqueeze(2)).squeeze(2)
        return both[..., 0] / content_norms, torch.where(use_content, both[..., 1], user_id)

    @staticmethod
    def scores_dense(anchor, user_rows, content, item_vectors, inverse, use_content):
        """Score every distinct item with matmuls, then pick ``(B, 1+K)``; cost ∝ B·n·D."""
        unit_content = F.normalize(content, dim=1)
        cosine = torch.gather(anchor @ unit_content.T, 1, inverse)  # (B, n) -> (B, 1 + K)
        user_scores = user_rows @ torch.cat([content, item_vectors]).T  # (B, 2n)
        user_content = torch.gather(user_scores, 1, inverse)
        user_id = torch.gather(user_scores, 1, inverse + len(content))
        return cosine, torch.where(use_content, user_content, user_id)

    # ------------------------------------------------------------------ scoring
    def user_embeddings(self) -> torch.Tensor:
        return self.user_embedding

    @torch.no_grad()
    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """New items from their raw feature vector (the dataset's blocks, concatenated)."""
        features = new_item_features("CLCRec", texts, features)
        return self.encoder.encode_raw(features.to(self.item_embedding.device))

    def item_embeddings(self) -> torch.Tensor:
        """Warm items by their ID embedding, cold items by the content encoder."""
        content = self.encoder()
        return torch.where(self.cold_mask[:, None], content, self.item_embedding)


def build(dataset: Dataset, config) -> CLCRec:
    """The registry's builder: CLCRec with ``config.model_options`` (a ``CLCRecConfig``)."""
    options = config.model_options
    neighbors = None
    if options.neighbor_loss:
        # data preparation: done for real even while coldbrew memory traces on fake tensors
        with unset_fake_temporarily():
            neighbors = NeighborGraph.from_interactions(dataset.train, progress=not config.quiet)
    names = ["dim", "hidden", "reg_weight", "lr_lambda", "temp_value", "num_sample", "mix_mode"]
    names += ["neighbor_weight", "neighbor_temp", "neighbor_negatives"]
    values = {name: getattr(options, name) for name in names}  # the options of that name
    model = CLCRec.from_dataset(dataset, neighbors=neighbors, **values)
    if config.protocol == "original" and model.encoder.word_table is not None:
        # the original wraps its word-table mean in torch.tensor(...), a detached copy: the
        # table keeps its initial values
        model.encoder.word_table.requires_grad_(False)
    return model
