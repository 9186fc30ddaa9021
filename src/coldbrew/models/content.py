"""Pieces several models share: item content blocks, the content encoder, the InfoNCE loss,
distinct items of a step without a host sync, and when a host read is free.

CLCRec, the LM recommender and the cold-start zoo read item features through ``dense_blocks``
(every dense block row-normalised) and encode new items' raw blocks with
``normalized_raw_blocks``; nothing here knows a model's options.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.data.dataset import WordIds
from coldbrew.errors import ColdbrewError
from coldbrew.models.sparse_columns import (
    SparseColumns,
    is_sparse,
    joined,
    sparse_columns,
    sparse_product,
)

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


def content_matrix(
    features: dict[str, torch.Tensor | WordIds], what: str
) -> tuple[torch.Tensor, list[int]]:
    """Every dense block of ``features`` row-normalised (``dense_blocks``) and joined,
    ``(items, F)``, with the blocks' widths: what the models that compare or map raw content
    read (``what``: how the model's error says it uses them)."""
    blocks = dense_blocks(features)
    if not blocks:
        raise ColdbrewError(
            f"{what} dense item feature blocks; none were loaded "
            "(--features names them; word-id text needs a trained model)"
        )
    return torch.cat(list(blocks.values()), dim=1), [block.shape[1] for block in blocks.values()]


def new_item_features(
    model: str, texts: list[str] | None, features: torch.Tensor | None
) -> torch.Tensor:
    """The raw feature vector of new items for a model that reads no text (``encode_items``);
    text, or no vector, is refused in one line."""
    if features is None or texts is not None:
        raise ColdbrewError(
            f"{model} encodes a new item from its feature vector (--item-vector), not from text"
        )
    return features


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


def split_sparse(
    blocks: list[torch.Tensor],
) -> tuple[list[torch.Tensor], SparseColumns | None, list[int]]:
    """The blocks kept dense, the sparse ones' non-zero columns (``None``: no block is sparse,
    ``is_sparse``) and the dense blocks' columns in the joined width."""
    kept, sparse, columns, offset = [], [], [], 0
    for block in blocks:
        if is_sparse(block):
            sparse.append(sparse_columns(block, offset))
        else:
            kept.append(block)
            columns += range(offset, offset + block.shape[1])
        offset += block.shape[1]
    if not sparse:
        return blocks, None, columns
    return kept, joined(sparse), columns


class ContentEncoder(nn.Module):
    """Item features → content embedding; ``forward(items)`` encodes only those items.

    A wide block with few non-zeros a row (one-hot authors, ``sparse_columns.is_sparse``) is
    kept as each item's non-zero columns and enters ``layer1`` by them (``sparse_layer1``): the
    step then costs an item's non-zeros, not the block's width, with the same result.
    """

    # True: the GPU's ops on any device (set with the model's, ``registry.build_model``)
    fixed_shapes: bool = False

    def __init__(
        self,
        features: dict[str, torch.Tensor | WordIds],
        num_items: int,
        dim: int,
        hidden: int = 256,
    ):
        super().__init__()
        if not features:
            raise ColdbrewError(
                "a content model needs at least one item feature block (none were loaded)"
            )
        dense = list(dense_blocks(features).values())
        words = [f for f in features.values() if isinstance(f, WordIds)]
        if len(words) > 1:
            raise ColdbrewError("at most one word-id feature block is supported")
        width = sum(block.shape[1] for block in dense)
        self.block_widths = [block.shape[1] for block in dense]  # raw blocks, in order
        kept, sparse, columns = split_sparse(dense)
        self.register_buffer(
            "dense_features",
            torch.cat(kept, dim=1) if kept else torch.zeros(num_items, 0),
            persistent=False,  # data, not model state: evaluate --data reads its own features
        )
        self.sparse = sparse is not None  # layer1 reads the sparse blocks by their non-zeros
        if sparse is not None:
            columns += list(range(width, width + (WORD_DIM if words else 0)))
            self.register_buffer(
                "dense_columns", torch.tensor(columns, dtype=torch.long), persistent=False
            )
            self.register_buffer("sparse_ids", sparse.ids, persistent=False)
            self.register_buffer("sparse_values", sparse.values, persistent=False)
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
        features = (
            self.dense_features if items is None else self.dense_features.index_select(0, items)
        )
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
        """The content embeddings of ``items`` ``(n,)`` (None: every item)."""
        if not self.sparse:
            return self.encode(self.item_features(items))
        fused = host_syncs_are_free(self.sparse_ids, self.fixed_shapes)
        return self.layer2(F.leaky_relu(self.sparse_layer1(items, fused)))

    def sparse_layer1(self, items: torch.Tensor | None, fused: bool) -> torch.Tensor:
        """``layer1`` of the items' joined features, the sparse blocks' columns read by their
        non-zeros: equal to ``layer1(item_features)`` of the dense blocks joined."""
        weight = self.layer1.weight
        dense = F.linear(
            self.item_features(items), weight.index_select(1, self.dense_columns), self.layer1.bias
        )
        ids, values = self.sparse_ids, self.sparse_values
        if items is not None:
            ids, values = ids.index_select(0, items), values.index_select(0, items)
        return dense + sparse_product(ids, values, weight, fused=fused)

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
    # index_fill_ takes the value as a kernel argument; `present[idx] = True` copies a host
    # scalar to the device, a host sync on every step (seen on an H100: docs/gpu.md)
    present.index_fill_(0, items.reshape(-1), True)
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
