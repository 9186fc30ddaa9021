"""The house rules that import-linter's contracts do not say: no import circles, even inside
one layer, and every top-level module inside the layers contract."""

from __future__ import annotations

from pathlib import Path

import grimp
import tomllib

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
