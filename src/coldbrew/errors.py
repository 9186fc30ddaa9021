"""User-facing errors: the CLI prints their message on one line and exits non-zero."""

from __future__ import annotations


class ColdbrewError(Exception):
    """Bad input or an impossible request, explained in the message (no traceback shown)."""


class DataError(ColdbrewError):
    """A dataset on disk is missing, malformed or inconsistent."""
