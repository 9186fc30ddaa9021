"""Atomic checkpoints (unique temp file + rename) loaded with ``weights_only=True``, what one
holds (the model, optimizer, schedule and scaler state, the RNGs and the loop's ``TrainState``)
and how a resume restores it, and the lock that keeps a second process out of a run directory."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import torch

from coldbrew.errors import ColdbrewError
from coldbrew.system.runtime import rng_state, set_rng_state

LAST = "last.pt"
BEST = "best.pt"
LOCK = ".lock"


def atomic_write(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it over ``path``.

    Readers see either the old complete file or the new one; a failed write leaves no temporary
    and raises an ``OSError`` that says the old file is intact (the disk filled up, say). The
    temporary's name is unique, so two writers never share one. The file gets the usual mode
    (0666 less the umask), not ``mkstemp``'s private 0600.
    """
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
        )
    except OSError as error:
        raise OSError(error.errno, f"cannot write {path}: {error.strerror}") from None
    try:
        os.fchmod(descriptor, 0o666 & ~current_umask())
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except (OSError, RuntimeError) as error:  # torch's C++ writer reports a failed write so
        if isinstance(error, RuntimeError) and "writ" not in str(error):
            raise
        reason = getattr(error, "strerror", None) or str(error).splitlines()[0]
        kept = "the previous one is intact" if path.exists() else "nothing was written"
        raise OSError(
            getattr(error, "errno", None), f"cannot write {path}: {reason}; {kept}"
        ) from None
    finally:
        Path(temporary).unlink(missing_ok=True)


def current_umask() -> int:
    mask = os.umask(0o022)  # reading the mask means setting it: put it straight back
    os.umask(mask)
    return mask


def save_checkpoint(payload: dict, path: Path) -> None:
    atomic_write(path, lambda handle: torch.save(payload, handle))


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    if not path.exists():
        raise ColdbrewError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        if "weights_only" in str(error) or "Weights only load failed" in first:
            first = "it holds objects other than tensors and plain values"
        raise ColdbrewError(
            f"cannot read checkpoint {path}: {first}; it is damaged or not a coldbrew checkpoint"
        ) from None
    if isinstance(payload, dict) and payload.get("format") == "coldbrew-lm":
        raise ColdbrewError(
            f"{path} is a standalone LM checkpoint (coldbrew.models.lm.checkpoint), a format "
            "coldbrew no longer reads: train the model again with coldbrew train --model lm"
        )
    if not isinstance(payload, dict) or "model" not in payload:
        raise ColdbrewError(f"{path} is not a coldbrew checkpoint (no model state)")
    return payload


@dataclass
class TrainState:
    epoch: int = 0  # epochs completed
    optimizer_steps: int = 0
    best_epoch: int = 0
    best_score: float | None = None  # None until a finite monitored value is seen
    # evaluations since the last gain of at least min_gain over gain_reference (None in older
    # checkpoints: the best score stands in)
    epochs_without_improvement: int = 0
    gain_reference: float | None = None
    samples_seen: int = 0
    train_seconds: float = 0.0
    eval_seconds: float = 0.0
    # wall time of the epochs trained so far, across resumes (checkpointed with the rest)
    wall_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)
    first_loss: float | None = None  # the run's first step's loss: divergence is measured from it

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def training_payload(model, optimizer, scheduler, scaler, state: TrainState, config) -> dict:
    """A checkpoint of a run's loop: every part's state (``None`` for a part it has not), the
    RNGs, the loop's state and the run's configuration."""
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict() if optimizer else None,
        "scheduler": scheduler.state_dict() if scheduler else None,
        "scaler": scaler.state_dict() if scaler is not None else None,
        "rng": rng_state(),
        "state": state.to_dict(),
        "config": config.to_dict(),
    }


def restore_training(payload: dict, model, optimizer, scheduler, scaler) -> TrainState:
    """``training_payload``'s state loaded into the parts given (a scheduler or scaler the
    checkpoint lacks is left as it is) and the RNGs set; the loop's state."""
    model.load_state_dict(payload["model"])
    if optimizer is not None:
        optimizer.load_state_dict(payload["optimizer"])
    if scheduler is not None and payload.get("scheduler") is not None:
        scheduler.load_state_dict(payload["scheduler"])
    if scaler is not None and payload.get("scaler") is not None:
        scaler.load_state_dict(payload["scaler"])
    state = TrainState(**payload["state"])
    set_rng_state(payload["rng"])
    return state


class RunLock:
    """An exclusive lock on RUN_DIR/.lock (``filelock``, an ``flock`` on Unix) for as long as a
    process trains in RUN_DIR; a second process is refused at once (or after ``wait`` seconds
    of waiting for it), naming the holder.

    The file holds the holder's process id and is removed on the way out, while still locked:
    filelock notices a lock file that was unlinked under it and does not count that lock as
    taken. A process killed with SIGKILL leaves the file behind; the next lock reuses it.
    """

    def __init__(self, run_dir: Path, wait: float = 0.0):
        from filelock import FileLock

        self.path = run_dir / LOCK
        self.lock = FileLock(self.path, timeout=wait, blocking=wait > 0, on_acquired=_write_owner)

    def __enter__(self) -> RunLock:
        from filelock import Timeout

        try:
            self.lock.acquire()
        except Timeout:
            raise ColdbrewError(
                f"{self.path.parent} is in use by {self._owner()}; wait for it to finish"
            ) from None
        return self

    def __exit__(self, *exc) -> None:
        if self.lock.is_locked:
            self.path.unlink(missing_ok=True)
            self.lock.release()

    def _owner(self) -> str:
        try:
            return self.path.read_text().strip() or "another process"
        except OSError:  # released and removed in the meantime
            return "another process"


def _write_owner(descriptor: int) -> None:
    """filelock's ``on_acquired``: the lock file says who holds it."""
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"process {os.getpid()}".encode(), 0)
