"""``build(dataset, config)``: texts -> embeddings (cached) -> backbone -> ``LMRecommender``;
``checkpoint(model)`` / ``restore(payload, dataset)``: only trainable state, rebuilt backbone.

Text embeddings go through ``coldbrew.data.text.embedder.encode_texts``: computed once in
batches (with a progress bar on a terminal) and cached on disk under the backbone's identity
and the texts' hash, so a second build with the same backbone and texts never loads the model
in cache mode. Dynamic mode always loads it (it runs in the step); on a cache miss that one
loaded copy also embeds the catalogue, before any adapter is added. Tune mode loads it too, and
its item vectors come from its own split pass (``TunedText``): the lower layers' states are
computed once per backbone, texts and split and cached on disk, the users' history from the
first vectors, which are the frozen backbone's (LoRA starts at zero; cached beside them).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from coldbrew.data.dataset import Dataset
from coldbrew.data.text import backbones, embedder
from coldbrew.models.content import dense_blocks
from coldbrew.models.lm.backbone import TextBackbone
from coldbrew.models.lm.config import LMConfig
from coldbrew.models.lm.model import LMRecommender
from coldbrew.models.lm.text import require_item_texts, user_history
from coldbrew.models.lm.tuned import TunedText


def build(
    dataset: Dataset,
    config: LMConfig,
    *,
    device: torch.device | str | None = None,
    progress: bool = True,
    rows_per_step: int | None = None,
) -> LMRecommender:
    """The model for ``dataset`` on the CPU (``device``: where texts are embedded on a cache
    miss, CUDA when available). Prints the trainable parameter count unless ``progress`` is off.
    ``rows_per_step``: the run's batch size, which tune mode's ``tune_items`` is counted per."""
    config.validate()
    item_texts = require_item_texts(dataset)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    loaded = None
    if config.lm_mode != "cache":
        loaded = backbones.load_backbone(config.backbone, "cpu", progress=progress)
    embed = _embedder(config, loaded, device, progress)
    tuned = None
    if config.lm_mode == "tune":
        tuned = _tuned_text(config, loaded, item_texts, rows_per_step, progress)
    # texts -> vectors is data preparation, done for real even while ``coldbrew memory`` traces
    # the build on fake tensors (the vectors are then held like any loaded data)
    with unset_fake_temporarily():
        # tune mode: its first vectors, the frozen backbone's (the adapters start at zero)
        item_text = tuned.first_vectors() if tuned is not None else embed(item_texts)
        user_parts = [user_history(dataset.train, item_text)]
        if dataset.user_text is not None:
            user_parts.append(embed(list(dataset.user_text)))
        user_features = torch.cat(user_parts, dim=1)  # (U, E) or (U, 2E)
    cold_items = torch.from_numpy(dataset.cold_items)
    item_features = feature_blocks(dataset) if config.item_features else None
    if loaded is None:
        text_source = {"item_text": item_text}
    elif tuned is not None:
        text_source = {"tuned": tuned}
    else:
        backbone = TextBackbone(
            loaded,
            name=config.backbone,
            pooling=config.pooling,
            max_length=config.max_length,
            freeze=config.freeze,
            lora=config.lora_spec(),
            grad_checkpointing=config.grad_checkpointing,
        )
        text_source = {"backbone": backbone, "item_tokens": backbone.tokenize(item_texts)}
    model = LMRecommender(
        config,
        num_users=dataset.num_users,
        cold_items=cold_items,
        user_features=user_features,
        item_features=item_features,
        backbone_identity=backbones.backbone_identity(config.backbone),
        **text_source,
    )
    if progress:
        print(model.describe(), file=sys.stderr)
    return model


def _tuned_text(
    config: LMConfig,
    loaded: backbones.LoadedBackbone,
    item_texts: list[str],
    rows_per_step: int | None,
    progress: bool,
) -> TunedText:
    """The backbone cut below its top ``tune_layers`` layers, LoRA in them, and the catalogue's
    lower-layer states computed (the states' memory checked first)."""
    backbone = TextBackbone(
        loaded,
        name=config.backbone,
        pooling=config.pooling,
        max_length=config.max_length,
        lora=config.lora_spec(),
        tune_layers=config.tune_layers,
    )
    with unset_fake_temporarily():
        return TunedText(
            backbone,
            *backbone.tokenize(item_texts),
            tune_items=config.tune_items,
            rows_per_step=rows_per_step,
            batch_size=config.text_batch_size,
            progress=progress,
        )


def feature_blocks(dataset: Dataset) -> dict[str, torch.Tensor]:
    """The data's dense item feature blocks ``(N, width)`` by name, each row-normalised. Left
    out: the precomputed text vectors (the backbone reads the text) and word-id blocks
    (TikTok's, which need a learned word table)."""
    return dense_blocks(dataset.features, skip=("text",))


def _embedder(
    config: LMConfig,
    loaded: backbones.LoadedBackbone | None,
    device: torch.device,
    progress: bool,
) -> Callable[[list[str]], torch.Tensor]:
    """``texts -> (N, E)`` through the cache; the backbone is loaded at most once, on a miss."""
    held: list[backbones.LoadedBackbone] = []

    def backbone_on_device() -> backbones.LoadedBackbone:
        if not held:
            held.append(
                loaded or backbones.load_backbone(config.backbone, device, progress=progress)
            )
        held[0].model.to(device)
        return held[0]

    def embed(texts: list[str]) -> torch.Tensor:
        embeddings = embedder.encode_texts(
            texts,
            backbone=config.backbone,
            pooling=config.pooling,
            max_length=config.max_length,
            batch_size=config.text_batch_size,
            progress=progress,
            loaded=backbone_on_device,
        )
        if loaded is not None:
            loaded.model.to("cpu")  # the model's backbone starts on the CPU like the rest
        return embeddings

    return embed


def build_for_run(dataset: Dataset, config) -> LMRecommender:
    """The registry's builder: ``build`` with a run's ``config.model_options``."""
    return build(
        dataset, config.model_options, progress=not config.quiet, rows_per_step=config.batch_size
    )
