"""Memory per device of an LM-recommender training step, estimated from shapes (no torch).

``estimate_memory`` adds up, per device under data parallelism (the batch split evenly, every
weight replicated, as DDP does), in bytes of float32:

* ``parameters``: heads, ID tables, LoRA adapters, and the backbone's weights when it is held
  (dynamic and tune modes; cache mode drops it after embedding the catalogue);
* ``cached_embeddings``: data held as buffers: item text vectors (cache mode), user feature
  vectors, and the catalogue's token ids (dynamic mode); in tune mode the lower layers' states
  of every item (``items × tokens × width``, the bulk) and the table of item vectors;
* ``activations``: tensors saved for the backward pass. Heads: the step's distinct items and
  its users through two-layer MLPs. Backbone, per layer and per token of the step's distinct
  items (``n`` items × ``tokens``): ``w·width + 2·intermediate + 3·heads·tokens`` values, with
  ``w`` = 4 under LoRA on query and value and 10.5 under full fine-tuning. These constants were
  counted, not guessed: every tensor saved for backward (``saved_tensors_hooks``, parameters
  excluded) in a BERT layer under ``transformers`` 5 with SDPA attention on the CPU, at 32 to 256
  tokens (``benchmarks/memory/bench_lm.py --parts saved``). Tune mode saves that set in its
  ``tune_layers`` layers only, over the step's fresh items (``tune_items`` per ``batch_size``
  rows). A frozen backbone saves nothing: its peak is
  one layer's working set, about ``2·width + 2·intermediate`` values per token (the MLP's input,
  residual, wide hidden state and its activation). Checkpointing keeps one ``width`` vector per
  token per layer plus one layer's saved set;
* ``gradients``: one value per trainable weight (``nn.Embedding`` gradients are dense: whole ID
  tables), and as much again for DDP's gradient buckets when there is more than one device;
* ``optimizer``: Adam's two moments per trainable weight.

The step's distinct items are ``expected_distinct(per-device draws, warm items)``: draws
uniform over warm items, an upper bound on real, popularity-skewed batches. The benchmark
``benchmarks/memory/bench_lm.py`` checks the step terms against measured peak RSS on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

FLOAT = 4  # bytes per float32 value
TOKEN_ID = 8  # bytes per int64 token id
# Values saved for backward per token per layer (counted; see the module docstring):
SAVED_PER_WIDTH = {"lora": 4.0, "full": 10.5}  # in units of the width
SAVED_PER_INTERMEDIATE = 2.0  # in units of the MLP's intermediate width
SAVED_PER_ATTENTION = 3.0  # per head per attended token
LIVE_FROZEN_PER_WIDTH = 2.0  # a frozen layer's working set, per token: 2·width + 2·intermediate
LIVE_FROZEN_PER_INTERMEDIATE = 2.0
MODES = ("cache", "frozen", "lora", "full", "tune")


@dataclass(frozen=True)
class BackboneShape:
    """What memory depends on in a transformer encoder or decoder."""

    parameters: int
    layers: int
    width: int
    heads: int
    intermediate: int

    @classmethod
    def from_config(cls, config: dict, parameters: int) -> BackboneShape:
        """From a ``config.json`` dict (BERT or GPT-2 key names)."""
        width = config.get("hidden_size") or config["n_embd"]
        return cls(
            parameters=parameters,
            layers=config.get("num_hidden_layers") or config["n_layer"],
            width=width,
            heads=config.get("num_attention_heads") or config["n_head"],
            intermediate=config.get("intermediate_size") or config.get("n_inner") or 4 * width,
        )


# all-MiniLM-L6-v2 (its config.json; 22,713,216 parameters counted on the loaded model)
MINILM = BackboneShape(parameters=22_713_216, layers=6, width=384, heads=12, intermediate=1536)


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per device, by part."""

    parameters: int
    cached_embeddings: int
    activations: int
    gradients: int
    optimizer: int

    @property
    def step(self) -> int:
        """What a training step adds over the built model: activations, gradients, Adam."""
        return self.activations + self.gradients + self.optimizer

    @property
    def total(self) -> int:
        return self.parameters + self.cached_embeddings + self.step

    def as_dict(self) -> dict[str, int]:
        return {**asdict(self), "step": self.step, "total": self.total}


def expected_distinct(draws: float, pool: int) -> float:
    """Expected distinct values among ``draws`` uniform draws from ``pool`` values."""
    return pool * -math.expm1(draws * math.log1p(-1.0 / pool)) if pool > 1 else min(pool, draws)


def estimate_memory(
    *,
    mode: str,
    backbone: BackboneShape,
    num_users: int,
    num_items: int,
    num_warm: int,
    batch_size: int,
    devices: int = 1,
    num_neg: int = 1,
    tokens: int = 256,
    user_feature_width: int | None = None,
    dim: int = 64,
    hidden: int = 256,
    lora_parameters: int = 0,
    checkpointing: bool = False,
    distinct_items: float | None = None,
    tune_layers: int = 1,
    tune_items: int = 16,
) -> MemoryEstimate:
    """Per-device bytes of one training step of ``mode`` (cache | frozen | lora | full | tune).

    ``tokens``: padded tokens per text in a step (the longest text of the step, at most
    ``max_length``); ``user_feature_width``: history (+ user text) width, default one
    ``backbone.width``; ``lora_parameters``: adapter weights (``--lora``; see ``lora_size``);
    ``distinct_items``: the step's distinct items when known (default: ``expected_distinct``);
    ``tune_layers``, ``tune_items``: tune mode's (``tune_items`` per ``batch_size`` rows).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    width = backbone.width
    user_width = user_feature_width or width
    rows = math.ceil(batch_size / devices)  # per-device batch
    if distinct_items is None:
        distinct_items = expected_distinct(rows * (1 + num_neg), num_warm)
    distinct = distinct_items
    heads = (width + user_width) * hidden + 2 * (hidden + hidden * dim + dim)
    ids = (num_users + num_items) * dim
    trainable = heads + ids + (lora_parameters if mode in ("lora", "tune") else 0)
    trainable += backbone.parameters if mode == "full" else 0
    held = 0 if mode == "cache" else backbone.parameters + lora_parameters
    cached = num_users * user_width * FLOAT
    cached += num_items * width * FLOAT if mode == "cache" else num_items * (tokens + 1) * TOKEN_ID
    if mode == "tune":  # the lower layers' states and the table of vectors
        cached += num_items * (tokens + 1) * width * FLOAT
    head_values = distinct * (width + 2 * hidden + dim) + rows * (user_width + 2 * hidden + dim)
    head_values += rows * (1 + num_neg) * dim  # the gathered item rows of the scores
    backbone_values = 0.0
    if mode == "tune":
        fresh = min(distinct, math.ceil(tune_items * rows / batch_size))
        top = BackboneShape(
            backbone.parameters, tune_layers, width, backbone.heads, backbone.intermediate
        )
        backbone_values = _backbone_values(top, fresh * tokens, tokens, "lora", False)
    elif mode != "cache":
        backbone_values = _backbone_values(backbone, distinct * tokens, tokens, mode, checkpointing)
    return MemoryEstimate(
        parameters=(heads + ids + held) * FLOAT,
        cached_embeddings=int(cached),
        activations=int((head_values + backbone_values) * FLOAT),
        gradients=trainable * FLOAT * (2 if devices > 1 else 1),
        optimizer=2 * trainable * FLOAT,
    )


def _backbone_values(
    backbone: BackboneShape, step_tokens: float, tokens: int, mode: str, checkpointing: bool
) -> float:
    """Float32 values the backbone holds at the step's peak (see the module docstring)."""
    output = step_tokens * backbone.width  # the last hidden states, pooled
    if mode == "frozen":
        live = LIVE_FROZEN_PER_WIDTH * backbone.width
        live += LIVE_FROZEN_PER_INTERMEDIATE * backbone.intermediate
        return step_tokens * live + output
    per_token_layer = (
        SAVED_PER_WIDTH[mode] * backbone.width
        + SAVED_PER_INTERMEDIATE * backbone.intermediate
        + SAVED_PER_ATTENTION * backbone.heads * tokens
    )
    one_layer = step_tokens * per_token_layer
    if checkpointing:
        return step_tokens * backbone.width * backbone.layers + one_layer + output
    return one_layer * backbone.layers + output


def lora_size(
    backbone: BackboneShape, rank: int, modules_per_layer: int = 2, layers: int | None = None
) -> int:
    """Adapter weights for ``modules_per_layer`` square ``width → width`` projections per layer
    (peft's BERT default: query and value): ``rank × (width + width)`` each, in every layer or
    in ``layers`` of them (tune mode's top layers)."""
    count = backbone.layers if layers is None else layers
    return count * modules_per_layer * rank * 2 * backbone.width


def approximate_parameters(config: dict) -> int:
    """A transformer's weights from its ``config.json``: token and position tables, and per
    layer four attention projections, the MLP and their biases and norms."""
    shape = BackboneShape.from_config(config, parameters=0)
    width, wide = shape.width, shape.intermediate
    positions = config.get("max_position_embeddings") or config.get("n_positions") or 0
    tables = (config.get("vocab_size", 0) + positions) * width
    per_layer = 4 * (width * width + width) + 2 * width * wide + wide + 5 * width
    return tables + shape.layers * per_layer


def estimate_for_run(options, data, batch_size: int, devices: int = 1) -> MemoryEstimate:
    """The step of a run with LM ``options`` (``LMConfig``) on ``data``, from the backbone's
    ``config.json`` (its weights approximated) and the data's shapes; ``max_length`` tokens."""
    from coldbrew.data.text.backbones import backbone_config

    config = backbone_config(options.backbone)
    shape = BackboneShape.from_config(config, parameters=approximate_parameters(config))
    if options.lm_mode in ("cache", "tune"):
        mode = options.lm_mode
    else:
        mode = "frozen" if options.freeze else ("lora" if options.lora else "full")
    lora = options.lora_spec()
    tuned_layers = options.tune_layers if mode == "tune" else None
    adapters = (
        0 if lora is None else lora_size(shape, lora.rank, len(lora.modules) or 2, tuned_layers)
    )
    users = shape.width * (2 if getattr(data, "user_text", None) is not None else 1)
    return estimate_memory(
        mode=mode,
        backbone=shape,
        num_users=data.num_users,
        num_items=data.num_items,
        num_warm=len(data.warm_items),
        batch_size=batch_size,
        devices=devices,
        num_neg=options.resolved_num_neg(),
        tokens=options.max_length,
        user_feature_width=users,
        dim=options.dim,
        hidden=options.hidden,
        lora_parameters=adapters,
        checkpointing=options.grad_checkpointing,
        tune_layers=options.tune_layers,
        tune_items=options.tune_items,
    )
