"""mkdocs hooks for the coldbrew site (mkdocs.yml: ``hooks:``).

- ``<!-- options: NAME -->`` in a page becomes the options table of model NAME (``run``: the
  run options every model shares), generated from the options dataclass, so a page never
  lists a stale default or a renamed option.
- Every ``--flag`` written in code in a page must be a flag some ``coldbrew`` command takes
  (or one of the few other tools' flags in ``OTHER_TOOLS_FLAGS``): a stale option name is a
  warning, which ``mkdocs build --strict`` (``make docs``) turns into a failure. The benchmark
  history (``HISTORY_PAGES``) is exempt: it quotes commands as they ran then.
- A link to ``BENCHMARKS.md`` at the repository root (``../BENCHMARKS.md``) points at the
  site's copy of it (``benchmarks.md``, which includes the file).

No torch is imported: the registry and the CLI's parser are torch-free.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:  # this checkout's coldbrew, not another install
    sys.path.insert(0, str(ROOT / "src"))

log = logging.getLogger("mkdocs.hooks.coldbrew_docs")

MARKER = re.compile(r"<!--\s*options:\s*([\w-]+)\s*-->")
# a flag in inline code or a code block: --name or --name_with_underscores
FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
BENCHMARKS_LINK = re.compile(r"\]\((?:\.\./)+BENCHMARKS\.md")
# in BENCHMARKS.md (at the root, included by docs/benchmarks.md) a page is docs/PAGE.md
ROOT_DOCS_LINK = re.compile(r"\]\(docs/")

# pages that record commands as they ran then (flags since renamed, scripts since removed)
HISTORY_PAGES = frozenset({"benchmark-history.md"})

# flags of the other tools the pages show (torchrun, pip, pytest, tensorboard, mkdocs)
OTHER_TOOLS_FLAGS = {
    "--nproc-per-node",
    "--standalone",
    "--max-restarts",
    "--nnodes",
    "--rdzv-endpoint",
    "--no-deps",
    "--logdir",
    "--strict",
    "--help",
}


def options_table(name: str) -> str:
    """The Markdown table of model ``name``'s options (``run``: the shared run options)."""
    from coldbrew.config import ALIASES, FIELDS, TrainConfig
    from coldbrew.registry import MODELS

    original = {new: old for old, new in ALIASES.items()}
    if name == "run":
        defaults = TrainConfig()
        fields = [(spec, getattr(defaults, spec.name)) for spec in FIELDS.values()]
        run_defaults: dict = {}
    elif name in MODELS:
        section = MODELS[name].config()
        fields = [(spec, getattr(section, spec.name)) for spec in dataclasses.fields(section)]
        run_defaults = MODELS[name].run_defaults
    else:
        raise ValueError(
            f"<!-- options: {name} -->: no such model (known: run, {', '.join(MODELS)})"
        )
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for spec, default in fields:
        flag = f"`--{spec.name.replace('_', '-')}`"
        if spec.name in original:
            flag += f" (original: `--{original[spec.name]}`)"
        rows.append(
            f"| {flag} | {_cell(_default(default))} | {_cell(spec.metadata.get('help', ''))} |"
        )
    table = "\n".join(rows)
    if run_defaults:
        changed = ", ".join(f"`--{k.replace('_', '-')} {v}`" for k, v in run_defaults.items())
        table += f"\n\nRun options whose default differs for `{name}`: {changed}."
    return table


def _default(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# an option a script in benchmarks/ declares (pages show how to run them)
SCRIPT_OPTION = re.compile(r"""add_argument\(\s*["'](--[A-Za-z][\w-]*)""")


@cache
def script_flags() -> frozenset[str]:
    """Every ``--flag`` that a script under ``benchmarks/`` declares with ``add_argument``."""
    flags: set[str] = set()
    for script in sorted((ROOT / "benchmarks").rglob("*.py")):
        flags.update(SCRIPT_OPTION.findall(script.read_text(encoding="utf-8")))
    return frozenset(flags)


@cache
def known_flags() -> frozenset[str]:
    """Every option string of every ``coldbrew`` command and subcommand."""
    import argparse

    from coldbrew.cli import build_parser

    flags: set[str] = set()
    pending = [build_parser()]
    while pending:
        parser = pending.pop()
        for action in parser._actions:
            flags.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
    return frozenset(flags)


def unknown_flags(markdown: str) -> list[str]:
    """The ``--flags`` in the code of ``markdown`` that no coldbrew command (nor a benchmark
    script or a listed other tool) takes, in order of appearance."""
    known = known_flags() | script_flags() | OTHER_TOOLS_FLAGS
    found: list[str] = []
    for code in CODE.findall(markdown):
        for flag in FLAG.findall(code):
            if flag not in known and flag not in found:
                found.append(flag)
    return found


def expand(markdown: str) -> str:
    return MARKER.sub(lambda match: options_table(match.group(1)), markdown)


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    expanded = expand(markdown)
    for flag in [] if page.file.src_uri in HISTORY_PAGES else unknown_flags(expanded):
        log.warning("%s: %s is no option of any coldbrew command", page.file.src_uri, flag)
    if page.file.src_uri == "benchmarks.md":  # the root file itself, its docs/ links made siblings
        root_file = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
        expanded = expanded.replace('--8<-- "BENCHMARKS.md"', ROOT_DOCS_LINK.sub("](", root_file))
    depth = page.file.src_uri.count("/")
    return BENCHMARKS_LINK.sub("](" + "../" * depth + "benchmarks.md", expanded)
