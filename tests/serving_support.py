"""A served catalogue on a free loopback port, in a thread, for tests with a real HTTP client."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

from coldbrew.config import make_config
from coldbrew.training.run import train


def tiny_clcrec_run(folder):
    """A CLCRec run on synthetic:small (500 users, 300 items, 32-wide content): a few seconds."""
    config = make_config({"data": "synthetic:small", "epochs": 1, "num_neg": 8, "quiet": True})
    train(config, folder)
    return folder


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_server(source, **options):
    """``(base_url, holder)`` of a server on a free port, stopped on exit."""
    from coldbrew.serving.server import make_server

    server, holder = make_server(source, port=free_port(), **options)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}", holder
    finally:
        server.should_exit = True
        thread.join(timeout=15)


FILM_ITEMS = "iid,title,genres\n" + "".join(
    f"{item},Film {item} (199{item % 10}),{'Action' if item % 2 else 'Drama'}\n"
    for item in range(1, 13)
)
FILM_TRAIN = "uid,iid\n" + "".join(
    f"{user},{(user + shift) % 9 + 1}\n" for user in range(1, 7) for shift in (0, 1, 3)
)
FILM_COLD_VAL = "uid,iid\n" + "".join(f"{user},{10 + user % 3}\n" for user in range(1, 7))


def tiny_films(folder):
    """Cold-start CSV splits of 12 films (genres Action or Drama, titles as texts), 6 users."""
    folder.mkdir(parents=True)
    for name, text in (
        ("items.csv", FILM_ITEMS),
        ("train.csv", FILM_TRAIN),
        ("cold_val.csv", FILM_COLD_VAL),
    ):
        (folder / name).write_text(text)
    return folder


def tiny_text_run(folder, data, encoder, model: str = "clcrec", **options):
    """A ``model`` run on ``data`` with ``--features genre,text``, the text block encoded by the
    sentence encoder folder ``encoder``: one epoch, a second or two."""
    settings = {"data": str(data), "features": "genre,text", "text_encoder": str(encoder)}
    settings |= {"model": model, "epochs": 1, "batch_size": 16, "quiet": True, **options}
    if model == "clcrec":
        settings["num_neg"] = 2
    train(make_config(settings), folder)
    return folder
