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
