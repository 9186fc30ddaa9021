"""The served state: user and item vectors, each user's training items, items added while
serving, and the rankings the endpoints return.

A user's list is ranked exactly as ``coldbrew.recommend`` ranks it (the same product of the
same vectors, the same tie order as ``top_by_score_then_key``, found by ``top_with_ties``
without sorting the catalogue), unless a faiss index serves it (approximate; the user's
training items are filtered out inside the search). Added items are scored exactly and joined
to either. Each user's best ``TOP_CACHED`` catalogue items are found at load, exactly or by the
index as a request would find them, so a request for ``k <= TOP_CACHED`` only reads them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from coldbrew.data.titles import item_titles, short_title
from coldbrew.evaluation.topk import tie_keys, tie_shifts
from coldbrew.new_item import UserBaseline, flat_list, one_list_for_all
from coldbrew.recommend import has_text_ids, key_order, source_id, top_by_score_then_key
from coldbrew.registry import MODELS
from coldbrew.serving.added_ids import added_item_id
from coldbrew.serving.export_format import Vectors

# the depth reader is renamed: load_catalogue's search_depth parameter would shadow it
from coldbrew.serving.index import search, set_search_depth
from coldbrew.serving.index import search_depth as index_search_depth
from coldbrew.serving.new_items import BadRequest, NewItemEncoder
from coldbrew.serving.ranking import (
    ItemFields,
    TopLists,
    added_fields,
    item_fields,
    render_items,
    rotated_keys,
    top_with_ties,
)

MAX_K = 10_000  # the longest list one request may ask for
TOP_CACHED = 100  # each user's best items kept at load: k <= 100 reads them
CACHE_SCORES = 1 << 27  # ... scored exactly when users x items is at most this many scores
# ... searched in the index when there are at most this many users: an HNSW search of 1M items
# costs 0.24-0.40 ms (BENCHMARKS.md), 12-20 s of loading for 50,000 users, 60 MB kept
CACHE_INDEXED_USERS = 50_000


@dataclass
class AddedItem:
    id: int | str  # of the catalogue's id type
    text: str | None
    features: list | None
    vector: torch.Tensor  # (D,)


@dataclass
class Catalogue:
    vectors: Vectors
    info: dict  # the manifest (without item texts) and where it was served from
    encoder: NewItemEncoder | None = None
    encoder_error: str | None = None  # why new items cannot be scored, when they cannot
    index: object = None  # a faiss index over the items, or None: exact scoring
    added: list[AddedItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.users = torch.from_numpy(np.ascontiguousarray(self.vectors.users, np.float32))
        self.items = torch.from_numpy(np.ascontiguousarray(self.vectors.items, np.float32))
        # the data's own ids: int, or str where they are text (coldbrew.data.tables.frames)
        self.user_row = {u: row for row, u in enumerate(self.vectors.user_ids.tolist())}
        self.text_user_ids = has_text_ids(self.vectors.user_ids)
        self.text_item_ids = has_text_ids(self.vectors.item_ids)
        self.item_ids = self.vectors.item_ids.tolist()
        self.known_items = set(self.item_ids)
        cold = np.zeros(len(self.item_ids), dtype=bool)
        cold[self.vectors.cold_items] = True
        self.cold = cold.tolist()
        self.titles = item_titles(self.vectors.item_titles, self.vectors.item_text)
        self.lean_fields = item_fields(self.item_ids, self.cold, self.titles)
        self.text_fields: list[tuple[str, str]] | None = None  # made when first asked for
        self.top: TopLists | None = None  # each user's best items, when cached
        self.added_vectors = torch.zeros(0, self.items.shape[1])  # (A, D), replaced on add
        self.add_lock = threading.Lock()
        # the evaluator's tie order: each user rotates one permutation of the item ids
        self.item_keys = tie_keys(len(self.item_ids))
        self.user_shifts = tie_shifts(len(self.users), len(self.item_ids)).tolist()
        self.user_order = key_order(len(self.users))  # users of a new item: no rotation
        self.baseline = UserBaseline.of(self.users, self.items)  # new items' users: their lift
        self.loaded_at = time.time()

    # ------------------------------------------------------------------ users' lists
    def items_for(self, user: int, k: int, *, text: bool = False) -> list[dict]:
        """User ``user``'s (the data's id) top ``k``: ``rank``, ``item``, ``score``, ``cold``,
        ``title`` (when items have texts), ``added`` (items added while serving), and with
        ``text`` the item's whole text."""
        values, positions = self.ranked(user, k)
        return [
            self._item_row(rank, score, item, text)
            for rank, (score, item) in enumerate(
                zip(values.tolist(), positions.tolist(), strict=True)
            )
        ]

    def items_json(self, user: int, k: int, *, text: bool = False) -> str:
        """``{"user": user, "items": items_for(user, k, text=text)}`` as JSON text, written
        from each item's JSON fields made at load (the request path's answer)."""
        values, positions = self.ranked(user, k)
        return render_items(user, values, positions, self._fields(text))

    def ranked(self, user: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The scores and rows (catalogue rows, then ``base + j`` for the j-th added item) of
        user ``user``'s top ``k``, best first, equal scores in the user's tie-key order."""
        row = self.user_row.get(user)
        if row is None:
            raise BadRequest(f"user {user} is not in the data", 404)
        added = self.added_vectors  # one snapshot for this request
        base = len(self.item_ids)
        check_k(k, base + len(added), "items")
        seen = self._seen(row)
        wanted = min(k, base + len(added) - len(seen))
        from_catalogue = min(wanted, base - len(seen))
        if self.top is not None and k <= self.top.rows.shape[1]:
            count = self.top.counts[row]
            scores, positions = self.top.values[row, :count], self.top.rows[row, :count]
            ordered = True  # in rank order, ties included
        else:
            scores, positions, ordered = self._catalogue_top(row, seen, from_catalogue)
        if len(added):
            scores = np.concatenate([scores, (added @ self.users[row]).numpy()])
            positions = np.concatenate([positions, np.arange(base, base + len(added))])
            ordered = False
        if ordered:
            return scores[:wanted], positions[:wanted]
        return self._in_rank_order(row, scores, positions, wanted)

    def _in_rank_order(self, row: int, scores: np.ndarray, positions: np.ndarray, count: int):
        """The ``count`` best of candidates (``scores``, rows ``positions``) in user ``row``'s
        rank order: by score, ties by the user's tie key."""
        shift, keys, base = self.user_shifts[row], self.item_keys, len(self.item_ids)
        values, at = top_with_ties(
            scores, count, lambda at: rotated_keys(positions[at], keys, shift, base)
        )
        return values, positions[at]

    def _catalogue_top(self, row: int, seen: np.ndarray, count: int):
        """``(scores, rows, ordered)``: the ``count`` best catalogue rows but ``seen``, from
        the index when there is one (``ordered`` False: faiss's order), else exactly."""
        if self.index is None:
            return (*self._exact_top(row, seen, count), True)
        hits, rows = search(self.index, self.users[row : row + 1].numpy(), count, seen)
        keep = rows[0] >= 0
        return hits[0][keep], rows[0][keep].astype(np.int64), False

    def _seen(self, row: int) -> np.ndarray:
        vectors = self.vectors
        return vectors.train_indices[vectors.train_indptr[row] : vectors.train_indptr[row + 1]]

    def _exact_top(self, row: int, seen: np.ndarray, count: int):
        """The ``count`` best catalogue rows but ``seen``, scored as ``coldbrew.recommend``
        scores them (one user's row times the items, in torch)."""
        scores = (self.users[row : row + 1] @ self.items.T)[0].numpy()  # as score_users does
        scores[seen] = -np.inf
        shift, keys, base = self.user_shifts[row], self.item_keys, len(self.item_ids)
        return top_with_ties(scores, count, lambda at: rotated_keys(at, keys, shift, base))

    def cache_top_lists(self, depth: int = TOP_CACHED) -> None:
        """Each user's ``depth`` best catalogue items, found now as a request would find them
        (exactly, or in the index), so that a request for ``k <= depth`` only joins the added
        items to them."""
        base = len(self.item_ids)
        depth = min(depth, base, MAX_K)
        values = np.zeros((len(self.users), depth), np.float32)
        rows = np.zeros((len(self.users), depth), np.int64)
        counts = np.zeros(len(self.users), np.int64)
        for row in range(len(self.users)):
            seen = self._seen(row)
            count = min(depth, base - len(seen))
            found_values, found, ordered = self._catalogue_top(row, seen, count)
            if not ordered:
                found_values, found = self._in_rank_order(row, found_values, found, count)
            counts[row] = len(found)
            values[row, : len(found)], rows[row, : len(found)] = found_values, found
        self.top = TopLists(values, rows, counts)

    def _fields(self, text: bool) -> ItemFields:
        if text and self.vectors.item_text is not None:
            if self.text_fields is None:  # made on the first request that asks for texts
                self.text_fields = item_fields(
                    self.item_ids, self.cold, self.titles, self.vectors.item_text
                )
            catalogue = self.text_fields
        else:
            catalogue = self.lean_fields
        added = self.added

        def added_item(j: int):
            return added_fields(added[j].id, added[j].text, text)

        return ItemFields(catalogue, added_item)

    def _item_row(self, rank: int, score: float, item: int, text: bool) -> dict:
        base = len(self.item_ids)
        if item < base:
            row = {"rank": rank + 1, "item": self.item_ids[item], "score": score}
            row["cold"] = self.cold[item]
            if self.titles is not None:
                row["title"] = self.titles[item]
                if text:
                    row["text"] = self.vectors.item_text[item]
            return row
        added = self.added[item - base]
        row = {"rank": rank + 1, "item": added.id, "score": score, "cold": True, "added": True}
        if added.text is not None:
            row["title"] = short_title(added.text)
            if text:
                row["text"] = added.text
        return row

    # ------------------------------------------------------------------ new items
    def new_item_vector(self, text: str | None, features: list | None) -> torch.Tensor:
        if self.encoder is None:
            raise BadRequest(self.encoder_error or "this server cannot score new items", 400)
        return self.encoder.vector(text, features)

    def new_item_warnings(self, text: str | None, features: list | None) -> list[str]:
        """What the answer for a scored new item warns of (its features all zero)."""
        return [] if self.encoder is None else self.encoder.warnings(text, features)

    def users_for(self, vector: torch.Tensor, k: int) -> tuple[list[dict], list[str]]:
        """The top ``k`` users of a new item by its lift (as ``coldbrew.recommend`` ranks
        them), and a warning where the list is only the users' tie order (a model that is not
        personalised, or an item that scores alike for every user)."""
        check_k(k, len(self.users), "users")
        scores = self.users @ vector  # (U,)
        lift = self.baseline.lift(scores)
        values, rows = top_by_score_then_key(lift, k, order=self.user_order)
        user_ids = self.vectors.user_ids
        answer = [
            {
                "rank": rank + 1,
                "user": source_id(user_ids, row),
                "score": float(scores[row]),
                "lift": value,
            }
            for rank, (value, row) in enumerate(zip(values.tolist(), rows.tolist(), strict=True))
        ]
        model = self.info.get("model")
        if model in MODELS and not MODELS[model].personalised:  # the list is still answered:
            return answer, [one_list_for_all(model)]  # with add=true the item joins all the same
        return answer, [flat_list(scores, lift)] if flat_list(scores, lift) else []

    def add(
        self,
        vector: torch.Tensor,
        text: str | None,
        features: list | None,
        item_id: int | str | None,
    ) -> int | str:
        with self.add_lock:
            item_id = self.new_id(item_id)
            self.added.append(AddedItem(item_id, text, features, vector))
            self.added_vectors = torch.cat([self.added_vectors, vector[None]])  # (A + 1, D)
            return item_id

    def new_id(self, item_id: int | str | None) -> int | str:
        """The id an added item gets: ``item_id`` as the catalogue's ids are typed, or a fresh
        one (``coldbrew.serving.added_ids``); a 409 when it is taken."""
        taken = self.known_items | {item.id for item in self.added}
        return added_item_id(item_id, taken, self.text_item_ids, len(self.added))

    def readd(self, items: list[AddedItem]) -> list[int | str]:
        """Items added to an older catalogue, encoded again by this one's model; the ids of
        those it cannot encode, or whose id it now holds or cannot take (they are dropped)."""
        dropped = []
        for item in items:
            try:
                vector = self.new_item_vector(item.text, item.features)
                self.add(vector, item.text, item.features, item.id)
            except BadRequest:
                dropped.append(item.id)
        return dropped

    def summary(self) -> dict:
        return {
            "users": len(self.users),
            "items": len(self.item_ids),
            "added_items": len(self.added),
            "index": self.info.get("served_index"),
            "search_depth": None if self.index is None else index_search_depth(self.index),
            "new_items": self.encoder_error
            or "scored from " + str((self.info.get("new_items") or {}).get("reads")),
            "loaded_at": self.loaded_at,
            "source": self.info.get("served_from"),
        }


def check_k(k: int, count: int, what: str) -> None:
    if k < 1:
        raise BadRequest(f"k must be at least 1, not {k}", 422)
    if k > min(count, MAX_K):
        raise BadRequest(
            f"k={k} is more than the {min(count, MAX_K)} {what} that can be listed", 422
        )


def load_catalogue(
    source: Path | str, *, index: str | None = None, search_depth: int | None = None
) -> Catalogue:
    """A run directory (its best checkpoint, scored exactly) or an export folder (its index,
    when it has one, unless ``index="none"``). ``search_depth`` sets how deep an approximate
    index searches (``coldbrew.serving.index.set_search_depth``). Each user's best
    ``TOP_CACHED`` items are found now: scored exactly when that is at most ``CACHE_SCORES``
    scores, searched in the index when there are at most ``CACHE_INDEXED_USERS`` users."""
    from coldbrew.errors import ColdbrewError
    from coldbrew.serving.export_format import is_export

    if search_depth is not None and search_depth < 1:  # before the minutes a load can take
        raise ColdbrewError(f"--search-depth {search_depth}: give a positive number")
    source = Path(source)
    catalogue = _from_export(source, index) if is_export(source) else _from_run(source, index)
    if search_depth is not None:
        if catalogue.index is None:
            raise ColdbrewError(
                "--search-depth needs an approximate index (--index hnsw or ivf, or an "
                "export's); this catalogue is scored exactly"
            )
        set_search_depth(catalogue.index, search_depth)
    users, items = len(catalogue.users), len(catalogue.item_ids)
    if catalogue.index is not None:
        if users <= CACHE_INDEXED_USERS:
            catalogue.cache_top_lists()
    elif users * items <= CACHE_SCORES:
        catalogue.cache_top_lists()
    return catalogue


def _from_run(run_dir: Path, index: str | None) -> Catalogue:
    from coldbrew.recommend import load_run
    from coldbrew.serving.export import manifest_of, run_vectors, text_block_models

    loaded = load_run(run_dir, device="cpu")
    vectors = run_vectors(loaded)
    info = manifest_of(loaded, vectors)
    info["served_from"] = str(run_dir)
    catalogue = Catalogue(vectors, info, encoder=None)
    recipe = info["new_items"]
    if recipe["reads"] is None:
        catalogue.encoder_error = recipe["why"]
    else:
        catalogue.encoder = NewItemEncoder(loaded.model, recipe, text_block_models(info))
    _attach_index(catalogue, index)
    return catalogue


def _from_export(folder: Path, index: str | None) -> Catalogue:
    from coldbrew.errors import ColdbrewError
    from coldbrew.serving.export import text_block_models
    from coldbrew.serving.export_format import INDEX, read_manifest, read_vectors
    from coldbrew.serving.index import read_index
    from coldbrew.serving.new_items import model_from_export

    manifest = read_manifest(folder)
    vectors = read_vectors(folder)
    info = {k: v for k, v in manifest.items() if k != "item_text"}
    info["served_from"] = str(folder)
    catalogue = Catalogue(vectors, info)
    recipe = manifest.get("new_items") or {
        "reads": None,
        "why": "the export has no new-item recipe",
    }
    if recipe.get("reads") is None:
        catalogue.encoder_error = recipe.get("why")
    else:
        try:
            model = model_from_export(folder, manifest)
            catalogue.encoder = NewItemEncoder(model, recipe, text_block_models(manifest))
        except (ColdbrewError, OSError) as error:
            catalogue.encoder_error = f"new items cannot be scored from this export: {error}"
    if index is None and (folder / INDEX).is_file():
        catalogue.index = read_index(folder / INDEX, len(vectors.items), vectors.items.shape[1])
        info["served_index"] = manifest.get("index", {}).get("kind", "faiss")
    elif index not in (None, "none"):
        _attach_index(catalogue, index)
    return catalogue


def _attach_index(catalogue: Catalogue, index: str | None) -> None:
    if index in (None, "none"):
        return
    from coldbrew.serving.index import build_index

    catalogue.index = build_index(catalogue.vectors.items, index)
    catalogue.info["served_index"] = index
