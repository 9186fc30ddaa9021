"""Atomic checkpoints (temp file + rename) loaded with ``weights_only=True``."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import torch

from coldbrew.errors import ColdbrewError

LAST = "last.pt"
BEST = "best.pt"


def atomic_write(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it over ``path``.

    Readers see either the old complete file or the new one; a failed write leaves no temporary.
    """
    temporary = path.with_name(path.name + ".tmp")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def save_checkpoint(payload: dict, path: Path) -> None:
    atomic_write(path, lambda handle: torch.save(payload, handle))


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    if not path.exists():
        raise ColdbrewError(f"no checkpoint at {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as error:
        raise ColdbrewError(
            f"cannot read checkpoint {path}: {str(error).splitlines()[0]}"
        ) from None
