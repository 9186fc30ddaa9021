"""Recommendations from a trained run: a user's top items (cold ones included), or the users
most likely to want a new item described by its text (with its feature vector where the LM
reads feature blocks) or, for CLCRec and the zoo, its feature vector, or its text and the
other blocks where the data has a sentence-encoded text block (``coldbrew.new_item``: the
text encoded by the run's own encoder, as ``coldbrew serve`` encodes it).

    run = coldbrew.load_run("runs/ml1m")
    run.recommend(user=42, k=10)                          # items for user 42
    run.recommend(item_text="Heat (1995). Genres: Action, Crime, Thriller.", k=20)  # users

``coldbrew recommend --run R --user U | --item-text "..." [--item-vector FILE.npy]`` does
the same from the command line.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from coldbrew.data.dataset import describe_layout
from coldbrew.data.titles import title_of
from coldbrew.errors import ColdbrewError
from coldbrew.new_item import ZERO_FEATURES, one_list_for_all
from coldbrew.registry import model_spec


@dataclass
class LoadedRun:
    """A run's best checkpoint, ready to score: its config, data and model (eval mode)."""

    run_dir: Path
    config: object
    dataset: object
    model: torch.nn.Module
    device: torch.device
    texts: object = field(default=None, repr=False)  # the text block's encoder, once loaded
    baseline: object = field(default=None, repr=False)  # the users' UserBaseline, once made

    def recommend(
        self,
        *,
        user: int | None = None,
        item_text: str | None = None,
        item_features: np.ndarray | torch.Tensor | None = None,
        k: int = 20,
        item_columns: list[str] | None = None,
    ) -> list[dict]:
        """``user`` (its id in the data's own numbering): its top ``k`` items, training items
        left out. ``item_text`` and/or ``item_features`` (what the model reads: text for the
        LM, with its feature blocks when it was trained with them; features for CLCRec and the
        zoo, or the text and the other blocks where the data has a text block): the top ``k``
        users for that new item. ``item_columns`` names the columns of the new item's
        vector that are 1 (e.g. its genres: ``["Action", "Sci-Fi"]``), the others 0, instead of
        a bare ``item_features``. Rows: ``{"rank", "item"|"user", "score", ...}``; a new
        item's users are ranked by ``lift``, how far the item stands above each user's mean
        score over the catalogue, in that user's standard deviations (``UserBaseline``)."""
        wanted = (item_text, item_features, item_columns)
        if any(x is not None for x in wanted) and not model_spec(self.config.model).personalised:
            raise ColdbrewError(one_list_for_all(self.config.model))
        text_block = self.text_block() if item_text is not None else None
        if item_columns is not None:
            if item_features is not None:
                raise ColdbrewError("give the new item's vector or its column names, not both")
            item_features = self.named_vector(item_columns, skip=text_block)
        new_item = item_text is not None or item_features is not None
        if (user is not None) == new_item:
            raise ColdbrewError("give either a user or a new item (its text and/or features)")
        if not is_integer(k) or k < 1:
            raise ColdbrewError(f"k must be at least 1 (an integer), not {k!r}")
        if user is not None:
            if not has_text_ids(self.dataset.user_ids) and not is_integer(user):
                raise ColdbrewError(
                    f"user must be an integer id (the data's own numbering), not {user!r}"
                )
            return self._items_for(user, k)
        if item_text is not None and not item_text.strip():
            raise ColdbrewError("item text is empty: give the new item's title, genres, plot ...")
        if item_features is not None:  # with a text in its block, zero others are no warning
            item_features = one_item_vector(item_features, warn_zero=text_block is None)
            self._check_width(item_features.shape[1], skip=text_block)
        if text_block is not None:  # the text fills the data's text block, as the server does
            item_features = self._with_text_block(item_text, item_features, text_block)
            item_text = None
        return self._users_for(item_text, item_features, k)

    def text_block(self) -> str | None:
        """The data's block a new item's text fills (``coldbrew.new_item.text_block_of``):
        ``"text"`` for CLCRec and the zoo on data with a sentence-encoded text block."""
        from coldbrew.new_item import per_column_refusal, text_block_of

        block = text_block_of(self.model, self.dataset)
        if block is None and getattr(self.dataset, "text_fields", None):
            if not hasattr(self.model, "feature_widths"):  # the lm reads text its own way
                raise ColdbrewError(per_column_refusal(self.dataset))
        return block

    def _with_text_block(self, text: str, others: np.ndarray | None, text_block: str):
        """The new item's full row: ``text`` encoded by the run's own sentence encoder (once
        loaded, kept), the other blocks from ``others``."""
        from coldbrew.new_item import (
            TextBlockEncoder,
            full_row,
            item_blocks,
            needs_other_blocks,
            other_blocks,
        )

        blocks = item_blocks(self.dataset)
        if others is None and other_blocks(blocks, text_block):
            how = "give them with --item-genres NAMES (where every column is named) or "
            how += "--item-vector FILE.npy (item_columns or item_features in Python)"
            raise ColdbrewError(needs_other_blocks(blocks, text_block, how))
        if self.texts is None:
            self.texts = TextBlockEncoder(self.config.text_encoder.models(progress=False))
        return full_row(blocks, text_block, self.texts.encode(text), others)

    def vector_layout(self) -> list[dict]:
        """The blocks of a new item's vector for this run's model, in order (see
        ``Dataset.feature_layout``): the lm reads the blocks it was trained with, other models
        every dense block."""
        layout = self.dataset.feature_layout()
        read = getattr(self.model, "feature_widths", None)  # the lm's blocks
        return layout if read is None else [e for e in layout if e["block"] in read]

    def _check_width(self, width: int, skip: str | None = None) -> None:
        layout = [entry for entry in self.vector_layout() if entry["block"] != skip]
        expected = sum(entry["width"] for entry in layout)
        if layout and width != expected:
            besides = f" besides the {skip} block (the item's text fills it)" if skip else ""
            raise ColdbrewError(
                f"the new item's vector has {width} columns; this run reads {expected}"
                f"{besides}: {describe_layout(layout)}"
            )

    def named_vector(self, names: list[str], skip: str | None = None) -> np.ndarray:
        """A new item's vector with the columns called ``names`` at 1 (any case), the rest 0;
        every column must be named by the data (``Dataset.feature_columns``). ``skip``: a
        block left out (the text block, when the item's text fills it)."""
        layout = [entry for entry in self.vector_layout() if entry["block"] != skip]
        unnamed = [entry["block"] for entry in layout if not entry.get("columns")]
        if unnamed or not layout:
            raise ColdbrewError(
                f"this run's item vector ({describe_layout(layout)}) has columns without names "
                f"({', '.join(unnamed) or 'none at all'}): give the whole vector (--item-vector)"
            )
        columns = [name for entry in layout for name in entry["columns"]]
        position = {name.casefold(): index for index, name in enumerate(columns)}
        vector = np.zeros(len(columns), dtype=np.float32)
        for name in names:
            if name.strip().casefold() not in position:
                raise ColdbrewError(
                    f"no column {name.strip()!r}{close_to(name.strip(), columns)}; "
                    f"the columns: {', '.join(columns)}"
                )
            vector[position[name.strip().casefold()]] = 1.0
        return vector

    def _items_for(self, user: int | str, k: int) -> list[dict]:
        dataset = self.dataset
        row = internal_id(dataset.user_ids, user, "user", dataset.num_users)
        users = torch.tensor([row], device=self.device)
        with torch.no_grad():
            scores = self.model.score_users(users).float()[0]  # (num_items,)
        seen = dataset.train.indices[dataset.train.indptr[row] : dataset.train.indptr[row + 1]]
        if len(seen) == 0:
            warnings.warn(
                f"user {user} has no training interactions, so this list is not personal: "
                "it reflects only what the model learned about the items",
                stacklevel=3,
            )
        scores[torch.as_tensor(seen, dtype=torch.long, device=scores.device)] = -torch.inf
        values, items = top_by_score_then_key(
            scores, min(k, dataset.num_items - len(seen)), shift=user_shift(dataset, row)
        )
        cold = set(dataset.cold_items.tolist())
        texts, titles = dataset.item_text, getattr(dataset, "item_titles", None)
        return [
            {
                "rank": rank + 1,
                "item": source_id(dataset.item_ids, item),
                "score": score,
                "cold": item in cold,
                **({"title": title_of(titles, texts, item)} if texts or titles else {}),
                **({"text": texts[item]} if texts is not None else {}),
            }
            for rank, (score, item) in enumerate(zip(values.tolist(), items.tolist(), strict=True))
        ]

    def _users_for(self, text, features: np.ndarray | None, k: int) -> list[dict]:
        """The top ``k`` users by the new item's lift (``coldbrew.new_item.UserBaseline``);
        warned of where the list is only the users' tie order."""
        from coldbrew.new_item import UserBaseline, flat_list

        if features is not None:
            features = torch.as_tensor(features)  # (1, width)
        with torch.no_grad():
            vector = self.model.encode_items(
                texts=None if text is None else [text], features=features
            )
            users = self.model.user_embeddings()
            scores = (users @ vector.reshape(-1)).float()  # (num_users,)
            if self.baseline is None:  # once per run: the users' means and spreads
                self.baseline = UserBaseline.of(users, self.model.item_embeddings())
        lift = self.baseline.lift(scores)
        if flat_list(scores, lift):
            warnings.warn(flat_list(scores, lift), stacklevel=3)
        values, rows = top_by_score_then_key(lift, min(k, len(scores)))
        return [
            {
                "rank": rank + 1,
                "user": source_id(self.dataset.user_ids, user),
                "score": float(scores[user]),
                "lift": value,
            }
            for rank, (value, user) in enumerate(zip(values.tolist(), rows.tolist(), strict=True))
        ]


def close_to(name: str, names: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def is_integer(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def user_shift(dataset, row: int) -> int:
    """The user's rotation of the tie keys, as the evaluator uses it."""
    from coldbrew.evaluation.topk import tie_shifts

    return int(tie_shifts(dataset.num_users, dataset.num_items)[row])


def key_order(count: int, shift: int = 0, extra: int = 0) -> torch.Tensor:
    """``(count + extra,)`` ids in tie-key order: ``count`` ids by their tie keys
    (``coldbrew.evaluation.topk.tie_keys``, rotated by ``shift``), as the evaluator orders
    equal scores; then ``extra`` ids after them (items added to a served catalogue), in order."""
    from coldbrew.evaluation.topk import tie_keys

    keys = (torch.from_numpy(tie_keys(count)) + shift) % max(count, 1)
    return torch.cat([keys.argsort(), torch.arange(count, count + extra)])


def top_by_score_then_key(
    scores: torch.Tensor, k: int, shift: int = 0, *, order: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` highest of ``scores`` (n,), equal scores in the order of their ids' tie keys
    (``key_order(n, shift)``, or ``order`` when given), as the evaluator ranks them: a list
    does not depend on ``k`` (``torch.topk`` orders ties arbitrarily) nor on id order."""
    by_key = (key_order(len(scores), shift) if order is None else order).to(scores.device)
    values, position = torch.sort(scores[by_key], descending=True, stable=True)
    return values[:k], by_key[position[:k]]


def one_item_vector(features: np.ndarray | torch.Tensor, *, warn_zero: bool = True) -> np.ndarray:
    """A new item's features as a finite float32 ``(1, width)`` array, or a one-line error;
    all zeros are warned of (``ZERO_FEATURES``) unless ``warn_zero`` is False."""
    array = features.detach().cpu().numpy() if isinstance(features, torch.Tensor) else features
    array = np.asarray(array)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ColdbrewError(f"item features must be numbers, not {array.dtype} values")
    if array.ndim != 1 and not (array.ndim == 2 and array.shape[0] == 1):
        raise ColdbrewError(
            f"item features of shape {array.shape}: give one item's vector, (width,) or (1, width)"
        )
    array = array.astype(np.float32).reshape(1, -1)
    bad = int((~np.isfinite(array)).sum())
    if bad:
        raise ColdbrewError(
            f"item features hold {bad} NaN or infinite value(s) of {array.size}: give finite numbers"
        )
    if warn_zero and is_all_zero(array):
        warnings.warn(ZERO_FEATURES, stacklevel=4)
    return array


def is_all_zero(array: np.ndarray) -> bool:
    return bool(array.size) and not array.any()


def has_text_ids(source_ids: np.ndarray | None) -> bool:
    """Whether the data's ids are text (SKUs, UUIDs: ``coldbrew.data.tables.frames``), not integers."""
    return source_ids is not None and np.asarray(source_ids).dtype.kind not in "iu"


def internal_id(source_ids: np.ndarray | None, wanted, what: str, count: int) -> int:
    """The internal row of the source id ``wanted`` (the data's own id: an integer, or text
    where the data's ids are text)."""
    if has_text_ids(source_ids):
        found = np.flatnonzero(np.asarray(source_ids) == str(wanted))
        if len(found):
            return int(found[0])
        raise ColdbrewError(f"{what} {str(wanted)!r} is not in the data")
    if source_ids is None:
        if 0 <= wanted < count:
            return int(wanted)
    else:
        found = np.flatnonzero(np.asarray(source_ids) == wanted)
        if len(found):
            return int(found[0])
    raise ColdbrewError(f"{what} {wanted} is not in the data")


def source_id(source_ids: np.ndarray | None, row: int) -> int | str:
    """The data's own id of internal ``row``: a Python ``int``, or ``str`` for text ids."""
    if source_ids is None:
        return int(row)
    value = source_ids[row]
    return value.item() if isinstance(value, np.generic) else value


def load_run(
    run_dir: str | Path,
    *,
    data: str | None = None,
    device: str = "auto",
    text_encoder: str | None = None,
    layout: dict | None = None,
) -> LoadedRun:
    """RUN_DIR's best checkpoint on its own data (or ``data``, ``layout`` its settings over the
    run's own), for ``recommend``; ``text_encoder``: the run's encoder folder where it lies now
    (another model is refused)."""
    from coldbrew.registry import model_spec
    from coldbrew.research.seeds import is_multi_seed_run, saved_seeds, seed_dir
    from coldbrew.training.run_evaluation import encoder_override, load_best_model

    if is_multi_seed_run(run_dir):
        seeds = saved_seeds(run_dir)
        raise ColdbrewError(
            f"{run_dir} is a multi-seed run (seeds {', '.join(map(str, seeds))}): recommend "
            f"from one seed's run, e.g. --run {seed_dir(run_dir, seeds[0])}"
        )
    encoder, _ = encoder_override(Path(run_dir), text_encoder, allow_other=None)
    options = {"data": data, "device": device, "text_encoder": encoder, "layout": layout}
    config, dataset, model, target = load_best_model(run_dir, **options)
    if model_spec(config.model).task != "recommendation":
        raise ColdbrewError(f"{run_dir} is a {config.model} run: recommend needs a recommender")
    return LoadedRun(Path(run_dir), config, dataset, model, target)
