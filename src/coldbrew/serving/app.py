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
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from coldbrew.errors import ColdbrewError
from coldbrew.serving.catalogue import Catalogue, check_k, load_catalogue
from coldbrew.serving.new_items import BadRequest
from coldbrew.serving.validation import (
    ITEMS_PARAMETERS,
    NewItem,
    check_query,
    describe_validation,
    no_query,
    parse_fields,
    parse_k,
    parse_new_item,
    parse_user,
    read_body,
)

LOGGER = logging.getLogger("coldbrew.serving")


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


def create_app(holder: Holder, lifespan=None) -> FastAPI:
    app = FastAPI(
        lifespan=lifespan,
        title="coldbrew",
        description="A trained coldbrew run's recommendations, answered from memory.",
    )
    app.state.holder = holder
    add_error_handlers(app)
    add_read_routes(app, holder)
    add_item_routes(app, holder)
    add_reload_route(app, holder)
    return app


# every route but the hot one (a user's items): it checks its query by hand
STRICT = [Depends(no_query)]


def add_error_handlers(app: FastAPI) -> None:
    """Every refusal as one line of JSON, ``{"error": "..."}``, never a traceback."""

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


def add_read_routes(app: FastAPI, holder: Holder) -> None:
    """``/health``, ``/info`` and the hot path, ``/users/{user}/items`` (an id holding ``/``
    is sent as ``%2F``)."""

    @app.get("/health", summary="liveness: ok when a catalogue is loaded", dependencies=STRICT)
    async def health():
        summary = holder.catalogue.summary()
        counts = {name: summary[name] for name in ("users", "items", "added_items")}
        return {"status": "ok", **counts}

    @app.get(
        "/info",
        summary="model, data, metrics, convention, versions, what is served",
        dependencies=STRICT,
    )
    async def info():
        catalogue = holder.catalogue
        return json_response(
            {**catalogue.info, "served": catalogue.summary(), "reloads": holder.reloads}
        )

    # {user:path}: an id holding "/" arrives decoded (a%2Fb -> a/b) and still names the user
    @app.get(
        "/users/{user:path}/items",
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
        user = parse_user(request.path_params["user"], text=catalogue.text_user_ids)
        k = parse_k(query.get("k", "20"))
        return Response(catalogue.items_json(user, k, text=text), media_type="application/json")


def add_item_routes(app: FastAPI, holder: Holder) -> None:
    """New items: ``POST /items/score`` (and add) and ``/items/added``."""

    @app.post(
        "/items/score",
        summary="the top users for a new item; with add=true it joins the catalogue",
        dependencies=STRICT,
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
        rows, warnings = catalogue.users_for(vector, request.k)
        answer = {"users": rows}
        if request.add:
            answer["item"] = catalogue.add(vector, request.text, request.features, request.id)
        warnings += catalogue.new_item_warnings(request.text, request.features)
        if warnings:
            answer["warnings"] = warnings
        return json_response(answer)

    @app.get("/items/added", summary="items added while serving", dependencies=STRICT)
    async def added():
        return [{"item": item.id, "text": item.text} for item in holder.catalogue.added]


def add_reload_route(app: FastAPI, holder: Holder) -> None:
    @app.post(
        "/reload",
        summary="load the run again (Authorization: Bearer TOKEN)",
        dependencies=STRICT,
    )
    async def reload(request: Request):
        check_token(holder.token, request.headers.get("authorization"))
        try:
            return await holder.reload()
        except (ColdbrewError, OSError) as exc:
            raise BadRequest(
                f"reload failed, still serving the old catalogue: {exc}", 409
            ) from None


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
