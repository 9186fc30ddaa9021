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

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from coldbrew.errors import ColdbrewError
from coldbrew.research.claims.base import (  # noqa: F401 - the claims' public names
    DONE,
    FREE,
    RUNNING,
    STALE,
    TABLE,
    ClaimsBase,
    lost_claim,
    worker_name,
)


class Claims(ClaimsBase):
    """The claims in a folder or a database, whichever ``open`` is given."""

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
        from coldbrew.research.claims.database import DatabaseClaims

        text = str(where)
        if "://" in text:
            return DatabaseClaims(text, scope, timeout, worker)
        return FolderClaims(Path(text) / quote(scope, safe=""), timeout, worker)


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

    def records(self) -> dict[str, tuple[str, str, float]]:
        now, found = time.time(), {}
        for path in self.folder.glob("*.json"):
            try:
                record = json.loads(path.read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                continue  # released in the meantime
            found[record["unit"]] = (record["state"], record["worker"], now - record["heartbeat"])
        return found
