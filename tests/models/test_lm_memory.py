"""The memory estimate's arithmetic on shapes small enough to add up by hand."""

from __future__ import annotations

import pytest

from coldbrew.models.lm.memory import (
    MINILM,
    BackboneShape,
    estimate_memory,
    expected_distinct,
    lora_size,
)

TINY = BackboneShape(parameters=100, layers=2, width=4, heads=2, intermediate=8)
SHAPES = dict(backbone=TINY, num_users=2, num_items=3, num_warm=2, dim=2, hidden=3, tokens=3)


def test_expected_distinct():
    assert expected_distinct(2, 2) == pytest.approx(1.5)  # 2 x (1 - (1/2)^2)
    assert expected_distinct(1, 10) == pytest.approx(1.0)
    assert expected_distinct(10_000, 50) == pytest.approx(50.0)
    assert expected_distinct(3, 1) == 1


def test_cache_mode_by_hand():
    estimate = estimate_memory(mode="cache", batch_size=2, **SHAPES)
    # heads: (4 + 4) x 3 + 2 x (3 + 3 x 2 + 2) = 46; ID tables (2 + 3) x 2 = 10; 56 weights
    assert estimate.parameters == 56 * 4
    # users 2 x 4 + items 3 x 4 floats
    assert estimate.cached_embeddings == (8 + 12) * 4
    # distinct of 2 x (1 + 1) draws over 2 warm items = 2 x (1 - 1/16) = 1.875
    # 1.875 x (4 + 6 + 2) + 2 x (4 + 6 + 2) + 2 x 2 x 2 = 54.5 values
    assert estimate.activations == int(54.5 * 4)
    assert estimate.gradients == 56 * 4 and estimate.optimizer == 2 * 56 * 4
    assert estimate.step == 218 + 224 + 448
    assert estimate.total == estimate.step + 224 + 80


def test_more_devices_split_the_batch_and_add_gradient_buckets():
    one = estimate_memory(mode="cache", batch_size=4, devices=1, **SHAPES)
    two = estimate_memory(mode="cache", batch_size=4, devices=2, **SHAPES)
    assert two.gradients == 2 * one.gradients  # DDP buckets beside the gradients
    assert two.activations < one.activations and two.parameters == one.parameters


def test_backbone_activations_by_mode():
    distinct = expected_distinct(2 * 2, 2)
    step_tokens = distinct * 3
    # per token per layer, LoRA: 4 x 4 + 2 x 8 = 32, attention 3 x 2 heads x 3 tokens = 18
    one_layer = step_tokens * 50
    output = step_tokens * 4
    heads_only = estimate_memory(mode="cache", batch_size=2, **SHAPES).activations
    frozen = estimate_memory(mode="frozen", batch_size=2, **SHAPES)
    lora = estimate_memory(mode="lora", batch_size=2, lora_parameters=16, **SHAPES)
    checkpointed = estimate_memory(
        mode="lora", batch_size=2, lora_parameters=16, checkpointing=True, **SHAPES
    )
    # frozen: one layer's working set, 2 x 4 + 2 x 8 = 24 values per token
    assert frozen.activations == pytest.approx(heads_only + (step_tokens * 24 + output) * 4, abs=4)
    assert lora.activations == pytest.approx(heads_only + (2 * one_layer + output) * 4, abs=4)
    expected = heads_only + (step_tokens * 4 * 2 + one_layer + output) * 4
    assert checkpointed.activations == pytest.approx(expected, abs=4)
    assert lora.gradients == (56 + 16) * 4 and frozen.gradients == 56 * 4
    assert frozen.parameters == (56 + 100) * 4 and lora.parameters == (56 + 100 + 16) * 4
    full = estimate_memory(mode="full", batch_size=2, **SHAPES)
    assert full.optimizer == 2 * (56 + 100) * 4
    # full fine-tuning saves 10.5 x 4 + 16 + 18 = 76 values per token per layer
    assert full.activations == pytest.approx(
        heads_only + (2 * step_tokens * 76 + output) * 4, abs=4
    )


def test_known_distinct_items_replace_the_expectation():
    known = estimate_memory(mode="cache", batch_size=2, distinct_items=1, **SHAPES)
    # 1 x (4 + 6 + 2) + 2 x (4 + 6 + 2) + 2 x 2 x 2 = 44 values
    assert known.activations == 44 * 4


def test_minilm_shape_and_lora_size():
    config = {
        "hidden_size": 384,
        "num_hidden_layers": 6,
        "num_attention_heads": 12,
        "intermediate_size": 1536,
    }
    assert BackboneShape.from_config(config, MINILM.parameters) == MINILM
    assert lora_size(MINILM, 4) == 36_864  # 6 layers x 2 modules x 4 x (384 + 384)


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="mode must be one of"):
        estimate_memory(mode="dynamic", batch_size=2, **SHAPES)


def test_tune_mode_by_hand():
    tune = estimate_memory(
        mode="tune", batch_size=2, lora_parameters=16, tune_layers=1, tune_items=1, **SHAPES
    )
    heads_only = estimate_memory(mode="cache", batch_size=2, **SHAPES).activations
    # one fresh item of 3 tokens through one LoRA layer: 3 x 50 values, output 3 x 4
    assert tune.activations == pytest.approx(heads_only + (3 * 50 + 3 * 4) * 4, abs=4)
    # token ids 3 x (3 + 1) int64; states and table 3 items x (3 + 1) x 4 floats; users 2 x 4
    assert tune.cached_embeddings == 3 * 4 * 8 + 3 * 4 * 4 * 4 + 2 * 4 * 4
    assert tune.gradients == (56 + 16) * 4 and tune.parameters == (56 + 100 + 16) * 4
    # the fresh items follow the rows: a micro-batch of 1 row takes ceil(4 x 1 / 2) = 2 of the
    # expected distinct items (fewer than 2 here: 1 x 2 draws over 2 warm items give 1.5)
    half = estimate_memory(
        mode="tune", batch_size=2, lora_parameters=16, tune_items=4, devices=2, **SHAPES
    )
    one_row = estimate_memory(mode="cache", batch_size=2, devices=2, **SHAPES).activations
    assert half.activations == pytest.approx(one_row + 1.5 * 3 * (50 + 4) * 4, abs=4)


def test_lora_in_the_top_layers_only():
    assert lora_size(MINILM, 8, layers=1) == 12_288  # 1 layer x 2 modules x 8 x (384 + 384)


def test_a_runs_estimate_reads_the_backbone_config(tmp_path):
    import json
    from types import SimpleNamespace

    from coldbrew.models.lm import LMConfig
    from coldbrew.models.lm.memory import approximate_parameters, estimate_for_run

    config = {"model_type": "bert", "vocab_size": 10, "max_position_embeddings": 6}
    config |= {"hidden_size": 4, "num_hidden_layers": 2, "num_attention_heads": 2}
    config |= {"intermediate_size": 8}
    (tmp_path / "config.json").write_text(json.dumps(config))
    # tables (10 + 6) x 4 = 64; a layer 4 x (16 + 4) + 2 x 4 x 8 + 8 + 5 x 4 = 172
    assert approximate_parameters(config) == 64 + 2 * 172
    data = SimpleNamespace(num_users=2, num_items=3, warm_items=[0, 1], user_text=None)
    options = LMConfig(backbone=str(tmp_path), lm_mode="tune", lora="4,8", dim=2, hidden=3)
    options.max_length, options.num_neg, options.tune_items = 3, 1, 1
    estimate = estimate_for_run(options, data, batch_size=2)
    # adapters: 1 layer x 2 modules x 4 x (4 + 4) = 64; the rest as test_tune_mode_by_hand
    expected = estimate_memory(
        mode="tune",
        batch_size=2,
        lora_parameters=64,
        tune_items=1,
        **{**SHAPES, "backbone": BackboneShape(408, 2, 4, 2, 8)},
    )
    assert estimate == expected
