"""What ``coldbrew serve``'s requests may hold, checked strictly: the new item's body
(``NewItem``: unknown fields, strings, booleans or floats for integers, an id that is neither
integer nor text or comes without ``add`` refused; its type against the catalogue's in
``coldbrew.serving.added_ids``), the path's user and the query's ``k`` (digits only),
``fields``, and no query parameter a route does not take. Each refusal is a ``BadRequest``
with one line saying what is wrong."""

from __future__ import annotations

import json
import math
import re

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coldbrew.serving.new_items import BadRequest

MAX_BODY_BYTES = 1 << 20


class NewItem(BaseModel):
    """A new item: its text and/or feature blocks (see ``GET /info``'s ``new_items``). Strict:
    no strings, booleans or floats for integers (``"k": "5"``, ``true``, ``2.0``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str | None = Field(None, description="title, genres, plot ...")
    features: list[float] | None = Field(None, description="feature blocks, concatenated")
    k: int = Field(100, description="how many users to list")
    add: bool = Field(False, description="join the served catalogue")
    id: int | str | None = Field(
        None,
        description="its id when added (only with add: true), of the catalogue's id type: an "
        "integer from 0 to 2^63 - 1, or text where item ids are text (an integer is then read "
        "as its text); default: the one after the largest integer id, or added-N for text ids",
    )


INTEGER = re.compile(r"-?[0-9]{1,30}")  # what int() reads but "+5", " 5", "5_0", "٥"


def parse_k(value: str) -> int:
    if INTEGER.fullmatch(value) is None:
        raise BadRequest(f"k must be an integer, not {value[:40]!r}", 422)
    return int(value)


ITEM_FIELDS = ("text",)  # what ?fields= may add to an item's rank, id, score, cold and title
ITEMS_PARAMETERS = [
    {
        "name": "user",
        "in": "path",
        "required": True,
        "description": "the data's user id: an integer, or text where the data's ids are text",
        "schema": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    },
    {
        "name": "k",
        "in": "query",
        "description": "how many items",
        "schema": {"type": "integer", "default": 20, "minimum": 1},
    },
    {
        "name": "fields",
        "in": "query",
        "description": "more fields of each item, comma-separated: text (the item's whole text)",
        "schema": {"type": "string", "default": ""},
    },
]


def parse_fields(value: str) -> bool:
    """``?fields=text``: whether the items' whole texts are wanted."""
    wanted = {field.strip() for field in value.split(",") if field.strip()}
    unknown = sorted(wanted - set(ITEM_FIELDS))
    if unknown:
        raise BadRequest(
            f"unknown field {unknown[0][:40]!r}: fields may name {', '.join(ITEM_FIELDS)}", 422
        )
    return "text" in wanted


def parse_user(value: str, text: bool = False) -> int | str:
    """A path's user id: an integer, or the text as it is where the data's ids are text."""
    if text and value:
        return value
    if INTEGER.fullmatch(value) is None:
        raise BadRequest(f"user must be an integer id, not {value[:40]!r}", 422)
    return int(value)


def check_query(request: Request, allowed: tuple[str, ...] = ()) -> None:
    """Refuse a query parameter the route does not take (as unknown body fields are)."""
    for name in request.query_params:
        if name not in allowed:
            takes = f"takes only {', '.join(allowed)}" if allowed else "takes no query parameters"
            raise BadRequest(
                f"unknown query parameter {name[:40]!r}: {request.method} "
                f"{request.url.path[:60]} {takes}",
                422,
            )


async def no_query(request: Request) -> None:
    check_query(request)


async def read_body(request: Request) -> bytes:
    """The raw body, at most ``MAX_BODY_BYTES``, parsed by ``parse_new_item`` (one-line errors
    for malformed JSON); a larger one is refused before it is read."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
        raise BadRequest(f"request body over {MAX_BODY_BYTES} bytes", 413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest(f"request body over {MAX_BODY_BYTES} bytes", 413)
    return bytes(body)


def parse_new_item(body: bytes) -> NewItem:
    if not body:
        raise BadRequest("the request has no JSON body", 400)
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"malformed JSON: {str(exc).splitlines()[0]}", 400) from None
    if not isinstance(payload, dict):
        raise BadRequest("the body must be a JSON object", 422)
    try:
        item = NewItem.model_validate(payload)
    except ValidationError as exc:
        raise BadRequest(describe_validation(exc.errors()), 422) from None
    if item.id is not None and not item.add:
        raise BadRequest(
            '"id" is the id an added item gets: send it with "add": true (or leave it out)', 422
        )
    if item.features is not None and not all(math.isfinite(v) for v in item.features):
        bad = sum(not math.isfinite(v) for v in item.features)
        raise BadRequest(f"features hold {bad} NaN or infinite value(s): give finite numbers", 422)
    return item


def describe_validation(errors) -> str:
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    kind, given = first.get("type"), shown(first.get("input"))
    if where.startswith("id."):  # neither branch of int | str: a float, a boolean, a list
        return f"id must be an integer or a text (as the catalogue's item ids are), not {given}"
    if kind == "int_type":
        return f"{where} must be an integer, not {given}{more}"
    return f"{where or 'request'}: {first.get('msg')}{more}"


def shown(value) -> str:
    """A request's value as JSON, cut to 40 characters."""
    try:
        return json.dumps(value)[:40]
    except (TypeError, ValueError):
        return repr(value)[:40]
