"""A new item's vector from its text and/or feature blocks, through the run's own model.

``reads`` (the export manifest's ``new_items``) says what the model reads:

* ``"features"`` (CLCRec and the zoo): the data's dense feature blocks, concatenated in order.
  When the data has a ``text`` block made by a sentence encoder, ``text`` fills that block
  (encoded by the same encoder) and ``features`` gives the other blocks, in order. ``features``
  of the full width are used as they are (a ``text`` beside them is only the item's label,
  and the answer warns that it was not read).
* ``"text"`` (the LM): the text, and its feature blocks when it was trained with them.
* ``None``: the model cannot score a new item (a blend); asking is a one-line 400.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import torch

from coldbrew.data.text.sentence_folders import SentenceModel
from coldbrew.errors import ColdbrewError
from coldbrew.new_item import (
    ZERO_FEATURES,
    TextBlockEncoder,
    full_row,
    needs_other_blocks,
    other_blocks,
)
from coldbrew.recommend import is_all_zero, one_item_vector

MAX_TEXT_CHARACTERS = 20_000
TEXT_UNREAD = (
    "the features hold every block the model reads, so they are used as they are and the "
    "text is not read (it only labels the item): send the blocks besides text, or no text"
)


class BadRequest(ColdbrewError):
    """A request the server refuses: ``status`` is its HTTP code (4xx)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class NewItemEncoder:
    """``vector(text, features) -> (D,)`` float32 tensor, one request at a time."""

    def __init__(self, model, recipe: dict, text_models: list[SentenceModel] | None):
        self.model, self.recipe = model, recipe
        self.lock = threading.Lock()  # one encoding at a time: two would share 2 cores anyway
        self.text_block = recipe.get("text_block")
        self.texts = TextBlockEncoder(text_models) if self.text_block else None

    @property
    def blocks(self) -> list[dict]:
        return self.recipe.get("feature_blocks") or []

    def warm_up(self) -> None:
        """Load the sentence encoder now, so the first request does not pay for it."""
        if self.texts is not None:
            self.texts.warm_up()

    def check(self, text: str | None, features: list | None) -> None:
        """Refuse, before any encoding, a request this model cannot score: no model for new
        items, text too long or empty, neither text nor features, or text without the other
        blocks it needs (named)."""
        reads = self.recipe.get("reads")
        if reads is None:
            raise BadRequest(f"{self.recipe.get('why', 'this model cannot score a new item')}", 400)
        if text is not None:
            if len(text) > MAX_TEXT_CHARACTERS:
                raise BadRequest(
                    f"text of {len(text)} characters; at most {MAX_TEXT_CHARACTERS}", 413
                )
            if not text.strip():
                raise BadRequest("text is empty: give the new item's title, genres, plot ...", 422)
        if text is None and features is None:
            raise BadRequest("give the new item's text and/or features", 422)
        if reads == "features" and text is not None and features is None and self.text_block:
            others = other_blocks(self.blocks, self.text_block)
            if others:
                width = sum(block["width"] for block in others)
                how = f'give "features": their {width} values, in this order'
                raise BadRequest(needs_other_blocks(self.blocks, self.text_block, how), 422)

    def vector(self, text: str | None, features: list | None) -> torch.Tensor:
        self.check(text, features)
        array = None if features is None else self._features(features)
        with self.lock, torch.no_grad():
            if self.recipe["reads"] == "text":
                return self._from_text(text, array)
            full = array is not None and array.shape[1] == self._width(None)
            if text is not None and not full:  # the text fills the text block
                array = self._with_text_block(text, array)
            elif not full:
                raise BadRequest(self._width_message(array, None), 422)
            vector = self.model.encode_items(features=torch.as_tensor(array))
            return vector.reshape(-1).float().cpu()

    def warnings(self, text: str | None, features: list | None) -> list[str]:
        """What the answer for a scored item warns of: a text beside features of the full
        width (the features are used; the text only labels the item), and features all zero
        when they are all it is scored from (no text read beside them)."""
        if features is None:
            return []
        said = []
        full = self.recipe.get("reads") == "features" and len(features) == self._width(None)
        if text is not None and full:
            said.append(TEXT_UNREAD)
        if not is_all_zero(np.asarray(features, dtype=np.float64)):
            return said
        if text is not None and self.recipe.get("reads") == "text":
            return []  # the LM reads the text, and the blocks beside it
        if text is not None and self.text_block and not full:
            return said  # the text fills its block
        return [*said, ZERO_FEATURES]

    def _features(self, features: list) -> np.ndarray:
        try:
            # all zeros: said in the answer (``warnings``), not in the server's log
            return one_item_vector(np.asarray(features, dtype=np.float64), warn_zero=False)
        except (ValueError, TypeError):
            raise BadRequest("features must be a flat list of numbers", 422) from None
        except ColdbrewError as error:
            raise BadRequest(str(error), 422) from None

    def _width(self, skip: str | None) -> int:
        return sum(block["width"] for block in self.blocks if block["name"] != skip)

    def _width_message(self, array: np.ndarray | None, skip: str | None) -> str:
        names = [f"{b['name']} ({b['width']})" for b in self.blocks if b["name"] != skip]
        given = "none" if array is None else str(array.shape[1])
        return (
            f"features of width {given}; expected {self._width(skip)}: the blocks "
            f"{', '.join(names) or 'none'} concatenated in this order"
        )

    def _from_text(self, text: str | None, array: np.ndarray | None) -> torch.Tensor:
        if text is None:
            raise BadRequest('this model scores a new item from its text: give "text"', 422)
        if array is not None and array.shape[1] != self._width(None):
            raise BadRequest(self._width_message(array, None), 422)
        tensor = None if array is None else torch.as_tensor(array)
        return self.model.encode_items(texts=[text], features=tensor).reshape(-1).float().cpu()

    def _with_text_block(self, text: str, array: np.ndarray | None) -> np.ndarray:
        """The full feature row: the other blocks from ``array``, the text block encoded."""
        if self.text_block is None:
            raise BadRequest(
                'this model reads no text: give the new item\'s feature vector ("features": '
                f"{self._width_message(array, None).split('expected ')[1]})",
                422,
            )
        others = 0 if array is None else array.shape[1]
        if others != self._width(self.text_block):
            raise BadRequest(self._width_message(array, self.text_block), 422)
        return full_row(self.blocks, self.text_block, self.texts.encode(text), array)


def model_from_export(folder: Path, manifest: dict):
    """The export's model rebuilt on its data (found as its config names it, checked by
    digest) with the exported state: what scores a new item."""
    from safetensors.torch import load_file

    from coldbrew.config import load_saved_config, make_config
    from coldbrew.registry import build_model, model_spec
    from coldbrew.serving.export_format import CONFIG_COPY, MODEL_STATE
    from coldbrew.training.build import load_run_dataset
    from coldbrew.training.run_evaluation import load_model_state

    config = make_config(load_saved_config(folder / CONFIG_COPY), {"device": "cpu", "quiet": True})
    for name, value in model_spec(config.model).evaluation_overrides.items():
        setattr(config.model_options, name, value)
    dataset = load_run_dataset(config)
    if dataset_digest(dataset) != manifest["data"]["digest"]:
        raise ColdbrewError(
            f"the data {config.data} is not the data this export was made from (digest differs)"
        )
    model = build_model(config.model, dataset, config)
    state = load_file(str(folder / MODEL_STATE))
    state.update(manifest.get("model_extra_state") or {})  # the LM's backbone identity
    load_model_state(model, state, dataset.name)
    return model.eval()


def dataset_digest(dataset) -> str:
    """The export manifest's data digest of ``dataset`` (``export_format.data_digest``: ids,
    cold items, training interactions and the dense feature blocks; no vectors)."""
    from coldbrew.serving.export import _ids, dense_features
    from coldbrew.serving.export_format import Vectors, data_digest

    train = dataset.train
    seen = Vectors(
        users=np.zeros((dataset.num_users, 0), np.float32),
        items=np.zeros((dataset.num_items, 0), np.float32),
        user_ids=_ids(dataset.user_ids, dataset.num_users),
        item_ids=_ids(dataset.item_ids, dataset.num_items),
        cold_items=np.asarray(dataset.cold_items, dtype=np.int64),
        train_indptr=np.asarray(train.indptr, dtype=np.int64),
        train_indices=np.asarray(train.indices, dtype=np.int64),
    )
    return data_digest(seen, dense_features(dataset))
