"""A user's list on the request path, in numpy: the ``k`` best scores without sorting the
catalogue, equal scores in the evaluator's tie order; and the short title a lean answer shows (``coldbrew.data.titles``).

``top_with_ties`` returns what a stable sort of every score in tie-key order returns
(``coldbrew.recommend.top_by_score_then_key``), at the cost of one ``argpartition`` and a sort
of the few candidates: every score at least the ``k``-th best is a candidate, so ties at the
boundary are ordered by key like the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from coldbrew.data.titles import short_title
from coldbrew.errors import ColdbrewError


def top_with_ties(
    scores: np.ndarray, k: int, keys_of: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest of ``scores`` (n,) and their positions, equal scores by ascending
    ``keys_of(positions)`` (distinct integers): ``(values, positions)``, each ``(min(k, n),)``."""
    count = len(scores)
    k = min(k, count)
    if k <= 0:
        return scores[:0], np.zeros(0, dtype=np.int64)
    if k < count:
        threshold = np.partition(scores, count - k)[count - k]  # the k-th highest
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(count)
    values = scores[candidates]
    order = np.lexsort((keys_of(candidates), -values))[:k]  # by score, then by key
    return values[order], candidates[order]


def rotated_keys(positions: np.ndarray, item_keys: np.ndarray, shift: int, base: int) -> np.ndarray:
    """The tie keys of catalogue rows and added items as one user sees them: a catalogue row
    ``i < base`` has ``(item_keys[i] + shift) % base`` (``coldbrew.evaluation.topk``), an added
    item ``base + j`` keeps ``base + j``, after every catalogue item, in the order added."""
    inside = positions < base
    keys = positions.astype(np.int64, copy=True)
    keys[inside] = (item_keys[positions[inside]] + shift) % base
    return keys


# ---------------------------------------------------------------------------------- answers
@dataclass
class TopLists:
    """Each user's best catalogue items, computed at load: ``values`` and ``rows`` (U, depth),
    the first ``counts[u]`` of row u valid (fewer where a user has seen nearly every item)."""

    values: np.ndarray
    rows: np.ndarray
    counts: np.ndarray


Fields = tuple[str, str]  # an item's JSON fields before and after its score


@dataclass
class ItemFields:
    """The JSON fields of the catalogue's items, by row, and of the j-th added item."""

    catalogue: list[Fields]
    added: Callable[[int], Fields]


def item_fields(
    ids: list[int], cold: list[bool], titles: list[str] | None, texts: Sequence[str] | None = None
) -> list[Fields]:
    """Per catalogue row, ``('"item": ID', '"cold": ..., "title": ...[, "text": ...]')``."""
    dumps = json.dumps
    rows = []
    for row, item in enumerate(ids):
        rest = f'"cold": {dumps(cold[row])}'
        if titles is not None:
            rest += f', "title": {dumps(titles[row])}'
            if texts is not None:
                rest += f', "text": {dumps(texts[row])}'
        rows.append((f'"item": {dumps(item)}', rest))
    return rows


def added_fields(item: int | str, text: str | None, with_text: bool) -> Fields:
    rest = '"cold": true, "added": true'
    if text is not None:
        rest += f', "title": {json.dumps(short_title(text))}'
        if with_text:
            rest += f', "text": {json.dumps(text)}'
    return f'"item": {json.dumps(item)}', rest  # a text id is quoted, as a catalogue's is


def render_items(user: int | str, values: np.ndarray, rows: np.ndarray, fields: ItemFields) -> str:
    """``{"user": ..., "items": [{"rank", "item", "score", ...}]}`` as JSON text; a score is
    written as ``json.dumps`` writes it (``repr`` of the float)."""
    if not np.isfinite(values).all():
        raise ColdbrewError("the model scores some items NaN or infinite: its vectors are broken")
    base = len(fields.catalogue)
    parts = []
    for rank, (score, row) in enumerate(zip(values.tolist(), rows.tolist(), strict=True), 1):
        item, rest = fields.catalogue[row] if row < base else fields.added(row - base)
        parts.append(f'{{"rank": {rank}, {item}, "score": {score!r}, {rest}}}')
    return f'{{"user": {json.dumps(user)}, "items": [{", ".join(parts)}]}}'
