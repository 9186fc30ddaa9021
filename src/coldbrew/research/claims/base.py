"""The claims' common part (``coldbrew.research.claims.units`` opens them): the states, a worker's
name, and what every place that holds claims does the same way (status, heartbeats kept alive
from a thread); each place implements ``claim``, ``_update`` and ``records``."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence

from coldbrew.errors import ColdbrewError

RUNNING, DONE = "running", "done"
STALE, FREE = "stale", "free"  # what status() says of a dead holder's unit and of an unclaimed one
TABLE = "coldbrew_claims"


def worker_name() -> str:
    """This process, unique across machines: host, process id, a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class ClaimsBase:
    """The claims on one set of units (``scope``) in a database or a folder; opened by
    ``coldbrew.research.claims.units.Claims.open``."""

    def __init__(self, timeout: float, worker: str | None) -> None:
        if timeout <= 0:
            raise ColdbrewError(f"the claims' timeout must be positive, not {timeout}")
        self.timeout = float(timeout)
        self.worker = worker or worker_name()

    def claim(self, units: Sequence[str]) -> str | None:
        """The first of ``units`` that nobody holds and that is not done (one whose holder's
        heartbeat is older than ``timeout`` counts as not held), now held by this worker; None
        when there is none."""
        raise NotImplementedError

    def heartbeat(self, unit: str) -> None:
        """Say this worker still works on ``unit``; ``ColdbrewError`` if it lost the claim."""
        self._update(unit, RUNNING)

    def done(self, unit: str) -> None:
        """Mark ``unit`` finished; ``ColdbrewError`` if this worker no longer holds it."""
        self._update(unit, DONE)

    def release(self, unit: str) -> None:
        """Give ``unit`` back unfinished (e.g. its run failed), claimable at once."""
        self._update(unit, None)

    def _update(self, unit: str, state: str | None) -> None:
        """Set ``unit``'s state (None: forget it) if this worker holds it, else refuse."""
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


def lost_claim(unit: str, holder: str | None) -> ColdbrewError:
    now = f"it is held by {holder}" if holder else "it is no longer claimed"
    return ColdbrewError(
        f"this worker lost its claim on {unit} ({now}): its heartbeat stopped for longer than "
        "the timeout; leave the unit to its new holder"
    )
