"""A tiny sentence-transformers folder (2-layer, 32-wide BERT, word-level tokenizer) for the
text encoder tests: no hub, no packaged weights."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from lm_support import ITEM_TEXTS

POOLING_KEYS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token"}


def tiny_sentence_folder(
    folder: Path,
    *,
    pooling: str = "mean",
    normalize: bool = True,
    max_length: int | None = 64,
    seed: int = 0,
) -> Path:
    """A folder laid out as ``SentenceTransformer.save`` lays one out: the transformer at the
    top, ``1_Pooling/config.json``, an optional Normalize module, ``sentence_bert_config.json``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(
        ITEM_TEXTS, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[CLS]"])
    )
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]"
    )
    wrapped.save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(wrapped),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    if normalize:
        modules.append(
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            }
        )
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    flags = {key: key == POOLING_KEYS.get(pooling) for key in POOLING_KEYS.values()}
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {"word_embedding_dimension": 32, **flags, "pooling_mode_max_tokens": pooling == "max"}
        )
    )
    if max_length is not None:
        (folder / "sentence_bert_config.json").write_text(
            json.dumps({"max_seq_length": max_length, "do_lower_case": False})
        )
    return folder
