"""Whether progress bars may draw: only on a terminal. Redirected to a file, a bar would write
every frame (a carriage return each) into the log; epoch lines and results say enough there."""

from __future__ import annotations

import sys


def bars_shown(progress: bool = True) -> bool:
    """``progress``, and stderr (where tqdm and transformers draw) is a terminal."""
    return bool(progress) and sys.stderr.isatty()
