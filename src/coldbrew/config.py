"""Typed training configuration: one source of defaults, YAML presets, command-line overrides.

Original CLCRec flag names are accepted as aliases (``--l_r``, ``--dim_E``, ``--num_epoch`` ...)
so the commands in the original README run unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from coldbrew.errors import ColdbrewError

# original CLCRec name -> coldbrew field
ALIASES = {
    "l_r": "lr",
    "dim_E": "dim",
    "num_epoch": "epochs",
    "topK": "top_k",
    "data_path": "data",
}


@dataclass
class TrainConfig:
    # data
    data: str = "synthetic"
    features: list[str] | None = None
    trust_pickle: bool = False
    # model (CLCRec's names and its MovieLens defaults)
    model: str = "clcrec"
    dim: int = 64
    hidden: int = 256
    reg_weight: float = 0.1
    num_neg: int = 128
    lr_lambda: float = 0.5
    temp_value: float = 2.0
    num_sample: float = 0.5
    mix_mode: str = "original"
    neighbor_loss: bool = False  # third term: neighbors' ID embeddings <-> their items' content
    neighbor_weight: float = 0.1
    has_v: bool | None = None
    has_a: bool | None = None
    has_t: bool | None = None
    # optimisation
    lr: float = 0.002
    batch_size: int = 2048
    epochs: int = 30
    lr_schedule: str = "constant"
    seed: int = 1
    # evaluation and early stopping
    ks: list[int] = field(default_factory=lambda: [10, 20, 50])
    top_k: int | None = None
    early_stop_metric: str | None = None  # default: cold recall@20, else all recall@20
    patience: int = 7  # the original stops on the 7th epoch without improvement
    eval_chunk_elements: int | None = None
    # runtime
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    deterministic: bool = False
    quiet: bool = False
    log_every: int = 20

    def resolved_ks(self) -> list[int]:
        ks = sorted(set(self.ks) | ({self.top_k} if self.top_k else set()))
        if not ks or min(ks) < 1:
            raise ColdbrewError(f"ks must be positive integers, got {ks}")
        return ks

    def resolved_features(self) -> list[str] | None:
        """Feature selection, honouring the original ``has_v/has_a/has_t`` flags."""
        flags = {"visual": self.has_v, "acoustic": self.has_a, "text": self.has_t}
        if self.features is not None or all(v is None for v in flags.values()):
            return self.features
        return [name for name, on in flags.items() if on]

    def validate(self) -> None:
        checks = [
            (self.dim > 0, "dim must be positive"),
            (self.num_neg > 0, "num_neg must be positive"),
            (self.batch_size > 0, "batch_size must be positive"),
            (self.epochs > 0, "epochs must be positive"),
            (self.lr > 0, "lr must be positive"),
            (self.temp_value > 0, "temp_value must be positive"),
            (0.0 <= self.num_sample <= 1.0, "num_sample must be in [0, 1]"),
            (0.0 <= self.lr_lambda <= 1.0, "lr_lambda must be in [0, 1]"),
            (
                0.0 <= self.neighbor_weight < float("inf"),
                "neighbor_weight must be a finite number >= 0",
            ),
            (self.patience > 0, "patience must be positive"),
            (
                self.precision in ("auto", "fp32", "bf16", "fp16"),
                "precision must be auto|fp32|bf16|fp16",
            ),
            (self.lr_schedule in ("constant", "cosine"), "lr_schedule must be constant|cosine"),
        ]
        for ok, message in checks:
            if not ok:
                raise ColdbrewError(f"bad config: {message}")
        self.resolved_ks()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def canonical_key(key: str) -> str:
    """``--batch-size``/``batch_size`` -> ``batch_size``; original names via ``ALIASES``."""
    key = key.replace("-", "_")
    return ALIASES.get(key, key)


def make_config(*layers: dict[str, Any]) -> TrainConfig:
    """Merge dicts (later wins) over the dataclass defaults; unknown keys are an error."""
    values: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            name = canonical_key(key)
            if name not in FIELDS:
                raise ColdbrewError(f"unknown config key {key!r}")
            values[name] = value
    if isinstance(values.get("features"), str):
        values["features"] = [f.strip() for f in values["features"].split(",") if f.strip()]
    if isinstance(values.get("ks"), str):
        values["ks"] = [int(k) for k in values["ks"].split(",")]
    config = TrainConfig(**values)
    config.validate()
    return config


def load_yaml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path) as handle:
            loaded = yaml.safe_load(handle) or {}
    except OSError as error:
        raise ColdbrewError(f"cannot read config {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ColdbrewError(f"config {path} is not valid YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise ColdbrewError(f"config {path} must be a mapping of option: value")
    return loaded


def save_yaml(config: TrainConfig, path: Path) -> None:
    path.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
