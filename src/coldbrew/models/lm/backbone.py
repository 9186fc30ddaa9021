"""The text backbone inside the graph: token ids -> pooled, L2-normalised text vectors.

``TextBackbone`` wraps a ``transformers`` ``AutoModel`` (loaded by
``coldbrew.data.text.backbones.load_backbone``, pooled by its ``pool``, so the cached and the
in-graph embeddings are one computation) and decides what of it trains:

* frozen (cache mode, or ``--freeze``): no backbone weight trains; the forward runs without
  autograd and the backbone stays in eval mode (no dropout) even while the model trains;
* LoRA (``--lora R,ALPHA[,MODULE,...]``): ``peft`` injects low-rank adapters in place; only they
  train. Every named module must exist (``peft`` alone would accept a list where one matches);
* otherwise every backbone weight trains (full fine-tuning).

With ``tune_layers`` (tune mode) the model is cut in two (``coldbrew.models.lm.split``): LoRA
goes into the top ``tune_layers`` layers only, ``lower`` gives the states entering them and
``upper`` finishes the forward from such states. Dropout stays off in every layer, so the
vectors the top layers give are the same in a training step and in evaluation.

Its ``state_dict`` holds only what trains: frozen backbone weights are left out (they come back
when the backbone is rebuilt from its name), and loading fills them in from the rebuilt module,
so ``load_state_dict(strict=True)`` accepts a checkpoint that lacks them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.data.text.backbones import LoadedBackbone, pool, resolve_pooling
from coldbrew.errors import ColdbrewError
from coldbrew.models.lm.config import LoraSpec
from coldbrew.models.lm.split import layer_count, lower_states, recipe_for, upper_states

ADAPTABLE_TYPES = ("Linear", "Conv1D", "Embedding", "Conv2d")  # what peft's LoRA can wrap


class TextBackbone(nn.Module):
    """``forward(input_ids, attention_mask) -> (B, width)`` unit-length text vectors."""

    def __init__(
        self,
        loaded: LoadedBackbone,
        *,
        name: str,
        pooling: str = "auto",
        max_length: int = 256,
        freeze: bool = True,
        lora: LoraSpec | None = None,
        grad_checkpointing: bool = False,
        tune_layers: int | None = None,
    ):
        super().__init__()
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer  # not a module: used once, to tokenize the catalogue
        self.name, self.identity = name, loaded.identity
        self.pooling = resolve_pooling(pooling, name)
        self.max_length = max_length
        self.width = int(self.model.get_input_embeddings().weight.shape[1])
        self.split = None if tune_layers is None else _split_index(self.model, tune_layers)
        if freeze or lora is not None:
            self.model.requires_grad_(False)
        if lora is not None:
            inject_lora(self.model, lora, first_layer=self.split)
        self.trains = any(parameter.requires_grad for parameter in self.model.parameters())
        if grad_checkpointing:
            if not self.trains:
                raise ColdbrewError("gradient checkpointing needs a backbone that trains")
            if hasattr(self.model.config, "use_cache"):
                self.model.config.use_cache = False  # a KV cache cannot be recomputed
            enable = getattr(self.model, "activation_checkpointing_enable", None)
            if enable is not None:  # transformers >= 5 (the older name is deprecated there)
                enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                self.model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False}
                )
        self.model.train(self.trains and self.split is None)
        self.register_state_dict_post_hook(_drop_frozen)
        self.register_load_state_dict_pre_hook(_fill_frozen)

    def train(self, mode: bool = True) -> TextBackbone:
        super().train(mode)
        if not self.trains or self.split is not None:
            self.model.eval()  # a frozen backbone computes what the cache holds: no dropout
        return self

    # ------------------------------------------------------------------ tokens
    def tokenize(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(token_ids (N, T), lengths (N,))``, right-padded; ``T`` the longest text's length."""
        encoded = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        lengths = encoded["attention_mask"].sum(dim=1).clamp_min(1)
        return encoded["input_ids"].long(), lengths.long()

    @staticmethod
    def trim(token_ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows of pre-tokenized texts cut to their longest: ``(ids (n, t), mask (n, t))``."""
        longest = int(lengths.max())  # one host read; the backbone's cost dwarfs it
        positions = torch.arange(longest, device=token_ids.device)
        return token_ids[:, :longest], (positions < lengths[:, None]).long()

    # ------------------------------------------------------------------ forward
    def forward(self, token_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.trains):
            states = self.model(
                input_ids=token_ids, attention_mask=attention_mask
            ).last_hidden_state  # (n, t, width)
            return F.normalize(pool(states, attention_mask, self.pooling).float(), dim=1)

    @torch.no_grad()
    def lower(self, token_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(n, t, width)`` states entering the first tuned layer (tune mode), no gradients."""
        return lower_states(self.model, self.split, token_ids, attention_mask)

    def upper(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(n, width)`` unit-length text vectors from ``lower``'s states: the tuned layers,
        then pooling; ``upper(lower(x)) == forward(x)``."""
        tokens = upper_states(self.model, self.split, states, attention_mask)  # (n, t, width)
        return F.normalize(pool(tokens, attention_mask, self.pooling).float(), dim=1)

    @torch.no_grad()
    def embed_all(
        self, token_ids: torch.Tensor, lengths: torch.Tensor, batch_size: int
    ) -> torch.Tensor:
        """Every row's vector ``(N, width)`` without gradients, in batches of similar length."""
        order = torch.argsort(lengths, descending=True)
        out = torch.empty(len(lengths), self.width, device=token_ids.device)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = self(*self.trim(token_ids[rows], lengths[rows]))
        return out

    # ------------------------------------------------------------------ counts
    def parameter_counts(self) -> tuple[int, int]:
        """``(trainable, total)`` backbone parameters (LoRA adapters included)."""
        parameters = list(self.model.parameters())
        trainable = sum(p.numel() for p in parameters if p.requires_grad)
        return trainable, sum(p.numel() for p in parameters)


def _split_index(model: nn.Module, tune_layers: int) -> int:
    """The first tuned layer's index: ``tune_layers`` from the top."""
    recipe_for(model)  # an architecture without a recipe is refused here
    count = layer_count(model)
    if not 1 <= tune_layers <= count:
        raise ColdbrewError(f"--tune-layers must be 1 to {count} (this backbone's layers)")
    return count - tune_layers


def inject_lora(model: nn.Module, spec: LoraSpec, first_layer: int | None = None) -> None:
    """Low-rank adapters on ``spec.modules`` (or ``peft``'s default for the model type); with
    ``first_layer``, only in that layer and the ones above it (by default on the split
    recipe's query and value projections)."""
    try:
        from peft import LoraConfig, inject_adapter_in_model
    except ImportError as error:
        raise ColdbrewError(
            f"--lora needs the [llm] extra: pip install 'coldbrew[llm]' ({error})"
        ) from error
    modules = spec.modules
    if first_layer is not None and not modules:
        modules = recipe_for(model).lora_modules
    if modules:
        check_target_modules(model, modules)
    fan_in_fan_out = any(type(module).__name__ == "Conv1D" for module in model.modules())
    layers = {}
    if first_layer is not None:
        layers = {
            "layers_to_transform": list(range(first_layer, layer_count(model))),
            "layers_pattern": recipe_for(model).layers_pattern,
        }
    config = LoraConfig(
        r=spec.rank,
        lora_alpha=spec.alpha,
        target_modules=list(modules) or None,
        lora_dropout=0.0,
        bias="none",
        fan_in_fan_out=fan_in_fan_out,  # GPT-2's Conv1D stores weights transposed
        **layers,
    )
    try:
        inject_adapter_in_model(config, model)
    except ValueError as error:
        raise ColdbrewError(f"--lora: {str(error).splitlines()[0]}") from None


def check_target_modules(model: nn.Module, modules: Sequence[str]) -> None:
    """Every name must end some adaptable module's path (peft's rule), else a clear error."""
    adaptable = [
        name
        for name, module in model.named_modules()
        if name and type(module).__name__ in ADAPTABLE_TYPES
    ]
    unknown = [
        target
        for target in modules
        if not any(name == target or name.endswith("." + target) for name in adaptable)
    ]
    if unknown:
        leaves = sorted({name.rsplit(".", 1)[-1] for name in adaptable})
        raise ColdbrewError(
            f"--lora: no module named {', '.join(map(repr, unknown))} in this backbone; "
            f"its adaptable modules are: {', '.join(leaves)}"
        )


def _frozen_names(backbone: TextBackbone) -> list[str]:
    """Names (under ``model.``) of every frozen parameter and every buffer of the backbone."""
    names = [
        name
        for name, parameter in backbone.model.named_parameters(remove_duplicate=False)
        if not parameter.requires_grad
    ]
    names += [name for name, _ in backbone.model.named_buffers(remove_duplicate=False)]
    return ["model." + name for name in names]


def _drop_frozen(module: TextBackbone, state_dict: dict, prefix: str, _metadata) -> None:
    for name in _frozen_names(module):
        state_dict.pop(prefix + name, None)


def _fill_frozen(module: TextBackbone, state_dict: dict, prefix: str, *_args) -> None:
    """Frozen weights a checkpoint left out are taken from the rebuilt backbone itself."""
    full = module.model.state_dict(keep_vars=True)  # the inner model: no hook drops entries
    for name in _frozen_names(module):
        key, inner = prefix + name, name.removeprefix("model.")
        if key not in state_dict and inner in full:
            state_dict[key] = full[inner]
