"""Tune mode's split backbone: the held lower-layer states and the tuned top layers give the
whole forward, on tiny random BERT, MPNet and GPT-2 models; LoRA goes into the top layers only;
unsupported architectures and impossible splits are refused."""

from __future__ import annotations

import pytest
import torch

from coldbrew.data.text.backbones import LoadedBackbone
from coldbrew.errors import ColdbrewError
from coldbrew.models.lm.backbone import TextBackbone
from coldbrew.models.lm.config import LoraSpec
from coldbrew.models.lm.split import layer_count, lower_states, upper_states

transformers = pytest.importorskip("transformers")
pytest.importorskip("peft")

VOCAB, WIDTH, LAYERS = 60, 32, 3


def tiny_model(kind: str):
    """A randomly initialised 3-layer, 32-wide model of ``kind`` (no tokenizer needed)."""
    torch.manual_seed(0)
    shape = {"hidden_size": WIDTH, "num_hidden_layers": LAYERS, "num_attention_heads": 2}
    if kind == "bert":
        config = transformers.BertConfig(vocab_size=VOCAB, intermediate_size=64, **shape)
        return transformers.BertModel(config, add_pooling_layer=False).eval()
    if kind == "mpnet":
        config = transformers.MPNetConfig(vocab_size=VOCAB, intermediate_size=64, **shape)
        return transformers.MPNetModel(config, add_pooling_layer=False).eval()
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=WIDTH, n_layer=LAYERS, n_head=2)
    return transformers.GPT2Model(config).eval()


def tokens() -> tuple[torch.Tensor, torch.Tensor]:
    """Three right-padded rows of 9, 5 and 2 real tokens (ids above MPNet's padding id 1)."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(2, VOCAB, (3, 9), generator=generator)
    mask = (torch.arange(9) < torch.tensor([9, 5, 2])[:, None]).long()
    return ids * mask + (1 - mask), mask  # padded positions hold id 1


def backbone(kind: str, tune_layers: int = 1, lora: LoraSpec | None = None) -> TextBackbone:
    loaded = LoadedBackbone(tokenizer=None, model=tiny_model(kind), identity="test")
    return TextBackbone(loaded, name=kind, pooling="mean", lora=lora, tune_layers=tune_layers)


KINDS = ["bert", "mpnet", "gpt2"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("split", [0, 1, 2, 3])
def test_lower_then_upper_states_are_the_whole_forward(kind, split):
    model = tiny_model(kind)
    ids, mask = tokens()
    with torch.no_grad():
        whole = model(input_ids=ids, attention_mask=mask).last_hidden_state
        halves = upper_states(model, split, lower_states(model, split, ids, mask), mask)
    real = mask.bool()  # padded positions' states are not read by pooling
    torch.testing.assert_close(halves[real], whole[real], atol=1e-5, rtol=0)
    assert len(model.get_submodule("h" if kind == "gpt2" else "encoder.layer")) == LAYERS


@pytest.mark.parametrize("kind", KINDS)
def test_cached_path_equals_the_full_forward_with_lora_at_zero(kind):
    text = backbone(kind, tune_layers=1, lora=LoraSpec(4, 8))
    ids, mask = tokens()
    with torch.no_grad():
        whole = text(ids, mask)  # (3, width), unit length
        cached = text.upper(text.lower(ids, mask), mask)
    torch.testing.assert_close(cached, whole, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_trained_adapters_sit_in_the_top_layers_and_both_paths_agree(kind):
    text = backbone(kind, tune_layers=2, lora=LoraSpec(4, 8))
    adapters = [name for name, p in text.model.named_parameters() if p.requires_grad]
    assert adapters and all(".lora_" in name for name in adapters)
    layer_index = {int(name.split(".")[2 if kind != "gpt2" else 1]) for name in adapters}
    assert layer_index == {1, 2}  # the top two of three
    ids, mask = tokens()
    before = text.upper(text.lower(ids, mask), mask).detach()
    with torch.no_grad():
        for name, parameter in text.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)  # as if trained
    with torch.no_grad():
        whole = text(ids, mask)
        cached = text.upper(text.lower(ids, mask), mask)
    torch.testing.assert_close(cached, whole, atol=1e-5, rtol=0)
    assert (cached - before).abs().max() > 1e-3  # the adapters do change the vectors


def test_only_the_tuned_layers_receive_gradients():
    text = backbone("bert", tune_layers=1, lora=LoraSpec(4, 8))
    ids, mask = tokens()
    states = text.lower(ids, mask)
    assert not states.requires_grad  # the lower layers run without autograd
    text.upper(states, mask).sum().backward()
    with_grad = {name for name, p in text.model.named_parameters() if p.grad is not None}
    assert with_grad and all("layer.2." in name and ".lora_" in name for name in with_grad)


def test_the_tuned_backbone_keeps_dropout_off_while_training():
    text = backbone("bert", tune_layers=1, lora=LoraSpec(4, 8))
    text.train()
    assert not text.model.training and text.training


def test_an_architecture_without_a_recipe_is_refused():
    config = transformers.DistilBertConfig(vocab_size=VOCAB, dim=WIDTH, n_layers=2, n_heads=2)
    loaded = LoadedBackbone(None, transformers.DistilBertModel(config), "test")
    with pytest.raises(ColdbrewError, match="splits BERT, MPNet and GPT-2.*'distilbert'"):
        TextBackbone(loaded, name="distil", pooling="mean", lora=LoraSpec(4, 8), tune_layers=1)


@pytest.mark.parametrize("layers", [0, 4])
def test_more_tuned_layers_than_the_backbone_has_is_refused(layers):
    with pytest.raises(ColdbrewError, match="--tune-layers must be 1 to 3"):
        backbone("gpt2", tune_layers=layers, lora=LoraSpec(4, 8))
    assert layer_count(tiny_model("gpt2")) == LAYERS
