"""Typed configuration: aliases, model sections, YAML and command-line types, bounds."""

from __future__ import annotations

import pytest
import yaml

from coldbrew.config import (
    IGNORED_ORIGINAL,
    Flags,
    TrainConfig,
    config_yaml,
    load_yaml,
    make_config,
)
from coldbrew.errors import ColdbrewError
from coldbrew.models.clcrec.config import CLCRecConfig


def test_defaults_come_from_the_dataclasses():
    config = make_config()
    assert config.model == "clcrec" and config.model_options == CLCRecConfig()
    assert config.lr == 0.0027 and config.model_options.num_neg == 64 and config.grad_accum == 1
    assert make_config({"model": "lstm"}).lr == 0.002  # the run default; clcrec and lm override it
    assert make_config({"model": "lm"}).lr == 0.0013


def test_the_original_protocol_restores_the_original_settings():
    config = make_config({"protocol": "original"})
    options = config.model_options
    assert (config.lr, config.batch_size, options.num_neg, options.reg_weight) == (
        0.001,
        256,
        128,
        0.1,
    )
    assert (options.lr_lambda, options.temp_value, options.distinct_negatives) == (0.5, 2.0, True)
    assert make_config({"protocol": "original", "lr": 0.01, "num_neg": 8}).lr == 0.01  # user wins


def test_original_names_map_to_fields():
    config = make_config(
        {
            "l_r": 0.001,
            "dim_E": 32,
            "num_epoch": 5,
            "topK": 15,
            "data_path": "x",
            "model_name": "CLCRec",
        }
    )
    assert (config.lr, config.model_options.dim, config.epochs, config.data) == (0.001, 32, 5, "x")
    assert config.resolved_ks() == [10, 15, 20, 50]  # topK joins the cut-offs
    assert config.model == "clcrec"


def test_ignored_original_flags_are_accepted_with_a_note():
    config = make_config({"num_workers": 4, "step": 2000, "save_file": "a", "prefix": "b"})
    assert len(config.notes) == 4
    assert any("no loader workers are needed" in note for note in config.notes)
    assert set(IGNORED_ORIGINAL) >= {"num_workers", "step", "PATH_weight_load", "PATH_weight_save"}


def test_no_cuda_means_cpu():
    assert make_config({"no_cuda": True}).device == "cpu"
    assert make_config(Flags({"no-cuda": "true"})).device == "cpu"


@pytest.mark.parametrize(
    "flags, features",
    [
        ({}, None),  # nothing said: every modality
        ({"has_v": True, "has_t": True}, ["visual", "text"]),
        ({"has_v": False, "has_a": True}, ["acoustic"]),
        ({"has_v": True, "features": ["genre"]}, ["genre"]),  # --features wins
    ],
)
def test_has_flags_select_features(flags, features):
    assert make_config(flags).resolved_features() == features


@pytest.mark.parametrize("text, ks", [("10,20", [10, 20]), (" 5 , 50 ", [5, 50]), ("20", [20])])
def test_ks_from_text(text, ks):
    assert make_config(Flags({"ks": text})).ks == ks


@pytest.mark.parametrize("text", ["abc", "", "10,x", "0", "-5"])
def test_bad_ks_are_one_line_errors(text):
    with pytest.raises(ColdbrewError, match="ks"):
        make_config(Flags({"ks": text}))


def test_model_options_flat_or_nested_in_yaml(tmp_path):
    flat = make_config({"dim": 16, "num_neg": 8})
    nested = make_config({"clcrec": {"dim": 16, "num_neg": 8}})
    assert flat.model_options == nested.model_options
    assert (flat.model_options.dim, flat.model_options.num_neg) == (16, 8)
    # config.yaml reads back to the same configuration
    path = tmp_path / "config.yaml"
    path.write_text(config_yaml(flat))
    saved = yaml.safe_load(path.read_text())
    assert saved["clcrec"]["dim"] == 16 and "dim" not in saved
    assert make_config(load_yaml(path)) == flat


def test_unknown_keys_and_other_models_options_are_refused():
    with pytest.raises(ColdbrewError, match="unknown config key 'nope'"):
        make_config({"nope": 1})
    with pytest.raises(ColdbrewError, match="unknown model 'SSL'; available: clcrec"):
        make_config({"model_name": "SSL"})


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("epochs", "two", "an integer"),
        ("batch_size", "512", "an integer"),
        ("ks", 10, "a list of integers"),
        ("dim", 8.7, "an integer"),
        ("epochs", 1.5, "an integer"),
        ("quiet", "no", "true or false"),
        ("compile", "false", "true or false"),
        ("lr", "fast", "a number"),
        ("lr", True, "a number"),
        ("device", 3, "a string"),
    ],
)
def test_yaml_values_of_the_wrong_type_name_the_key_and_the_type(key, value, expected):
    with pytest.raises(ColdbrewError, match=f"option '{key}': expected {expected}"):
        make_config({key: value})


def test_yaml_1e_minus_3_is_a_number():
    # YAML 1.1 reads 1e-3 (no dot) as the string "1e-3"
    loaded = yaml.safe_load("lr: 1e-3\nepochs: 3\n")
    assert loaded["lr"] == "1e-3"
    assert make_config(loaded).lr == 0.001


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("hidden", 0, "'hidden' must be >= 1"),
        ("hidden", -1, "'hidden' must be >= 1"),
        ("reg_weight", -5, "'reg_weight' must be >= 0"),
        ("temp_value", float("inf"), "'temp_value' must be a finite number"),
        ("temp_value", 0.0, "'temp_value' must be > 0"),
        ("top_k", 0, "'top_k' must be >= 1"),
        ("log_every", 0, "'log_every' must be >= 1"),
        ("eval_chunk_elements", 0, "'eval_chunk_elements' must be >= 1"),
        ("seed", -1, "'seed' must be >= 0"),
        ("seed", 99999999999, "'seed' must be <= 4294967295"),
        ("num_sample", 2.0, "'num_sample' must be <= 1"),
        ("precision", "fp64", "'precision' must be one of"),
        ("grad_accum", 0, "'grad_accum' must be >= 1"),
    ],
)
def test_out_of_range_values_are_refused(key, value, message):
    with pytest.raises(ColdbrewError, match=message):
        make_config({key: value})


@pytest.mark.parametrize("device", ["foo", "CPU", "mps", "cuda:x", "cpu:0"])
def test_unknown_devices_are_refused(device):
    with pytest.raises(ColdbrewError, match="device must be auto, cpu, cuda or cuda:N"):
        make_config({"device": device})


@pytest.mark.parametrize(
    "metric, message",
    [
        ("cold/recall@15", "K=15 is not measured"),
        ("cold/foo@20", "must look like"),
        ("recall@20", "must look like"),
    ],
)
def test_early_stop_metrics_that_are_never_measured_are_refused(metric, message):
    with pytest.raises(ColdbrewError, match=message):
        make_config({"early_stop_metric": metric})


def test_command_line_text_is_parsed():
    config = make_config(
        Flags(
            {
                "lr": "0.01",
                "epochs": "3",
                "quiet": "true",
                "grad_clip": "none",
                "features": "genre,text",
            }
        )
    )
    assert (config.lr, config.epochs, config.quiet, config.grad_clip) == (0.01, 3, True, None)
    assert config.features == ["genre", "text"]


def test_only_flags_are_parsed_from_text():
    with pytest.raises(ColdbrewError, match="option 'batch_size': expected an integer, got '512'"):
        make_config({"batch_size": "512"}, Flags({"epochs": "2"}))  # the YAML layer is typed


def test_to_dict_round_trips():
    config = make_config({"lr": 0.01, "dim": 8, "ks": [5, 10]})
    assert make_config(config.to_dict()) == config
    assert isinstance(TrainConfig().model_options, CLCRecConfig)


def test_a_saved_run_lacking_a_newer_option_keeps_the_value_it_was_trained_with(tmp_path):
    import yaml

    from coldbrew.config import load_saved_config

    saved = make_config({"model": "lm", "loss": "bpr"}).to_dict()
    for name in ("score", "item_features"):  # options added after such a run was saved
        del saved["lm"][name]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(saved))
    options = make_config(load_saved_config(path)).model_options
    assert (options.score, options.item_features, options.loss) == ("dot", False, "bpr")
    assert make_config({"model": "lm"}).model_options.score == "cosine"  # new runs: today's


def test_a_saved_clcrec_run_keeps_its_neighbor_term_over_every_user(tmp_path):
    import yaml

    from coldbrew.config import load_saved_config

    saved = make_config({"neighbor_loss": True}).to_dict()
    del saved["clcrec"]["neighbor_negatives"]  # saved before the option existed
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(saved))
    assert make_config(load_saved_config(path)).model_options.neighbor_negatives == 0  # all
    assert make_config({"neighbor_loss": True}).model_options.neighbor_negatives == 255


@pytest.mark.parametrize(
    "text, message",
    [
        ("epochs: 1\nepochs: 3\n", "key 'epochs' is given twice \\(line 2, column 1\\)"),
        ("clcrec:\n  dim: 8\n  dim: 16\n", "key 'dim' is given twice \\(line 3, column 3\\)"),
        ("ks: [10, 20\n", "is not valid YAML: expected ',' or ']'"),
    ],
)
def test_yaml_mistakes_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "preset.yaml"
    path.write_text(text)
    with pytest.raises(ColdbrewError, match=message) as error:
        load_yaml(path)
    assert "\n" not in str(error.value)


def test_a_yaml_file_that_is_not_text_is_one_line(tmp_path):
    path = tmp_path / "preset.yaml"
    path.write_bytes(b"\xff\xfe\x00epochs")
    with pytest.raises(ColdbrewError, match="is not UTF-8 text"):
        load_yaml(path)


def test_a_models_section_may_hold_its_own_run_options():
    # a board's preset: deepmusic trains 3 epochs at lr 0.002, the others keep the flat lr
    preset = {"lr": 0.01, "epochs": 9, "deepmusic": {"lr": 0.002, "epochs": 3, "hidden": 512}}
    deepmusic = make_config(preset, {"model": "deepmusic"})
    gar = make_config(preset, {"model": "gar"})
    assert (deepmusic.lr, deepmusic.epochs, deepmusic.model_options.hidden) == (0.002, 3, 512)
    assert (gar.lr, gar.epochs) == (0.01, 9)
    # the section wins over the same layer's flat key whatever their order; a later layer wins
    # over both
    reordered = {"deepmusic": {"lr": 0.002}, "lr": 0.01, "model": "deepmusic"}
    assert make_config(reordered).lr == 0.002
    assert make_config(preset, {"model": "deepmusic", "lr": 0.5}).lr == 0.5


@pytest.mark.parametrize("key", ["data", "seed", "text_encoder", "report_share"])
def test_a_models_section_may_not_set_what_models_share(key):
    value = {"data": "ml-100k", "seed": 2, "text_encoder": "mpnet", "report_share": 0.3}[key]
    with pytest.raises(ColdbrewError, match=f"deepmusic: '{key}' is shared by every model"):
        make_config({"model": "deepmusic", "deepmusic": {key: value}})
