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
  ``coldbrew.models.neighbors``.

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
from coldbrew.models.gather_dot import DENSE_RATIO, gather_dot
from coldbrew.models.neighbors import NeighborGraph

WORD_DIM = 128


def dense_blocks(
    features: dict[str, torch.Tensor | WordIds], skip: tuple[str, ...] = ()
) -> dict[str, torch.Tensor]:
    """The dense feature blocks of ``features`` (word-id blocks and ``skip`` left out), each
    row-normalised, by name in the dataset's order: how content models read item features."""
    return {
        name: F.normalize(block.float(), dim=1)
        for name, block in features.items()
        if isinstance(block, torch.Tensor) and name not in skip
    }


def normalized_raw_blocks(features: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """New items' raw dense blocks ``(n, sum(widths))``, joined in the dataset's order, each
    row-normalised as ``dense_blocks`` normalises the dataset's; a clear error for another
    shape."""
    expected = sum(widths)
    if features.dim() != 2 or features.shape[1] != expected:
        raise ColdbrewError(
            f"item features of shape {tuple(features.shape)}; expected (n, {expected}): the "
            f"blocks {list(widths)} concatenated in the dataset's order"
        )
    blocks = features.float().split(list(widths), dim=1)
    return torch.cat([F.normalize(block, dim=1) for block in blocks], dim=1)


class ContentEncoder(nn.Module):
    """Item features → content embedding; ``forward(items)`` encodes only those items."""

    def __init__(
        self,
        features: dict[str, torch.Tensor | WordIds],
        num_items: int,
        dim: int,
        hidden: int = 256,
    ):
        super().__init__()
        if not features:
            raise ColdbrewError("CLCRec needs at least one item feature block (none were loaded)")
        dense = list(dense_blocks(features).values())
        words = [f for f in features.values() if isinstance(f, WordIds)]
        if len(words) > 1:
            raise ColdbrewError("at most one word-id feature block is supported")
        width = sum(block.shape[1] for block in dense)
        self.block_widths = [block.shape[1] for block in dense]  # raw blocks, in order
        self.register_buffer(
            "dense_features",
            torch.cat(dense, dim=1) if dense else torch.zeros(num_items, 0),
            persistent=False,  # data, not model state: evaluate --data reads its own features
        )
        self.word_table = None
        if words:
            word_ids = words[0]
            std = math.sqrt(2.0 / (word_ids.num_words + WORD_DIM))
            self.word_table = nn.Parameter(torch.randn(word_ids.num_words, WORD_DIM) * std)
            counts = torch.bincount(word_ids.item_index, minlength=num_items).clamp_min(1)
            self.register_buffer("word_items", word_ids.item_index.long(), persistent=False)
            self.register_buffer("word_ids", word_ids.word_index.long(), persistent=False)
            self.register_buffer("word_counts", counts.float(), persistent=False)
            width += WORD_DIM
        self.layer1 = nn.Linear(width, hidden)
        self.layer2 = nn.Linear(hidden, dim)

    def item_features(self, items: torch.Tensor | None) -> torch.Tensor:
        features = self.dense_features if items is None else self.dense_features[items]
        if self.word_table is None:
            return features
        pooled = torch.zeros(
            self.dense_features.shape[0],
            WORD_DIM,
            device=features.device,
            dtype=self.word_table.dtype,
        )
        pooled = (
            pooled.index_add(0, self.word_items, self.word_table[self.word_ids])
            / self.word_counts[:, None]
        )
        pooled = F.normalize(pooled, dim=1)
        return torch.cat([features, pooled if items is None else pooled[items]], dim=1)

    def forward(self, items: torch.Tensor | None = None) -> torch.Tensor:
        return self.encode(self.item_features(items))

    def encode(self, features: torch.Tensor) -> torch.Tensor:
        """``(n, width)`` normalised, concatenated feature blocks -> ``(n, dim)``."""
        return self.layer2(F.leaky_relu(self.layer1(features)))

    def encode_raw(self, features: torch.Tensor) -> torch.Tensor:
        """New items' raw dense blocks ``(n, sum of widths)``, in the dataset's feature order:
        each block row-normalised as the dataset's were, then encoded."""
        if self.word_table is not None:
            raise ColdbrewError("new items cannot be encoded from a word-id feature block")
        return self.encode(normalized_raw_blocks(features, self.block_widths))


def distinct_items(
    items: torch.Tensor, num_items: int, trim: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct ids in ``items`` and each entry's position among them, without a host sync.

    Returns ``(distinct, inverse)`` with ``distinct[inverse] == items``. The result has a fixed
    length ``min(num_items, items.numel())`` (padded with item 0) unless ``trim`` is set, which
    cuts the padding at the cost of one device→host read (free on CPU).
    """
    present = torch.zeros(num_items, dtype=torch.bool, device=items.device)
    present[items.reshape(-1)] = True
    position = torch.cumsum(present, 0) - 1  # (num_items,) slot of each present item
    capacity = min(num_items, items.numel())
    slot = torch.where(present, position, torch.full_like(position, capacity))
    distinct = torch.zeros(capacity + 1, dtype=torch.long, device=items.device)
    distinct.scatter_(0, slot, torch.arange(num_items, device=items.device))
    distinct = distinct[:capacity]
    if trim:
        distinct = distinct[: int(position[-1]) + 1]
    return distinct, position[items]


def host_syncs_are_free(tensor: torch.Tensor, fixed_shapes: bool = False) -> bool:
    """On a CPU a device→host read costs nothing, so data-dependent sizes are fine; under
    ``torch.compile`` they break the graph, so a compiled step takes the fixed-size (GPU) path,
    as does a model told ``fixed_shapes`` (to run, test or measure the GPU step on a CPU)."""
    return tensor.device.type == "cpu" and not fixed_shapes and not torch.compiler.is_compiling()


def info_nce(logits: torch.Tensor) -> torch.Tensor:
    """Mean InfoNCE with the positive in column 0: ``logsumexp(row) − row[0]``."""
    return (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()


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
        cold_mask = torch.zeros(num_items, dtype=torch.bool)
        cold_mask[cold_items.long()] = True
        self.register_buffer("cold_mask", cold_mask, persistent=False)
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
        mask[torch.randint(rows, (int(rows * self.num_sample),), device=device)] = True
        return mask.view(shape)

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
        score = self.score_path(len(distinct), items.shape[1], items.device, cpu_path)
        cosine, user_content, user_id = score(anchor, user_rows, content, item_vectors, inverse)
        use_content = self.content_mix_mask(items.shape, items.device)
        item_content = info_nce(cosine / self.temp_value)
        user_item = info_nce(torch.where(use_content, user_content, user_id) / self.temp_value)
        item_norms = item_vectors.norm(dim=1)[inverse]  # (B, 1 + K)
        regularizer = (user_rows.norm(dim=1).mean() + item_norms.mean()) / 2
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
        """The ``scores_*`` method for this step (all three give the same values); ``cpu_path``:
        whether the step may take the CPU's choices (``host_syncs_are_free``)."""
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
    def scores_fused(anchor, user_rows, content, item_vectors, inverse):
        """Sampled products of the ``B·(1+K)`` pairs only; no ``(B, 1+K, D)`` tensor."""
        content_norms = content.norm(dim=1).clamp_min(1e-12)[inverse]  # (B, 1 + K)
        both = gather_dot(torch.stack([anchor, user_rows], dim=1), content, inverse)
        user_id = gather_dot(user_rows.unsqueeze(1), item_vectors, inverse)  # (B, 1 + K, 1)
        return both[..., 0] / content_norms, both[..., 1], user_id[..., 0]

    @staticmethod
    def scores_gathered(anchor, user_rows, content, item_vectors, inverse):
        """Gather ``(B, 1+K, D)`` rows, then batched products; cost ∝ B·(1+K)·D."""
        content_rows = F.embedding(
            inverse, content
        )  # (B, 1 + K, D); embedding backward beats index_put
        content_norms = content.norm(dim=1).clamp_min(1e-12)[inverse]  # (B, 1 + K)
        # One product serves both terms: (B, 1+K, D) @ (B, D, 2) -> (B, 1+K, 2)
        both = torch.bmm(content_rows, torch.stack([anchor, user_rows], dim=2))
        user_id = torch.bmm(F.embedding(inverse, item_vectors), user_rows.unsqueeze(2)).squeeze(2)
        return both[..., 0] / content_norms, both[..., 1], user_id

    @staticmethod
    def scores_dense(anchor, user_rows, content, item_vectors, inverse):
        """Score every distinct item with matmuls, then pick ``(B, 1+K)``; cost ∝ B·n·D."""
        unit_content = F.normalize(content, dim=1)
        cosine = torch.gather(anchor @ unit_content.T, 1, inverse)  # (B, n) -> (B, 1 + K)
        user_scores = user_rows @ torch.cat([content, item_vectors]).T  # (B, 2n)
        user_content = torch.gather(user_scores, 1, inverse)
        user_id = torch.gather(user_scores, 1, inverse + len(content))
        return cosine, user_content, user_id

    # ------------------------------------------------------------------ scoring
    def user_embeddings(self) -> torch.Tensor:
        return self.user_embedding

    @torch.no_grad()
    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """New items from their raw feature vector (the dataset's blocks, concatenated)."""
        if features is None or texts is not None:
            raise ColdbrewError(
                "CLCRec encodes a new item from its feature vector (--item-features), not from text"
            )
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
    model = CLCRec.from_dataset(
        dataset,
        dim=options.dim,
        hidden=options.hidden,
        reg_weight=options.reg_weight,
        lr_lambda=options.lr_lambda,
        temp_value=options.temp_value,
        num_sample=options.num_sample,
        mix_mode=options.mix_mode,
        neighbors=neighbors,
        neighbor_weight=options.neighbor_weight,
        neighbor_temp=options.neighbor_temp,
        neighbor_negatives=options.neighbor_negatives,
    )
    if config.protocol == "original" and model.encoder.word_table is not None:
        # the original wraps its word-table mean in torch.tensor(...), a detached copy: the
        # table keeps its initial values
        model.encoder.word_table.requires_grad_(False)
    return model
