"""The id an item added while serving gets: of the catalogue's id type, never one taken.

A catalogue of integer ids takes integers from 0 to 2^63 − 1 (the export's int64) and gives an
item sent without an id the one after the largest taken. A catalogue of text ids (SKUs, UUIDs)
takes text, and an integer as its text (``31`` is the item ``"31"``, so it collides with it);
an item sent without an id gets ``added-N``, the first N from the count of added items on that
is not taken. A taken id is a 409; an id of the wrong type or form a 422.
"""

from __future__ import annotations

import json

from coldbrew.serving.new_items import BadRequest

MAX_ID = 2**63 - 1  # ids are the export's int64
MAX_TEXT_ID = 200  # characters of a text id
FRESH_TEXT_ID = "added-{}"


def added_item_id(wanted: int | str | None, taken: set, text_ids: bool, added: int) -> int | str:
    """The id for a new item: ``wanted`` checked against the catalogue's type and the ``taken``
    ids, or a fresh one (``added``: how many items were added before it)."""
    if isinstance(wanted, bool):  # a JSON true is no id (pydantic refuses it first)
        raise BadRequest(f"id must be an id, not {json.dumps(wanted)}", 422)
    if text_ids:
        return _text_id(wanted, taken, added)
    return _integer_id(wanted, taken)


def _integer_id(wanted: int | str | None, taken: set) -> int:
    if wanted is None:
        fresh = max((t for t in taken if isinstance(t, int)), default=-1) + 1
        if fresh > MAX_ID:
            raise BadRequest(
                f"no automatic id is left: the largest id taken is {MAX_ID} (int64's "
                'largest); give the new item an unused "id"',
                409,
            )
        return fresh
    if isinstance(wanted, str):
        raise BadRequest(
            f"id must be an integer, not {json.dumps(wanted)[:40]}: this catalogue's item ids "
            "are integers",
            422,
        )
    if not 0 <= wanted <= MAX_ID:
        raise BadRequest(
            f"id must be an integer from 0 to {MAX_ID} (ids are int64), not {wanted}", 422
        )
    if wanted in taken:
        raise BadRequest(f"item {wanted} is already in the catalogue", 409)
    return wanted


def _text_id(wanted: int | str | None, taken: set, added: int) -> str:
    if wanted is None:
        number = added + 1
        while FRESH_TEXT_ID.format(number) in taken:
            number += 1
        return FRESH_TEXT_ID.format(number)
    text = str(wanted)  # an integer is its text form: 31 names the item "31"
    if not text or text != text.strip() or len(text) > MAX_TEXT_ID:
        raise BadRequest(
            f"id must be a text of 1 to {MAX_TEXT_ID} characters without surrounding spaces "
            f"(this catalogue's item ids are text), not {json.dumps(text)[:40]}",
            422,
        )
    if text in taken:
        how = " (an integer id is read as its text here)" if isinstance(wanted, int) else ""
        raise BadRequest(f"item {json.dumps(text)} is already in the catalogue{how}", 409)
    return text
