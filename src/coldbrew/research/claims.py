"""Units of work (``"clcrec/fold-2/seed-1"``) handed out to workers on any number of machines:
each worker claims a unit nobody holds, keeps its claim alive with heartbeats, and marks it done.

Two places hold the claims, chosen by :meth:`Claims.open`: a database URL (a table
``coldbrew_claims`` through SQLAlchemy: PostgreSQL, MySQL, SQLite) or a folder that every worker
can reach (one small JSON file per unit, each change made under a file lock; the folder's
filesystem must support locks: a local disk, NFSv4). A unit is claimed by one worker at a time
while that worker's heartbeat is younger than ``timeout`` seconds; a worker that died (no
heartbeat for ``timeout``) leaves its unit claimable again, and its late ``heartbeat`` or
``done`` is refused (``ColdbrewError``), so a unit is finished by one worker only.

Ages are read on one clock where there is one: PostgreSQL's, for a database; the workers' own
for a folder or another database, so their clocks must agree within a small part of ``timeout``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from coldbrew.errors import ColdbrewError

RUNNING, DONE = "running", "done"
STALE, FREE = "stale", "free"  # what status() says of a dead holder's unit and of an unclaimed one
TABLE = "coldbrew_claims"


def worker_name() -> str:
    """This process, unique across machines: host, process id, a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Claims:
    """The claims on one set of units (``scope``) in a database or a folder."""

    def __init__(self, timeout: float, worker: str | None) -> None:
        if timeout <= 0:
            raise ColdbrewError(f"the claims' timeout must be positive, not {timeout}")
        self.timeout = float(timeout)
        self.worker = worker or worker_name()

    @staticmethod
    def open(
        where: str | Path,
        *,
        scope: str = "default",
        timeout: float = 300.0,
        worker: str | None = None,
    ) -> Claims:
        """The claims in ``where``: a database URL (``postgresql://...``, anything with
        ``://``) or a folder (created if missing). ``scope`` separates sets of units that share
        one database; ``timeout``: seconds without a heartbeat after which a unit is free."""
        from coldbrew.research.claims_database import DatabaseClaims

        text = str(where)
        if "://" in text:
            return DatabaseClaims(text, scope, timeout, worker)
        return FolderClaims(Path(text) / quote(scope, safe=""), timeout, worker)

    def claim(self, units: Sequence[str]) -> str | None:
        """The first of ``units`` that nobody holds and that is not done (one whose holder's
        heartbeat is older than ``timeout`` counts as not held), now held by this worker; None
        when there is none."""
        raise NotImplementedError

    def heartbeat(self, unit: str) -> None:
        """Say this worker still works on ``unit``; ``ColdbrewError`` if it lost the claim."""
        raise NotImplementedError

    def done(self, unit: str) -> None:
        """Mark ``unit`` finished; ``ColdbrewError`` if this worker no longer holds it."""
        raise NotImplementedError

    def release(self, unit: str) -> None:
        """Give ``unit`` back unfinished (e.g. its run failed), claimable at once."""
        raise NotImplementedError

    def records(self) -> dict[str, tuple[str, str, float]]:
        """``{unit: (state, worker, age of the last heartbeat in seconds)}`` of claimed units."""
        raise NotImplementedError

    def status(self, units: Sequence[str] = ()) -> dict[str, str]:
        """``{unit: state}``: ``done``, ``running``, ``stale`` (its holder's heartbeat is older
        than ``timeout``), or for ``units`` never claimed, ``free``."""
        states = {unit: FREE for unit in units}
        for unit, (state, _, age) in self.records().items():
            states[unit] = STALE if state == RUNNING and age > self.timeout else state
        return states

    @contextlib.contextmanager
    def keep_alive(self, unit: str, every: float | None = None) -> Iterator[None]:
        """Heartbeats for ``unit`` from a thread every ``every`` seconds (``timeout`` / 4)
        while the block runs; ``done`` when it ends, ``release`` when it raises."""
        stop = threading.Event()
        lost: list[ColdbrewError] = []

        def beat() -> None:
            while not stop.wait(every or self.timeout / 4):
                try:
                    self.heartbeat(unit)
                except ColdbrewError as error:
                    lost.append(error)
                    return
                except Exception:  # a passing database or network error: try again
                    continue

        thread = threading.Thread(target=beat, name=f"claims-heartbeat {unit}", daemon=True)
        thread.start()
        try:
            yield
        except BaseException:
            stop.set()
            thread.join()
            with contextlib.suppress(ColdbrewError):
                self.release(unit)
            raise
        stop.set()
        thread.join()
        if lost:
            raise lost[0]
        self.done(unit)

    def close(self) -> None:
        """Free what the claims hold open (a database's connections)."""


class FolderClaims(Claims):
    """Claims as files in a folder: ``UNIT.json`` (the unit's name quoted) holding its state,
    holder and last heartbeat, each change made under ``claims.lock``."""

    def __init__(self, folder: Path, timeout: float, worker: str | None) -> None:
        from filelock import FileLock

        super().__init__(timeout, worker)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ColdbrewError(f"cannot create the claims folder {folder}: {error}") from None
        self.folder = folder
        self.lock = FileLock(folder / "claims.lock", timeout=60)

    def _path(self, unit: str) -> Path:
        return self.folder / f"{quote(unit, safe='')}.json"

    def _read(self, unit: str) -> dict | None:
        try:
            return json.loads(self._path(unit).read_text())
        except FileNotFoundError:
            return None

    def _write(self, unit: str, state: str) -> None:
        record = {"unit": unit, "state": state, "worker": self.worker, "heartbeat": time.time()}
        temporary = self._path(unit).with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record))
        os.replace(temporary, self._path(unit))

    def claim(self, units: Sequence[str]) -> str | None:
        with self.lock:
            for unit in units:
                record = self._read(unit)
                if record is None or (
                    record["state"] == RUNNING and time.time() - record["heartbeat"] > self.timeout
                ):
                    self._write(unit, RUNNING)
                    return unit
        return None

    def _update(self, unit: str, state: str | None) -> None:
        with self.lock:
            record = self._read(unit)
            if record is None or record["worker"] != self.worker or record["state"] != RUNNING:
                raise lost_claim(unit, record and record["worker"])
            if state is None:
                self._path(unit).unlink()
            else:
                self._write(unit, state)

    def heartbeat(self, unit: str) -> None:
        self._update(unit, RUNNING)

    def done(self, unit: str) -> None:
        self._update(unit, DONE)

    def release(self, unit: str) -> None:
        self._update(unit, None)

    def records(self) -> dict[str, tuple[str, str, float]]:
        now, found = time.time(), {}
        for path in self.folder.glob("*.json"):
            try:
                record = json.loads(path.read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                continue  # released in the meantime
            found[record["unit"]] = (record["state"], record["worker"], now - record["heartbeat"])
        return found


def lost_claim(unit: str, holder: str | None) -> ColdbrewError:
    now = f"it is held by {holder}" if holder else "it is no longer claimed"
    return ColdbrewError(
        f"this worker lost its claim on {unit} ({now}): its heartbeat stopped for longer than "
        "the timeout; leave the unit to its new holder"
    )
