"""Optional dependencies of the research workflow: skipped where absent, except in CI (``CI``
set), where the Makefile installs the [plot,research] extras and a missing one is a failure."""

from __future__ import annotations

import importlib
import os

import pytest


def require(module: str):
    """``module``, or skip the test without it; in CI a missing module fails the test."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)
