"""coldbrew's evaluator as it was at an earlier commit, importable beside today's, for timing.

``load_evaluation_at(ref)`` reads ``src/coldbrew/evaluation/*.py`` at git ``ref`` from this
checkout, renames the package (``coldbrew.evaluation`` -> ``baseline_evaluation_<ref>``) and
imports it, so one process can time the old and the new code side by side on the same data.
The old modules still import everything else (``coldbrew.data``, ``coldbrew.errors``) from
today's tree. Nothing is written inside the repository.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "src/coldbrew/evaluation"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout


def load_evaluation_at(ref: str) -> ModuleType:
    """The ``coldbrew.evaluation`` package of commit ``ref``, under a name of its own."""
    commit = _git("rev-parse", "--short", ref).strip()
    name = f"baseline_evaluation_{commit}"
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(tempfile.mkdtemp(prefix="coldbrew-baseline-")) / name
    folder.mkdir()
    for path in _git("ls-tree", "--name-only", f"{commit}:{PACKAGE}").split():
        if path.endswith(".py"):
            text = _git("show", f"{commit}:{PACKAGE}/{path}")
            (folder / path).write_text(text.replace("coldbrew.evaluation", name))
    sys.path.insert(0, str(folder.parent))
    return importlib.import_module(name)
