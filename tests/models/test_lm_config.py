"""LMConfig: defaults, the LoRA flag's parsing, refused combinations, and no torch import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coldbrew.data.text import backbones
from coldbrew.errors import ColdbrewError
from coldbrew.models.lm import config as config_module
from coldbrew.models.lm.config import LMConfig, LoraSpec


def test_lora_spec_parses_rank_alpha_and_modules():
    assert LoraSpec.parse("8,16") == LoraSpec(8, 16.0, ())
    assert LoraSpec.parse(" 4, 8.5, query ,value") == LoraSpec(4, 8.5, ("query", "value"))


@pytest.mark.parametrize("text", ["8", "a,16", "8,x", "0,16", "8,-1", ""])
def test_bad_lora_spec_is_an_error(text):
    with pytest.raises(ColdbrewError, match="--lora"):
        LoraSpec.parse(text)


def test_num_neg_defaults_follow_the_loss():
    assert LMConfig(loss="bpr").resolved_num_neg() == 1  # the seed's (user, pos, neg) triples
    assert LMConfig().resolved_num_neg() == 128  # infonce, the default
    assert LMConfig(loss="infonce", num_neg=4).resolved_num_neg() == 4


def test_a_runs_saved_settings_record_the_negatives_it_drew_not_null():
    from coldbrew.config import config_yaml, make_config

    for loss, expected in (("infonce", 128), ("bpr", 1)):
        config = make_config({"model": "lm", "loss": loss})
        assert config.to_dict()["lm"]["num_neg"] == expected
        assert f"num_neg: {expected}\n" in config_yaml(config)
    # a run saved with null (before) reads back as the same number
    assert make_config({"model": "lm", "lm": {"num_neg": None}}).model_options.num_neg == 128


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lm_mode": "online"}, "lm_mode must be one of cache, dynamic, tune"),
        ({"loss": "hinge"}, "loss must be bpr or infonce"),
        ({"pooling": "max"}, "pooling must be one of"),
        ({"lora": "8,16"}, "apply to lm_mode=dynamic or tune"),
        ({"freeze": True}, "apply to lm_mode=dynamic or tune"),
        ({"lm_mode": "tune", "freeze": True}, "tune mode trains LoRA adapters"),
        ({"lm_mode": "tune", "grad_checkpointing": True}, "is for dynamic mode"),
        ({"lm_mode": "tune", "tune_items": 0}, "tune_layers and tune_items must be positive"),
        ({"lm_mode": "dynamic", "freeze": True, "lora": "8,16"}, "exclude each other"),
        ({"lm_mode": "dynamic", "freeze": True, "grad_checkpointing": True}, "needs a trained"),
        ({"grad_checkpointing": True}, "needs a trained"),
        ({"lm_mode": "dynamic", "lora": "8"}, "R,ALPHA"),
        ({"id_dropout": 1.0}, "id_dropout"),
        ({"num_neg": 0}, "num_neg"),
        ({"dim": 0}, "dim and hidden"),
    ],
)
def test_impossible_combinations_are_refused(options, message):
    with pytest.raises(ColdbrewError, match=message):
        LMConfig(**options)


def test_trains_backbone_only_in_dynamic_mode_without_freeze():
    assert not LMConfig().trains_backbone
    assert not LMConfig(lm_mode="dynamic", freeze=True).trains_backbone
    assert LMConfig(lm_mode="dynamic", lora="4,8").trains_backbone
    assert LMConfig(lm_mode="dynamic").trains_backbone  # full fine-tuning
    assert LMConfig(lm_mode="tune").trains_backbone


def test_tune_mode_trains_lora_by_default_and_records_it():
    from coldbrew.config import config_yaml, make_config

    config = make_config({"model": "lm", "lm_mode": "tune"})
    assert config.model_options.lora == "8,16"
    assert "lora: 8,16\n" in config_yaml(config) and "lm_mode: tune\n" in config_yaml(config)
    assert LMConfig(lm_mode="tune", lora="4,8,query").lora == "4,8,query"
    assert LMConfig().lora is None  # cache mode stays without adapters


def test_config_module_imports_no_torch():
    # the CLI builds its flags from this dataclass; importing it must not pull in torch
    code = "import sys, coldbrew.models.lm.config; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pooling_names_agree_with_the_text_encoder():
    assert config_module.POOLINGS == backbones.POOLINGS
