"""Where the benchmarks find the shared datasets: ``$COLDBREW_DATA``, else ../shared/data."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_ROOT = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data").resolve()


def use_shared_data() -> Path:
    """Point ``COLDBREW_DATA`` at the shared data unless it is set; return the root."""
    os.environ.setdefault("COLDBREW_DATA", str(DEFAULT_ROOT))
    return Path(os.environ["COLDBREW_DATA"]).resolve()


def dataset_path(name: str) -> Path:
    """The folder of dataset ``name`` under the shared root, or exit with what to set."""
    path = use_shared_data() / name
    if not path.is_dir():
        sys.exit(f"{path} not found: set COLDBREW_DATA to the folder holding {name}/")
    return path
