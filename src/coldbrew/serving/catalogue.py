"""The served state: user and item vectors, each user's training items, items added while
serving, and the rankings the endpoints return.

A user's list is ranked exactly as ``coldbrew.recommend`` ranks it (the same product of the
same vectors, the same tie order through ``top_by_score_then_key``), unless a faiss index
serves it (approximate). Added items are scored exactly and joined to either.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from coldbrew.evaluation.topk import tie_keys, tie_shifts
from coldbrew.recommend import key_order, top_by_score_then_key
from coldbrew.serving.export_format import Vectors
from coldbrew.serving.new_items import BadRequest, NewItemEncoder

MAX_K = 10_000  # the longest list one request may ask for


@dataclass
class AddedItem:
    id: int
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
        self.user_row = {int(u): row for row, u in enumerate(self.vectors.user_ids.tolist())}
        self.item_ids = self.vectors.item_ids.tolist()
        self.known_items = set(self.item_ids)
        self.cold = np.zeros(len(self.item_ids), dtype=bool)
        self.cold[self.vectors.cold_items] = True
        self.added_vectors = torch.zeros(0, self.items.shape[1])  # (A, D), replaced on add
        self.add_lock = threading.Lock()
        # the evaluator's tie order: each user rotates one permutation of the item ids
        self.item_keys = torch.from_numpy(tie_keys(len(self.item_ids)))
        self.user_shifts = tie_shifts(len(self.users), len(self.item_ids))
        self.item_order = key_order(len(self.item_ids))  # item rows by key, before rotation
        self.user_order = key_order(len(self.users))  # users of a new item: no rotation
        self.loaded_at = time.time()

    # ------------------------------------------------------------------ users' lists
    def items_for(self, user: int, k: int) -> list[dict]:
        row = self.user_row.get(user)
        if row is None:
            raise BadRequest(f"user {user} is not in the data", 404)
        added = self.added_vectors  # one snapshot for this request
        total = len(self.item_ids) + len(added)
        check_k(k, total, "items")
        vectors = self.vectors
        seen = vectors.train_indices[vectors.train_indptr[row] : vectors.train_indptr[row + 1]]
        wanted = min(k, total - len(seen))
        if self.index is not None:
            values, rows = self._indexed(row, seen, added, wanted)
        else:
            scores = (self.users[row : row + 1] @ self.items.T)[0]  # as score_users computes
            if len(added):
                scores = torch.cat([scores, added @ self.users[row]])
            scores[torch.from_numpy(seen)] = -torch.inf
            values, rows = top_by_score_then_key(scores, wanted, order=self._item_order(row))
        return [
            self._item_row(rank, score, item)
            for rank, (score, item) in enumerate(zip(values.tolist(), rows.tolist(), strict=True))
        ]

    def _indexed(self, row: int, seen: np.ndarray, added: torch.Tensor, wanted: int):
        """The index's best ``wanted`` unseen items joined with the added items' exact scores."""
        query = self.users[row : row + 1].numpy()
        depth = min(wanted + len(seen), len(self.item_ids))
        scores, rows = self.index.search(query, depth)
        keep = (rows[0] >= 0) & ~np.isin(rows[0], seen)
        values = torch.from_numpy(scores[0][keep].astype(np.float32))
        ids = torch.from_numpy(rows[0][keep].astype(np.int64))
        if len(added):
            values = torch.cat([values, added @ self.users[row]])
            extra = torch.arange(len(added)) + len(self.item_ids)
            ids = torch.cat([ids, extra])
        base = len(self.item_ids)
        keys = torch.where(  # added items rank after the catalogue's equal scores, in order
            ids < base,
            (self.item_keys[ids.clamp(max=base - 1)] + int(self.user_shifts[row])) % base,
            ids,
        )
        order = np.lexsort((keys.numpy(), -values.numpy()))[:wanted]  # score, then tie key
        return values[order], ids[order]

    def _item_order(self, row: int) -> torch.Tensor:
        """Item rows (the catalogue's, then the added ones) in user ``row``'s tie order."""
        base = len(self.item_ids)
        # rotating the keys by s rotates the key order: the item of rotated key 0 has key n - s
        start = (base - int(self.user_shifts[row])) % base
        rotated = torch.roll(self.item_order, -start)
        return torch.cat([rotated, torch.arange(base, base + len(self.added_vectors))])

    def _item_row(self, rank: int, score: float, item: int) -> dict:
        base = len(self.item_ids)
        if item < base:
            row = {
                "rank": rank + 1,
                "item": self.item_ids[item],
                "score": score,
                "cold": bool(self.cold[item]),
            }
            if self.vectors.item_text is not None:
                row["text"] = self.vectors.item_text[item]
            return row
        added = self.added[item - base]
        row = {"rank": rank + 1, "item": added.id, "score": score, "cold": True, "added": True}
        if added.text is not None:
            row["text"] = added.text
        return row

    # ------------------------------------------------------------------ new items
    def new_item_vector(self, text: str | None, features: list | None) -> torch.Tensor:
        if self.encoder is None:
            raise BadRequest(self.encoder_error or "this server cannot score new items", 400)
        return self.encoder.vector(text, features)

    def users_for(self, vector: torch.Tensor, k: int) -> list[dict]:
        check_k(k, len(self.users), "users")
        scores = self.users @ vector  # (U,) as coldbrew.recommend ranks users
        values, rows = top_by_score_then_key(scores, k, order=self.user_order)
        user_ids = self.vectors.user_ids
        return [
            {"rank": rank + 1, "user": int(user_ids[row]), "score": score}
            for rank, (score, row) in enumerate(zip(values.tolist(), rows.tolist(), strict=True))
        ]

    def add(
        self, vector: torch.Tensor, text: str | None, features: list | None, item_id: int | None
    ) -> int:
        with self.add_lock:
            taken = self.known_items | {item.id for item in self.added}
            if item_id is None:
                item_id = max(taken, default=-1) + 1
            elif item_id in taken:
                raise BadRequest(f"item {item_id} is already in the catalogue", 409)
            self.added.append(AddedItem(item_id, text, features, vector))
            self.added_vectors = torch.cat([self.added_vectors, vector[None]])  # (A + 1, D)
            return item_id

    def readd(self, items: list[AddedItem]) -> list[int]:
        """Items added to an older catalogue, encoded again by this one's model; the ids of
        those it cannot encode (they are dropped)."""
        dropped = []
        for item in items:
            try:
                vector = self.new_item_vector(item.text, item.features)
            except BadRequest:
                dropped.append(item.id)
                continue
            self.add(vector, item.text, item.features, item.id)
        return dropped

    def summary(self) -> dict:
        return {
            "users": len(self.users),
            "items": len(self.item_ids),
            "added_items": len(self.added),
            "index": self.info.get("served_index"),
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


def load_catalogue(source: Path | str, *, index: str | None = None) -> Catalogue:
    """A run directory (its best checkpoint, scored exactly) or an export folder (its index,
    when it has one, unless ``index="none"``)."""
    from coldbrew.serving.export_format import is_export

    source = Path(source)
    if is_export(source):
        return _from_export(source, index)
    return _from_run(source, index)


def _from_run(run_dir: Path, index: str | None) -> Catalogue:
    from coldbrew.recommend import load_run
    from coldbrew.serving.export import manifest_of, run_vectors

    loaded = load_run(run_dir, device="cpu")
    vectors = run_vectors(loaded)
    info = manifest_of(loaded, vectors)
    info["served_from"] = str(run_dir)
    catalogue = Catalogue(vectors, info, encoder=None)
    recipe = info["new_items"]
    if recipe["reads"] is None:
        catalogue.encoder_error = recipe["why"]
    else:
        catalogue.encoder = NewItemEncoder(loaded.model, recipe, info["text_encoder"])
    _attach_index(catalogue, index)
    return catalogue


def _from_export(folder: Path, index: str | None) -> Catalogue:
    from coldbrew.errors import ColdbrewError
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
            catalogue.encoder = NewItemEncoder(model, recipe, manifest.get("text_encoder"))
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
