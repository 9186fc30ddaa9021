"""The house rules that import-linter's contracts do not say: no import circles, even inside
one layer; every top-level module inside the layers contract; folders, files and functions
small enough to scan (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "coldbrew"


def test_no_module_imports_itself_back():
    graph = grimp.build_graph("coldbrew", cache_dir=None)
    circles = [
        (importer, imported)
        for importer in sorted(graph.modules)
        for imported in sorted(graph.find_modules_directly_imported_by(importer))
        if graph.find_shortest_chain(importer=imported, imported=importer)
    ]
    assert circles == [], f"import circles (each pair: A imports B, B leads back to A): {circles}"


def test_every_top_level_module_is_in_the_layers_contract():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = settings["tool"]["importlinter"]["contracts"]
    layers = next(contract for contract in contracts if contract["type"] == "layers")["layers"]
    named = {name.strip() for layer in layers for name in layer.split("|")}
    top_level = {
        f"coldbrew.{path.stem}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and not path.stem.startswith("__"))
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    assert sorted(top_level - named) == []


MOST_MODULES_IN_A_FOLDER = 15  # outside models/, whose families are one file per model
MOST_LINES_IN_A_FILE = 450
MOST_LINES_IN_A_FUNCTION = 80


def test_no_folder_file_or_function_outgrows_what_a_newcomer_can_scan():
    folders = {
        str(folder.relative_to(PACKAGE)): count
        for folder in [PACKAGE, *PACKAGE.rglob("*")]
        if folder.is_dir()
        and (count := len(list(folder.glob("*.py"))))
        and "models" not in folder.relative_to(PACKAGE).parts
        and count > MOST_MODULES_IN_A_FOLDER
    }
    files, functions = {}, {}
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text()
        name = str(path.relative_to(PACKAGE))
        if (lines := len(source.splitlines())) > MOST_LINES_IN_A_FILE:
            files[name] = lines
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MOST_LINES_IN_A_FUNCTION:
                    functions[f"{name}:{node.name}"] = length
    assert (folders, files, functions) == ({}, {}, {})
