"""``coldbrew serve``: the catalogue loaded once, the API on uvicorn, SIGHUP reloads it."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from contextlib import asynccontextmanager
from pathlib import Path

from coldbrew.errors import ColdbrewError

TOKEN_VARIABLE = "COLDBREW_SERVE_TOKEN"
LOGGER = logging.getLogger("coldbrew.serving")


def read_token(token_file: str | None) -> str | None:
    if token_file is not None:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as error:
            raise ColdbrewError(
                f"cannot read --token-file {token_file}: {error.strerror}"
            ) from None
        if not token:
            raise ColdbrewError(f"--token-file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_VARIABLE) or None


def make_server(
    source: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    index: str | None = None,
    search_depth: int | None = None,
    token: str | None = None,
    log_level: str = "warning",
):
    """An unstarted ``uvicorn.Server`` serving ``source`` (a run or an export), and its
    ``Holder``. ``server.run()`` blocks; in the main thread SIGHUP reloads the source."""
    import uvicorn

    from coldbrew.serving.app import Holder, create_app
    from coldbrew.system.threads import ensure_threads

    ensure_threads()  # every entry point's thread choice (the CLI's, if it made one, stands)
    holder = Holder(source, index=index, search_depth=search_depth, token=token)
    if holder.catalogue.encoder is not None:
        holder.catalogue.encoder.warm_up()
    app = create_app(holder, lifespan=reload_on_sighup)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=10,
    )
    return uvicorn.Server(config), holder


@asynccontextmanager
async def reload_on_sighup(app):
    """While serving: SIGHUP loads the source again (main thread only; tests run elsewhere)."""
    loop = asyncio.get_running_loop()
    holder = app.state.holder
    try:
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(_reload(holder)))
        installed = True
    except (RuntimeError, ValueError, NotImplementedError):  # not the main thread
        installed = False
    yield
    if installed:
        loop.remove_signal_handler(signal.SIGHUP)


async def _reload(holder) -> None:
    try:
        await holder.reload()
    except Exception as error:  # noqa: BLE001 - the old catalogue keeps serving
        LOGGER.error("reload on SIGHUP failed, still serving the old catalogue: %s", error)


def serve(source: str | Path, **options) -> None:
    server, holder = make_server(source, **options)
    summary = holder.catalogue.summary()
    config = server.config
    print(
        f"coldbrew serve: {summary['users']} users, {summary['items']} items from {source} "
        f"on http://{config.host}:{config.port} (docs: /docs; SIGHUP reloads)",
        flush=True,
    )
    server.run()
