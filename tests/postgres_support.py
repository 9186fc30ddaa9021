"""A real PostgreSQL server for the tests: Debian's package (``initdb``, ``pg_ctl``), a new
cluster in a temporary folder, on a free loopback port, stopped at the end.

PostgreSQL refuses to run as root: as root the cluster belongs to the ``postgres`` system user
(the package creates it) and its commands run through ``runuser``. Where anything is missing
(the server, the ``postgres`` user, psycopg2 or SQLAlchemy) or the server does not start, the
tests skip and say why."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

USER = "coldbrew"  # the cluster's superuser (trust authentication on 127.0.0.1 only)


def postgres_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on the PATH, else Debian's newest version."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    return Path(versions[-1]).parent if versions else None


def _version(path: str) -> tuple[int, ...]:
    number = Path(path).parts[-3]
    return tuple(int(part) for part in number.split(".") if part.isdigit())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def why_not() -> str | None:
    """Why a server cannot be started here, or None."""
    for module in ("sqlalchemy", "psycopg2"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[research]')"
    if postgres_bin() is None:
        return "PostgreSQL is not installed (apt-get install postgresql)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser: cannot start PostgreSQL as another user"
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and no 'postgres' user to run PostgreSQL as"
    return None


def _as_owner(command: list[str]) -> list[str]:
    """``command`` run as the cluster's owner: ``postgres`` when we are root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextlib.contextmanager
def running_postgres() -> Iterator[str]:
    """Start a new cluster and yield its URL (database ``postgres``); raise RuntimeError with
    the server's log where it does not start."""
    binary = postgres_bin()
    assert binary is not None
    folder = Path(tempfile.mkdtemp(prefix="coldbrew-pg-"))
    data, log = folder / "data", folder / "server.log"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    started = False
    try:
        _run(_as_owner([str(binary / "initdb"), "-D", str(data), "-U", USER, "--auth=trust"]))
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off"
        start = [str(binary / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
        _run(_as_owner([*start, "-w", "-t", "60", "start"]), log)
        started = True
        yield f"postgresql+psycopg2://{USER}@127.0.0.1:{port}/postgres"
    finally:
        if started:
            stop = [str(binary / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
            subprocess.run(_as_owner(stop), capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


def _run(command: list[str], log: Path | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        server = log.read_text()[-2000:] if log is not None and log.exists() else ""
        raise RuntimeError(f"{command[-1]} failed: {done.stderr[-2000:]}{server}")


def new_database(url: str, name: str) -> str:
    """A new empty database ``name`` on the server at ``url``; its URL."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return url.rsplit("/", 1)[0] + f"/{name}"
