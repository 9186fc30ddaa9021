"""Flags from the typed configuration: one per option of the run and of every model, plus the
original CLCRec spellings. Values stay text here; ``make_config(from_text=True)`` parses them,
so the command line and YAML share one set of types and bounds."""

from __future__ import annotations

import argparse
import dataclasses

from coldbrew.config import ALIASES, FIELDS, IGNORED_ORIGINAL, TrainConfig

# the model a command line names (``--model lm``): its help lists that model's options alone
_help_model: list[str | None] = [None]


def focus_help_on(argv: list[str]) -> None:
    """Remember the model ``argv`` names, so ``coldbrew train --model X --help`` shows X's
    options and no other model's (the others' flags still parse, to refuse them by name)."""
    from coldbrew.registry import MODELS

    named = None
    for index, word in enumerate(argv):
        flag, equals, value = word.partition("=")
        if flag in ("--model", "--model_name", "--model-name"):
            named = value if equals else (argv[index + 1] if index + 1 < len(argv) else None)
    _help_model[0] = named.lower() if named and named.lower() in MODELS else None


def _flags(name: str, aliases: dict[str, list[str]]) -> list[str]:
    spellings = {f"--{name.replace('_', '-')}", f"--{name}"}
    spellings |= {f"--{alias}" for alias in aliases.get(name, [])}
    return sorted(spellings)


def _add(group, spec: dataclasses.Field, default, aliases, shown: bool = True) -> None:
    kind = str(spec.type)
    help_text = spec.metadata.get("help", "")
    if "(default" not in help_text:  # a help text that says its default keeps its own words
        help_text = f"{help_text} (default: {default})"
    options: dict = {
        "dest": spec.name,
        "default": argparse.SUPPRESS,
        "help": help_text.replace("%", "%%") if shown else argparse.SUPPRESS,
    }
    if kind.startswith("bool"):
        options.update(nargs="?", const="true", metavar="BOOL")
    else:
        options["metavar"] = spec.name.upper()
    group.add_argument(*_flags(spec.name, aliases), **options)


def add_config_options(parser: argparse.ArgumentParser, *, model_options: bool = True) -> None:
    """``--batch-size`` (and ``--batch_size``) for every run option, ``--dim`` ... for every
    model's options (unless ``model_options`` is False: commands that train several models
    take run options alone), the original CLCRec names, and its flags that have no meaning
    here."""
    from coldbrew.registry import MODELS

    aliases: dict[str, list[str]] = {}
    for old, new in ALIASES.items():
        aliases.setdefault(new, []).append(old)
    focus = _help_model[0]
    run = parser.add_argument_group("run options")
    defaults = TrainConfig()
    for name, spec in FIELDS.items():
        default = getattr(defaults, name)
        per_model = [
            f"{m}: {s.run_defaults[name]}"
            for m, s in MODELS.items()
            if name in s.run_defaults and focus in (None, m)
        ]
        if focus and per_model:
            default = per_model[0].partition(": ")[2]
            per_model = []
        _add(run, spec, "; ".join([str(default), *per_model]), aliases)
    seen: set[str] = set(FIELDS)
    # the named model's options first, so its defaults are the ones shown
    order = sorted(MODELS, key=lambda name: name != focus) if model_options else []
    for model in order:
        model_spec = MODELS[model]
        shown = focus in (None, model)
        # another model's flags still parse (to be refused by name), under no heading
        group = (
            parser.add_argument_group(f"{model} options", model_spec.summary) if shown else parser
        )
        section = model_spec.config()
        for spec in dataclasses.fields(section):
            if spec.name not in seen:
                seen.add(spec.name)
                _add(group, spec, getattr(section, spec.name), aliases, shown=shown)
    original = parser.add_argument_group("original CLCRec flags accepted with a note")
    original.add_argument(
        "--no-cuda",
        "--no_cuda",
        dest="no_cuda",
        nargs="?",
        const="true",
        default=argparse.SUPPRESS,
        metavar="BOOL",
        help="same as --device cpu",
    )
    for name, note in IGNORED_ORIGINAL.items():
        original.add_argument(
            f"--{name}",
            dest=name,
            default=argparse.SUPPRESS,
            metavar="VALUE",
            help=f"ignored: {note}",
        )


def config_flags(args: argparse.Namespace, exclude: tuple[str, ...] = ()) -> dict:
    """The configuration options the user gave on the command line (text values)."""
    from coldbrew.registry import MODELS

    known = set(FIELDS) | set(IGNORED_ORIGINAL) | {"no_cuda"}
    for spec in MODELS.values():
        known |= {f.name for f in dataclasses.fields(spec.config)}
    return {k: v for k, v in vars(args).items() if k in known and k not in exclude}
