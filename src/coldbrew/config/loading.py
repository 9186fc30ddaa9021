"""A ``TrainConfig`` from layers of options, later over earlier: a model's own run defaults,
the protocol's, YAML presets, command-line flags (``make_config``); the options given that a
model cannot use (``check_usable_options``).

In YAML the model's options may be written flat (``dim: 64``) or under the model's name
(``clcrec: {dim: 64}``); on the command line they are flags like any other (``--dim 64``).
Every flag of the original CLCRec ``main.py`` is accepted: mapped where it has a meaning here
(``--l_r``, ``--dim_E``, ``--num_epoch``, ``--no-cuda`` ...), otherwise accepted with a one-line
note (``--num_workers``: no loader workers are needed). No torch is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coldbrew.config.run_options import FIELDS, SHARED_BY_MODELS, TRAINING_OPTIONS, TrainConfig
from coldbrew.errors import ColdbrewError
from coldbrew.options import coerce, hints

# original CLCRec name -> coldbrew field
ALIASES = {
    "l_r": "lr",
    "dim_E": "dim",
    "num_epoch": "epochs",
    "topK": "top_k",
    "data_path": "data",
    "model_name": "model",
}

# original CLCRec flags with no meaning here: accepted, with the note a run prints
IGNORED_ORIGINAL = {
    "num_workers": "no loader workers are needed: batches are made on the device",
    "step": "evaluation chunks are sized by --eval-chunk-elements, not a number of users",
    "save_file": "results are written to RUN_DIR/results.json (--out)",
    "prefix": "results are written to RUN_DIR/results.json (--out)",
    "PATH_weight_save": "the best weights are saved to RUN_DIR/best.pt",
    "PATH_weight_load": "weights are not loaded from a file; continue a run with --resume RUN_DIR",
}

# --protocol original: the original CLCRec's settings under the user's own (given options win)
PROTOCOL_DEFAULTS = {
    "original": {
        "batch_size": 256,
        "lr": 0.001,
        "epochs": 1000,
        "patience": 7,  # the original stops at the 7th epoch without improvement
        "early_stop_metric": "all/recall@10",
        "distinct_negatives": True,
        "report_share": 0.0,  # the original selects and reports on the same validation items
        # the model settings of the original README's MovieLens command
        "num_neg": 128,
        "reg_weight": 0.1,
        "lr_lambda": 0.5,
        "temp_value": 2.0,
    },
}


def canonical_key(key: str) -> str:
    """``--batch-size``/``batch_size`` -> ``batch_size``; original names via ``ALIASES``."""
    if not isinstance(key, str):  # YAML allows any key: ``? `` alone is a null one
        raise ColdbrewError(f"option names are text, not {key!r}")
    if key in ALIASES:
        return ALIASES[key]
    key = key.replace("-", "_")
    return ALIASES.get(key, key)


def _last_value(layers: tuple[dict[str, Any], ...], field_name: str, default: Any) -> Any:
    """The value the last layer that sets ``field_name`` gives it (aliases included)."""
    value = default
    for layer in layers:
        for key, given in layer.items():
            if canonical_key(key) == field_name:
                value = given
    return value


def model_name(layers: tuple[dict[str, Any], ...]) -> str:
    from coldbrew.registry import resolve_model_name

    name = _last_value(layers, "model", TrainConfig.__dataclass_fields__["model"].default)
    if not isinstance(name, str):
        raise ColdbrewError(f"option 'model': expected a string, got {name!r}")
    return resolve_model_name(name)


class Flags(dict):
    """Command-line values: text to parse (``"0.01"``, ``"true"``, ``"10,20"``), where a YAML
    layer's values must already have their type."""


# a preset's section naming a leaderboard's models, blends and seeds
# (coldbrew.research.boards.leaderboard.board_preset); no run option
BOARD_SECTION = "leaderboard"


def make_config(*layers: dict[str, Any]) -> TrainConfig:
    """Merge dicts (later wins) over the defaults; unknown keys and wrong types are an error.

    A layer given as ``Flags`` holds command-line text; any other layer holds typed values
    (YAML, Python).
    """
    from coldbrew.registry import MODELS

    model = model_name(layers)
    protocol = _last_value(layers, "protocol", TrainConfig.__dataclass_fields__["protocol"].default)
    if isinstance(protocol, str) and protocol in PROTOCOL_DEFAULTS:  # else refused as typed
        defaults = PROTOCOL_DEFAULTS[protocol]
        section_fields = hints(MODELS[model].config)
        layers = (
            {k: v for k, v in defaults.items() if k in FIELDS or k in section_fields},
            *layers,
        )
    layers = (MODELS[model].run_defaults, *layers)
    section_type = MODELS[model].config
    run_types, section_types = hints(TrainConfig), hints(section_type)
    run_values: dict[str, Any] = {"model": model}
    section_values: dict[str, Any] = {}
    notes: list[str] = []

    def put(key: str, value: Any, from_text: bool, in_section: bool = False) -> None:
        name = canonical_key(key)
        if in_section and name in section_types:
            _put_section(key, value, model, section_types, section_values, from_text)
        elif in_section and name in SHARED_BY_MODELS:
            raise ColdbrewError(
                f"{model}: {key!r} is shared by every model of a run or board; write it flat, "
                "outside the model's section"
            )
        elif name == "layout":  # a mapping: merged over an earlier layer's key by key
            run_values["layout"] = layout_value(run_values.get("layout"), value, from_text)
        elif name == "batch_size" and isinstance(value, str) and value.strip() == "auto":
            run_values["auto_batch_size"] = True
        elif name in FIELDS:  # in a model's section: a run option for that model only
            run_values[name] = coerce(name, value, run_types[name], from_text=from_text)
        elif name == "no_cuda":
            if coerce(name, value, bool, from_text=from_text):
                run_values["device"] = "cpu"
        elif name in IGNORED_ORIGINAL:
            notes.append(f"--{key} accepted and ignored: {IGNORED_ORIGINAL[name]}")
        else:
            _put_section(name, value, model, section_types, section_values, from_text)

    for layer in layers:
        from_text = isinstance(layer, Flags)
        # a model's section is read after the layer's flat keys: the more specific value wins
        for key, value in sorted(layer.items(), key=lambda item: canonical_key(item[0]) in MODELS):
            name = canonical_key(key)
            if name in ("model", BOARD_SECTION):  # a leaderboard reads its own section
                continue
            if name not in MODELS:
                put(key, value, from_text)
            elif name == model:  # this model's section, written nested
                if not isinstance(value, dict):
                    raise ColdbrewError(f"option {key!r}: expected a mapping of {name}'s options")
                for inner, inner_value in value.items():
                    put(inner, inner_value, from_text, in_section=True)
            # another model's section does not apply to this run
    config = TrainConfig(**run_values, model_options=section_type(**section_values), notes=notes)
    config.validate()
    return config


def layout_value(before: dict | None, value: Any, from_text: bool) -> dict | None:
    """``before`` with a layer's ``layout`` over it key by key: ``KEY=VALUE`` texts from the
    command line, a mapping from YAML (none: unchanged), checked against coldbrew.yaml's keys."""
    from coldbrew.data.tables.settings import check_layout, merge_layout, parse_layout_flags

    if value is None:
        return before
    if isinstance(value, dict):
        given = check_layout(value, "option 'layout'")
    elif from_text and isinstance(value, str | list | tuple):
        given = parse_layout_flags([value] if isinstance(value, str) else value)
    else:
        raise ColdbrewError(
            f"option 'layout': expected a mapping of coldbrew.yaml's keys (layout: {{text: "
            f"[title, plot]}}), got {value!r}"
        )
    return merge_layout(before, given)


def _put_section(key, value, model, types, values, from_text) -> None:
    from coldbrew.registry import MODELS

    name = canonical_key(key)
    if name in types:
        values[name] = coerce(name, value, types[name], from_text=from_text)
        return
    owners = [other for other, spec in MODELS.items() if name in hints(spec.config)]
    if owners:
        raise ColdbrewError(f"option {key!r} belongs to model {', '.join(owners)}, not {model}")
    raise ColdbrewError(f"unknown config key {key!r}")


def unusable_options(config: TrainConfig, given: Iterable[str]) -> list[str]:
    """Which of the options ``given`` ``config``'s model cannot use: training options for a
    model with nothing to train, what its spec ignores, a text encoder without a text block."""
    from coldbrew.registry import MODELS

    spec = MODELS[config.model]
    unused = set(spec.ignores) | (set() if spec.trains else set(TRAINING_OPTIONS))
    if config.features is not None and "text" not in config.features:
        unused.add("text_encoder")
    return [key for key in given if canonical_key(key) in unused]


def check_usable_options(config: TrainConfig, given: Iterable[str]) -> None:
    """Refuse, in one line, options given that ``config``'s model cannot use."""
    unused = [canonical_key(key) for key in unusable_options(config, given)]
    if not unused:
        return
    flags = ", ".join(f"--{key.replace('_', '-')}" for key in unused)
    if unused == ["text_encoder"] and config.model not in USE_REASONS:
        reason = f" (--features {','.join(config.features or [])} has no text block)"
    else:
        reason = USE_REASONS.get(config.model, "")
    raise ColdbrewError(
        f"{config.model} cannot use {flags}{reason}; leave {'it' if len(unused) == 1 else 'them'} out"
    )


USE_REASONS = {
    "knn": " (it trains nothing: cold items average their content neighbours' vectors)",
    "blend": " (it trains nothing and takes its data and features from its runs)",
    "lm": " (its own --backbone reads the item texts; the text encoder's vectors are left out)",
}
