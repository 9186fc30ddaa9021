"""Atomic checkpoints (temp file + rename) loaded with ``weights_only=True``."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import torch

from coldbrew.errors import ColdbrewError

LAST = "last.pt"
BEST = "best.pt"


def save_checkpoint(payload: dict, path: Path) -> None:
    """Write ``payload`` so that ``path`` is always either the old or the new complete file."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        torch.save(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    if not path.exists():
        raise ColdbrewError(f"no checkpoint at {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as error:
        raise ColdbrewError(
            f"cannot read checkpoint {path}: {str(error).splitlines()[0]}"
        ) from None
