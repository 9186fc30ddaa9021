"""Versions of what an export or a server depends on (those installed; absent ones omitted)."""

from __future__ import annotations

from importlib import metadata


def serving_versions() -> dict:
    from coldbrew.training.run import versions

    found = dict(versions())
    for package in ("safetensors", "faiss-cpu", "fastapi", "uvicorn"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found
