"""A transformer cut in two: the lower layers run once per item, the top layers in the step.

Tune mode (``lm_mode="tune"``) never runs the embeddings and the lower layers while training:
their output, the hidden states entering the first tuned layer, is computed once per item and
held. The top layers then run on those states through the model's own ``forward`` (its own
attention-mask code, its own final norm), with its layer list cut to the top layers and its
input side made a pass-through for the held states. How that is done depends on the
architecture, so each supported family has a recipe:

* BERT and MPNet: the ``embeddings`` module (token + position embeddings, LayerNorm) is what
  the held states replace; the layers are ``encoder.layer``; no final norm.
* GPT-2: the model adds position embeddings (``wpe``) itself, so ``wpe`` is what is replaced
  (by zeros: the held states already hold positions); the layers are ``h``; ``ln_f`` follows
  the last layer, so it is skipped when the lower states are taken.

``lower_states`` and ``upper_states`` swap the modules for the length of one call and put them
back, so the same model object also runs whole (``forward``), as new items need. The two
halves compose to the whole forward exactly (``tests/models/test_lm_split.py``, 1e-5).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from coldbrew.errors import ColdbrewError


@dataclass(frozen=True)
class SplitRecipe:
    layers: str  # path of the ModuleList of transformer layers
    entry: str  # path of the input-side module the held states stand in for
    entry_adds_positions: bool  # True: the model adds its output (GPT-2's wpe): zeros replace it
    final_norm: str | None = None  # applied after the last layer: skipped for the lower states
    # LoRA's targets when --lora names none: attention's query and value (peft's BERT default;
    # peft has none for MPNet)
    lora_modules: tuple[str, ...] = ()

    @property
    def layers_pattern(self) -> str:
        """The layer list's own name, as ``peft``'s ``layers_pattern`` matches it."""
        return self.layers.rsplit(".", 1)[-1]


RECIPES = {
    "bert": SplitRecipe("encoder.layer", "embeddings", False, lora_modules=("query", "value")),
    "mpnet": SplitRecipe("encoder.layer", "embeddings", False, lora_modules=("q", "v")),
    "gpt2": SplitRecipe("h", "wpe", True, final_norm="ln_f", lora_modules=("c_attn",)),
}


def recipe_for(model: nn.Module) -> SplitRecipe:
    model_type = getattr(model.config, "model_type", None)
    if model_type not in RECIPES:
        raise ColdbrewError(
            f"--lm-mode tune splits BERT, MPNet and GPT-2 family backbones ({', '.join(RECIPES)}); "
            f"this one is {model_type!r}: use --lm-mode dynamic or cache"
        )
    return RECIPES[model_type]


def layer_count(model: nn.Module) -> int:
    return len(model.get_submodule(recipe_for(model).layers))


class _HeldStates(nn.Module):
    """Stands in for BERT's or MPNet's embeddings: returns the states it is given as is."""

    def forward(self, *args, inputs_embeds: torch.Tensor | None = None, **kwargs) -> torch.Tensor:
        return inputs_embeds


class _NoPositions(nn.Module):
    """Stands in for GPT-2's ``wpe``: the held states already carry their positions."""

    def __init__(self, width: int):
        super().__init__()
        self.width = width

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return torch.zeros((*position_ids.shape, self.width), device=position_ids.device)


@contextmanager
def _swapped(model: nn.Module, replacements: dict[str, nn.Module]) -> Iterator[None]:
    """``model``'s submodules at the given paths replaced for the ``with`` block."""
    originals = {path: model.get_submodule(path) for path in replacements}
    try:
        for path, module in replacements.items():
            _set(model, path, module)
        yield
    finally:
        for path, module in originals.items():
            _set(model, path, module)


def _set(model: nn.Module, path: str, module: nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, name, module)


def lower_states(
    model: nn.Module, split: int, token_ids: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """``(n, t, width)`` hidden states entering layer ``split`` (the first tuned one)."""
    recipe = recipe_for(model)
    layers = model.get_submodule(recipe.layers)
    replacements = {recipe.layers: nn.ModuleList(layers[:split])}
    if recipe.final_norm:
        replacements[recipe.final_norm] = nn.Identity()
    with _swapped(model, replacements):
        return model(input_ids=token_ids, attention_mask=attention_mask).last_hidden_state


def upper_states(
    model: nn.Module, split: int, states: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """``(n, t, width)`` the model's last hidden states from the states entering layer
    ``split``: layers ``split`` and up (and the final norm) on ``states``."""
    recipe = recipe_for(model)
    layers = model.get_submodule(recipe.layers)
    width = states.shape[-1]
    entry = _NoPositions(width) if recipe.entry_adds_positions else _HeldStates()
    replacements = {recipe.layers: nn.ModuleList(layers[split:]), recipe.entry: entry}
    with _swapped(model, replacements):
        return model(inputs_embeds=states, attention_mask=attention_mask).last_hidden_state


def upper_parameters(model: nn.Module, split: int) -> Iterator[tuple[str, nn.Parameter]]:
    """``(name, parameter)`` of what ``upper_states`` reads: every parameter but the lower
    ``split`` layers', the entry module's and the token embeddings' (the held states stand in
    for them)."""
    recipe = recipe_for(model)
    layers = model.get_submodule(recipe.layers)
    skipped = [*layers[:split], model.get_submodule(recipe.entry), model.get_input_embeddings()]
    unread = {id(parameter) for module in skipped for parameter in module.parameters()}
    for name, parameter in model.named_parameters():
        if id(parameter) not in unread:
            yield name, parameter
