"""Where data and caches live: ``$COLDBREW_DATA``, the user cache, or a directory as given."""

from __future__ import annotations

import os
from pathlib import Path

from coldbrew.errors import DataError


def cache_dir() -> Path:
    """Where coldbrew caches downloads and text embeddings (``$COLDBREW_CACHE`` overrides)."""
    root = os.environ.get("COLDBREW_CACHE")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "coldbrew"


def resolve_data_path(path_or_name: str | os.PathLike) -> Path:
    """A directory as given, else ``$COLDBREW_DATA/<name>``, else ``<cache>/data/<name>``."""
    path = Path(path_or_name).expanduser()
    if path.exists():
        return path
    name = str(path_or_name)
    candidates = []
    if os.environ.get("COLDBREW_DATA"):
        candidates.append(Path(os.environ["COLDBREW_DATA"]) / name)
    candidates.append(cache_dir() / "data" / name)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    if name == "ml-100k":
        from coldbrew.data.loaders.ml100k_download import download_ml100k

        return download_ml100k(cache_dir() / "data" / name)
    looked = ", ".join(dict.fromkeys(str(c) for c in [path, *candidates]))  # each place once
    raise DataError(f"dataset {name!r} not found (looked in: {looked})")
