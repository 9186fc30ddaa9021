"""What a run directory must be before anything is loaded or written."""

from __future__ import annotations

import os
from pathlib import Path

from coldbrew.config import TrainConfig
from coldbrew.errors import ColdbrewError


def check_out_dir(run_dir: Path) -> None:
    """A run directory that can be created and written, checked before anything is loaded."""
    if not str(run_dir).strip() or Path(run_dir) == Path("."):
        raise ColdbrewError(
            f"--out {str(run_dir)!r} names the current folder: give the run its own, e.g. runs/x"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise ColdbrewError(f"--out {run_dir} is a file, not a directory")
    existing = run_dir
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ColdbrewError(
            f"cannot create the run directory {run_dir}: {existing} is a file, not a folder"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ColdbrewError(f"cannot write the run directory {run_dir}: {existing} is not writable")


def check_new_run_dir(run_dir: Path) -> None:
    check_out_dir(run_dir)
    if run_dir.exists() and any(p.name != ".lock" for p in run_dir.iterdir()):
        raise ColdbrewError(
            f"{run_dir} already exists and is not empty; pass --resume {run_dir} or choose another --out"
        )


def absolute_data(config: TrainConfig) -> TrainConfig:
    """The run records its data and a text encoder folder as absolute paths (a name such as
    ml-100k or minilm stays a name), so evaluate and --resume work from any folder."""
    path = Path(config.data).expanduser()
    if config.data != "synthetic" and not config.data.startswith("synthetic:") and path.exists():
        config.data = str(path.resolve())
    config.text_encoder = config.text_encoder.absolute()  # folders found from anywhere
    return config
