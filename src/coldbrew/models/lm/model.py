"""LMRecommender: users and items scored through language-model embeddings of their texts.

    item(i) = item_head([text(i), features(i)]) + keep(i) · item_id[i]
    user(u) = user_id[u] + user_head([history(u), user_text(u)])
    score(u, i) = user(u) · item(i)      (score="cosine": both vectors unit length first)

* ``text(i)`` is the backbone's pooled, unit-length embedding of the item's text: a cached row
  (cache mode), the backbone run inside the step on the step's distinct items (dynamic mode),
  or its tuned top layers on held lower-layer states (tune mode, ``coldbrew.models.lm.tuned``).
* ``features(i)``: the data's other item feature vectors (genres on MovieLens; each block
  row-normalised, as CLCRec reads them), when ``item_features`` is on and the data has any.
  The data's precomputed text vectors are left out: the backbone reads the text itself.
* ``keep(i)`` is 0 for cold items, which are therefore always scored from their text. With
  ``id_dropout`` > 0, training also drops a warm item's ID vector with that probability, so the
  text head learns to stand alone (as CLCRec's ``num_sample`` mixes content into training);
  0.36 by default (a search's value; 0.5 against 0 lifted val cold Recall@20 on
  ml-1m-coldstart on each of 3 seeds, under BPR it did not; BENCHMARKS.md).
* ``history(u)`` is the mean text embedding of the user's training items and ``user_text(u)``
  the embedding of the user's own description where the data has one (ML-100K); both are
  computed once with the frozen backbone, in every mode.
* Heads are two-layer MLPs (``Linear → GELU → Linear``) projecting to ``dim``.

Loss on ``Batch.items (B, 1 + K)`` (column 0 the positive): ``bpr`` is the mean of
``softplus(s_neg − s_pos)`` over the K negatives (the seed's (user, positive, negative)
triples when K = 1); ``infonce`` is the softmax cross-entropy of the positive among the 1 + K
scores divided by ``temperature``.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch, LossOutput, Recommender
from coldbrew.models.content import (
    distinct_items,
    host_syncs_are_free,
    info_nce,
    normalized_raw_blocks,
)
from coldbrew.models.gather_dot import sampled_scores
from coldbrew.models.lm.backbone import TextBackbone
from coldbrew.models.lm.config import LMConfig
from coldbrew.models.lm.tuned import TunedText

ID_INIT_STD = 0.01


def mlp(width_in: int, hidden: int, width_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width_in, hidden), nn.GELU(), nn.Linear(hidden, width_out))


class LMRecommender(Recommender):
    def __init__(
        self,
        config: LMConfig,
        *,
        num_users: int,
        cold_items: torch.Tensor,
        user_features: torch.Tensor,
        item_text: torch.Tensor | None = None,
        backbone: TextBackbone | None = None,
        item_tokens: tuple[torch.Tensor, torch.Tensor] | None = None,
        item_features: dict[str, torch.Tensor] | None = None,
        backbone_identity: str | None = None,
        tuned: TunedText | None = None,
    ):
        """``user_features (U, F)``: history (and user-text) vectors. Cache mode takes
        ``item_text (N, E)``; dynamic mode ``backbone`` and ``item_tokens`` (ids, lengths); tune
        mode ``tuned``.
        ``item_features``: row-normalised feature blocks ``(N, width)`` by name, in the data's
        order, joined to the text vectors."""
        super().__init__()
        if (config.lm_mode == "cache") != (item_text is not None):
            raise ColdbrewError("LMRecommender: cache mode takes item_text, dynamic does not")
        if (config.lm_mode == "dynamic") != (backbone is not None and item_tokens is not None):
            raise ColdbrewError("LMRecommender: dynamic mode takes a backbone and item_tokens")
        if (config.lm_mode == "tune") != (tuned is not None):
            raise ColdbrewError("LMRecommender: tune mode takes tuned (and only it)")
        self.config = config
        self.backbone, self.tuned = backbone, tuned
        # the backbone's files' identity: saved with the state, checked when a state is loaded
        self.backbone_identity = backbone_identity
        self.register_load_state_dict_pre_hook(_accept_a_state_without_identity)
        self.num_users = num_users
        if item_text is not None:
            self.num_items, width = item_text.shape
            self.register_buffer("item_text", item_text.float(), persistent=False)
        elif tuned is not None:
            self.num_items, width = len(tuned.item_lengths), tuned.backbone.width
        else:
            token_ids, lengths = item_tokens
            self.num_items, width = len(lengths), backbone.width
            self.register_buffer("item_token_ids", token_ids, persistent=False)
            self.register_buffer("item_token_lengths", lengths, persistent=False)
        blocks = item_features or {}
        self.feature_widths = {name: block.shape[1] for name, block in blocks.items()}
        joined = [block.float() for block in blocks.values()] or [torch.zeros(self.num_items, 0)]
        self.register_buffer("item_features", torch.cat(joined, dim=1), persistent=False)  # data
        width += self.item_features.shape[1]
        self.register_cold_mask(self.num_items, cold_items)
        self.register_buffer("user_features", user_features.float(), persistent=False)
        self.user_id = nn.Embedding(num_users, config.dim)
        self.item_id = nn.Embedding(self.num_items, config.dim)
        nn.init.normal_(self.user_id.weight, std=ID_INIT_STD)
        nn.init.normal_(self.item_id.weight, std=ID_INIT_STD)
        self.item_head = mlp(width, config.hidden, config.dim)
        self.user_head = mlp(user_features.shape[1], config.hidden, config.dim)

    def get_extra_state(self) -> dict:
        return {"backbone_identity": self.backbone_identity}

    def set_extra_state(self, state: dict) -> None:
        """A saved state trained on other backbone files (changed since the save) is refused."""
        saved = state.get("backbone_identity")
        if saved and self.backbone_identity and saved != self.backbone_identity:
            raise ColdbrewError(
                f"backbone {self.config.backbone!r} differs from the one this checkpoint was "
                f"trained on ({self.backbone_identity} against {saved})"
            )

    # ------------------------------------------------------------------ vectors
    def loaded_backbone(self) -> TextBackbone | None:
        """The whole backbone the model holds (dynamic and tune modes), else None."""
        return self.backbone if self.tuned is None else self.tuned.backbone

    def text_vectors(self, items: torch.Tensor, rows: int | None = None) -> torch.Tensor:
        """``(n, E + G)`` the item head's input: text embeddings of ``items`` (cached rows, the
        backbone on them, or tune mode's mix for a step of ``rows`` rows) joined with their
        feature vectors."""
        if self.tuned is not None:
            text = self.tuned(items, len(items) if rows is None else rows)
        elif self.backbone is None:
            text = self.item_text[items]
        else:
            token_ids, mask = TextBackbone.trim(
                self.item_token_ids[items], self.item_token_lengths[items]
            )
            text = self.backbone(token_ids, mask)
        return torch.cat([text, self.item_features[items]], dim=1)

    def item_vectors(self, items: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        """``(n, dim)`` item vectors from their head inputs ``(n, E + G)`` (``text_vectors``)
        and ID rows."""
        keep = ~self.cold_mask[items]  # cold items: text only
        if self.training and self.config.id_dropout > 0:
            keep = keep & (torch.rand(items.shape, device=items.device) >= self.config.id_dropout)
        return self.unit(self.item_head(text) + self.item_id(items) * keep.unsqueeze(1))

    def user_vectors(self, users: torch.Tensor) -> torch.Tensor:
        return self.unit(self.user_id(users) + self.user_head(self.user_features[users]))

    def unit(self, vectors: torch.Tensor) -> torch.Tensor:
        """``(n, dim)`` rows made unit length under ``score="cosine"``, else unchanged."""
        return F.normalize(vectors, dim=1) if self.config.score == "cosine" else vectors

    # ------------------------------------------------------------------ training
    def forward(self, batch: Batch) -> LossOutput:
        users, items = batch.users, batch.items  # (B,), (B, 1 + K)
        if items.shape[1] < 2:
            raise ColdbrewError("the lm model needs at least one negative per positive")
        # the backbone runs on every distinct item it is given: padding would cost a pass over
        # up to B·(1+K) texts, so dynamic mode trims (one host read) unless told fixed_shapes
        cpu_path = host_syncs_are_free(items, self.fixed_shapes)
        encodes = self.backbone is not None or self.tuned is not None
        trim = cpu_path or (encodes and not self.fixed_shapes)
        distinct, inverse = distinct_items(items, self.num_items, trim=trim)  # (n,), (B, 1 + K)
        text = self.text_vectors(distinct, rows=len(users))  # (n, E + G)
        item_rows = self.item_vectors(distinct, text)  # (n, dim)
        user_rows = self.user_vectors(users)  # (B, dim)
        scores = sampled_scores(user_rows, item_rows, inverse, fused=cpu_path)  # (B, 1 + K)
        if self.config.loss == "bpr":
            loss = F.softplus(scores[:, 1:] - scores[:, :1]).mean()  # −log σ(s_pos − s_neg)
        else:
            loss = info_nce(scores / self.config.temperature)
        return LossOutput(total=loss, terms={self.config.loss: loss})

    # ------------------------------------------------------------------ scoring
    def user_embeddings(self) -> torch.Tensor:
        users = torch.arange(self.num_users, device=self.user_features.device)
        return self.user_vectors(users)

    def item_embeddings(self) -> torch.Tensor:
        """Every item, warm by text + ID, cold by text alone; the backbone (dynamic mode) runs
        without gradients in batches of ``text_batch_size``."""
        items = torch.arange(self.num_items, device=self.cold_mask.device)
        if self.tuned is not None:
            text = self.tuned.all_vectors()
        elif self.backbone is None:
            text = self.item_text
        else:
            text = self.backbone.embed_all(
                self.item_token_ids, self.item_token_lengths, self.config.text_batch_size
            )
        return self.item_vectors(items, torch.cat([text, self.item_features], dim=1))

    @torch.no_grad()
    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """New items from their text (as cold items are scored) and, when the model reads
        feature blocks (``item_features``), their raw blocks ``(n, G)`` joined in the data's
        order (each row-normalised here, as the data's were): the backbone (the model's own in
        dynamic mode, else loaded for the call), then the item head. Blocks not given are taken
        as zeros, with a warning."""
        if texts is None:
            raise ColdbrewError("the lm model encodes a new item from its text (--item-text)")
        widths = list(self.feature_widths.values())
        if features is not None and not widths:
            raise ColdbrewError(
                "this lm model reads no item feature blocks (trained without --item-features "
                "or on data without any): give the new item's text alone"
            )
        device = self.cold_mask.device
        if features is None:
            if widths:
                warnings.warn(
                    f"the new item's feature blocks ({', '.join(self.feature_widths)}) are not "
                    "given (--item-vector) and are taken as zeros",
                    stacklevel=2,
                )
            blocks = torch.zeros((len(texts), self.item_features.shape[1]), device=device)
        else:  # checked before the backbone runs
            blocks = normalized_raw_blocks(features.to(device), widths)
            if len(blocks) != len(texts):
                raise ColdbrewError(f"{len(texts)} item texts but {len(blocks)} feature rows")
        backbone = self.loaded_backbone()
        if backbone is not None:  # the whole forward: lower layers, tuned top layers
            token_ids, lengths = backbone.tokenize(texts)
            text = backbone.embed_all(
                token_ids.to(device), lengths.to(device), self.config.text_batch_size
            )
        else:
            from coldbrew.data.text.embedder import encode_texts

            text = encode_texts(
                list(texts),
                backbone=self.config.backbone,
                pooling=self.config.pooling,
                max_length=self.config.max_length,
                cache=None,
                progress=False,
                device=device,
            ).to(device)
        return self.unit(self.item_head(torch.cat([text, blocks], dim=1)))

    # ------------------------------------------------------------------ bookkeeping
    def parameter_counts(self) -> dict[str, int]:
        """Trainable parameters by part, and the total including frozen backbone weights."""
        heads = sum(p.numel() for p in (*self.item_head.parameters(), *self.user_head.parameters()))
        ids = self.user_id.weight.numel() + self.item_id.weight.numel()
        backbone = self.loaded_backbone()
        backbone_trainable, backbone_total = (
            backbone.parameter_counts() if backbone is not None else (0, 0)
        )
        return {
            "heads": heads,
            "id_tables": ids,
            "backbone_trainable": backbone_trainable,
            "trainable": heads + ids + backbone_trainable,
            "total": heads + ids + backbone_total,
        }

    def describe(self) -> str:
        """One line: trainable parameters and where they are (printed by ``build``)."""
        counts = self.parameter_counts()
        share = 100.0 * counts["trainable"] / max(1, counts["total"])
        kind = "LoRA adapters" if self.config.lora else "backbone"
        backbone = self.loaded_backbone()
        tuned = "" if self.tuned is None else f", top {self.config.tune_layers} layer(s) tuned"
        return (
            f"lm ({self.config.lm_mode}{tuned}"
            + (f", {backbone.pooling} pooling" if backbone is not None else "")
            + f"): {counts['trainable']:,} trainable parameters of {counts['total']:,} "
            f"({share:.3g}%): "
            f"heads {counts['heads']:,}, ID tables {counts['id_tables']:,}, "
            f"{kind} {counts['backbone_trainable']:,}"
        )


def _accept_a_state_without_identity(module, state_dict, prefix, *_) -> None:
    """States saved before the identity was part of them load unchecked."""
    state_dict.setdefault(prefix + "_extra_state", {})
