"""The HTTP API (FastAPI): answers from the catalogue in memory; OpenAPI docs at ``/docs``.

Every refusal is a 4xx with one line of JSON, ``{"error": "..."}``; nothing answers with a
traceback. ``Holder`` keeps the catalogue being served and swaps in a new one on reload:
a request in flight keeps the catalogue it started with.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import re
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from coldbrew.errors import ColdbrewError
from coldbrew.serving.catalogue import MAX_ID, Catalogue, check_k, load_catalogue
from coldbrew.serving.new_items import BadRequest

LOGGER = logging.getLogger("coldbrew.serving")
MAX_BODY_BYTES = 1 << 20


class NewItem(BaseModel):
    """A new item: its text and/or feature blocks (see ``GET /info``'s ``new_items``). Strict:
    no strings, booleans or floats for integers (``"k": "5"``, ``true``, ``2.0``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    text: str | None = Field(None, description="title, genres, plot ...")
    features: list[float] | None = Field(None, description="feature blocks, concatenated")
    k: int = Field(100, description="how many users to list")
    add: bool = Field(False, description="join the served catalogue")
    id: int | None = Field(
        None,
        ge=0,
        le=MAX_ID,
        description="its id when added (only with add: true; default: the next free id)",
    )


class Holder:
    """The served catalogue, where it was loaded from, and reloads of it."""

    def __init__(
        self,
        source: Path | str,
        *,
        index: str | None = None,
        search_depth: int | None = None,
        token: str | None = None,
    ):
        self.source, self.index, self.token = Path(source), index, token
        self.search_depth = search_depth
        self.catalogue: Catalogue = self.load()
        self.reload_lock = asyncio.Lock()
        self.reloads = 0

    def load(self) -> Catalogue:
        return load_catalogue(self.source, index=self.index, search_depth=self.search_depth)

    async def reload(self) -> dict:
        """Load the source again (in a worker thread), carry the added items over, swap."""
        async with self.reload_lock:
            old = self.catalogue
            new = await asyncio.to_thread(self.load)
            if new.encoder is not None:
                await asyncio.to_thread(new.encoder.warm_up)
            dropped = await asyncio.to_thread(new.readd, list(old.added))
            self.catalogue = new
            self.reloads += 1
            LOGGER.warning("reloaded %s (%d added items dropped)", self.source, len(dropped))
            return {"reloaded": str(self.source), "dropped_added_items": dropped}


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)


def json_response(payload) -> Response:
    return Response(json.dumps(payload, allow_nan=False), media_type="application/json")


INTEGER = re.compile(r"-?[0-9]{1,30}")  # what int() reads but "+5", " 5", "5_0", "٥"


def parse_k(value: str) -> int:
    if INTEGER.fullmatch(value) is None:
        raise BadRequest(f"k must be an integer, not {value[:40]!r}", 422)
    return int(value)


ITEM_FIELDS = ("text",)  # what ?fields= may add to an item's rank, id, score, cold and title
ITEMS_PARAMETERS = [
    {"name": "user", "in": "path", "required": True, "schema": {"type": "integer"}},
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


def parse_user(value: str) -> int:
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


def create_app(holder: Holder, lifespan=None) -> FastAPI:
    app = FastAPI(
        lifespan=lifespan,
        title="coldbrew",
        description="A trained coldbrew run's recommendations, answered from memory.",
    )
    app.state.holder = holder

    @app.exception_handler(BadRequest)
    async def refused(request, exc: BadRequest):
        return error(exc.status, str(exc))

    @app.exception_handler(ColdbrewError)
    async def library_refused(request, exc: ColdbrewError):
        return error(422, str(exc))

    @app.exception_handler(HTTPException)
    async def http_refused(request, exc: HTTPException):
        return error(exc.status_code, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError):
        return error(422, describe_validation(exc.errors()))

    @app.exception_handler(Exception)
    async def failed(request, exc: Exception):  # a bug: one line to the client, the log has it
        LOGGER.exception("internal error on %s", request.url.path)
        return error(500, f"internal error ({type(exc).__name__}); the server log has details")

    strict = [Depends(no_query)]  # every route but the hot one: it checks by hand

    @app.get("/health", summary="liveness: ok when a catalogue is loaded", dependencies=strict)
    async def health():
        summary = holder.catalogue.summary()
        counts = {name: summary[name] for name in ("users", "items", "added_items")}
        return {"status": "ok", **counts}

    @app.get(
        "/info",
        summary="model, data, metrics, convention, versions, what is served",
        dependencies=strict,
    )
    async def info():
        catalogue = holder.catalogue
        return json_response(
            {**catalogue.info, "served": catalogue.summary(), "reloads": holder.reloads}
        )

    @app.get(
        "/users/{user}/items",
        summary="a user's top items (training items left out)",
        openapi_extra={"parameters": ITEMS_PARAMETERS},
    )
    async def items_for(request: Request):
        # parameters read by hand (documented by ITEMS_PARAMETERS): FastAPI's validation of
        # three of them cost as much CPU as the ranking on the hot path
        catalogue = holder.catalogue  # this request's snapshot, whatever a reload does
        query = request.query_params
        check_query(request, ("k", "fields"))
        text = parse_fields(query.get("fields", ""))
        user, k = parse_user(request.path_params["user"]), parse_k(query.get("k", "20"))
        return Response(catalogue.items_json(user, k, text=text), media_type="application/json")

    @app.post(
        "/items/score",
        summary="the top users for a new item; with add=true it joins the catalogue",
        dependencies=strict,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": NewItem.model_json_schema()}},
            }
        },
    )
    def score_item(body: bytes = Depends(read_body)):
        request = parse_new_item(body)
        catalogue = holder.catalogue
        # the cheap checks first: a bad k or id is named before the item is looked at
        check_k(request.k, len(catalogue.users), "users")
        if request.add:
            catalogue.new_id(request.id)  # checked again when it is added
        vector = catalogue.new_item_vector(request.text, request.features)
        rows = catalogue.users_for(vector, request.k)
        answer = {"users": rows}
        if request.add:
            answer["item"] = catalogue.add(vector, request.text, request.features, request.id)
        warnings = catalogue.new_item_warnings(request.text, request.features)
        if warnings:
            answer["warnings"] = warnings
        return json_response(answer)

    @app.get("/items/added", summary="items added while serving", dependencies=strict)
    async def added():
        return [{"item": item.id, "text": item.text} for item in holder.catalogue.added]

    @app.post(
        "/reload",
        summary="load the run again (Authorization: Bearer TOKEN)",
        dependencies=strict,
    )
    async def reload(request: Request):
        check_token(holder.token, request.headers.get("authorization"))
        try:
            return await holder.reload()
        except (ColdbrewError, OSError) as exc:
            raise BadRequest(
                f"reload failed, still serving the old catalogue: {exc}", 409
            ) from None

    return app


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
    if kind == "int_type":
        return f"{where} must be an integer, not {given}{more}"
    if where == "id" and kind in ("greater_than_equal", "less_than_equal"):
        return f"id must be an integer from 0 to {MAX_ID} (ids are int64), not {given}{more}"
    return f"{where or 'request'}: {first.get('msg')}{more}"


def shown(value) -> str:
    """A request's value as JSON, cut to 40 characters."""
    try:
        return json.dumps(value)[:40]
    except (TypeError, ValueError):
        return repr(value)[:40]


def check_token(token: str | None, header: str | None) -> None:
    if not token:
        raise BadRequest(
            "reload over HTTP is off: start the server with a token (COLDBREW_SERVE_TOKEN) "
            "or send it SIGHUP",
            403,
        )
    given = (header or "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise BadRequest("wrong or missing token (Authorization: Bearer TOKEN)", 401)
