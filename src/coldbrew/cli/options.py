"""Flags from the typed configuration: one per option of the run and of every model, plus the
original CLCRec spellings. Values stay text here; ``make_config(from_text=True)`` parses them,
so the command line and YAML share one set of types and bounds. Also what several commands
share: a subcommand with examples (``add_command``), ``--run``, ``--objective``, ``--layout``."""

from __future__ import annotations

import argparse
import dataclasses

from coldbrew.config import ALIASES, FIELDS, IGNORED_ORIGINAL, TrainConfig
from coldbrew.errors import ColdbrewError

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


# run options that are the original CLCRec's own flags (its --has_v ... and --topK): listed
# with its aliases, under their own heading, by ``coldbrew train`` alone
ORIGINAL_FIELDS = ("has_v", "has_a", "has_t", "top_k")


def _shown_default(value) -> str:
    """A default as a user writes it: ``none``, ``false``, ``10,20,50``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def _add(
    group, parser, spec: dataclasses.Field, default, shown: bool = True, original: bool = False
) -> None:
    """``--dash-name`` in ``group`` (with its help when ``shown``); ``--underscore_name``
    parses the same, unlisted. An ``original`` flag is listed as the original spelled it
    (``--has_v``)."""
    help_text = spec.metadata.get("help", "")
    if spec.name == "model":
        help_text = model_help(parser.prog)
    if "(default" not in help_text:  # a help text that says its default keeps its own words
        help_text = f"{help_text} (default: {default})"
    options: dict = {"dest": spec.name, "default": argparse.SUPPRESS}
    if str(spec.type).startswith("bool"):
        options.update(nargs="?", const="true", metavar="BOOL")
    elif spec.name == "layout":  # a mapping, one KEY=VALUE per flag
        options.update(action="append", metavar="KEY=VALUE")
    else:
        options["metavar"] = spec.name.upper()
    dash, underscore = f"--{spec.name.replace('_', '-')}", f"--{spec.name}"
    listed, unlisted = (underscore, dash) if original else (dash, underscore)
    shown_help = help_text.replace("%", "%%") if shown else argparse.SUPPRESS
    group.add_argument(listed, help=shown_help, **options)
    if unlisted != listed:
        parser.add_argument(unlisted, help=argparse.SUPPRESS, **options)


def model_help(prog: str) -> str:
    """``--model``'s help: every model's name, and where its options are listed."""
    from coldbrew.registry import MODELS

    return f"one of {', '.join(MODELS)}; {prog} --model NAME --help lists its options"


def list_models(parser: argparse.ArgumentParser) -> None:
    """A "models" heading naming every model and what it is (their options are listed by
    ``--model NAME --help``, not here: all of them made ``coldbrew train --help`` 426 lines)."""
    from coldbrew.registry import MODELS

    width = max(len(name) for name in MODELS) + 2
    lines = [f"{name:{width}s}{spec.summary}" for name, spec in MODELS.items()]
    parser.add_argument_group(
        "models", f"{parser.prog} --model NAME --help lists a model's options\n" + "\n".join(lines)
    )


def hidden_run_options(model: str | None) -> set[str]:
    """The run options ``model`` refuses (``coldbrew.config.unusable_options``): a model with
    nothing to train takes no training option, and some ignore more."""
    from coldbrew.config import TRAINING_OPTIONS
    from coldbrew.registry import MODELS

    if model is None:
        return set()
    spec = MODELS[model]
    return set(spec.ignores) | (set() if spec.trains else set(TRAINING_OPTIONS))


def add_config_options(
    parser: argparse.ArgumentParser,
    *,
    model_options: bool = True,
    original_flags: bool = False,
    unlisted: tuple[str, ...] = (),
    default_model: str | None = None,
) -> None:
    """A flag for every run option and (unless ``model_options`` is False: commands that
    train several models take run options alone) every model option.

    The help lists the options of the model the command line names (else ``default_model``),
    less the run options it refuses; with no model named, the run options and the models'
    names. Every flag still parses, to be refused by name. The original CLCRec's
    flags (its spellings ``--l_r`` ..., ``--has_v`` ..., and those with no meaning here) are
    listed only with ``original_flags`` (``coldbrew train``) for CLCRec; elsewhere they parse
    unlisted. ``unlisted`` run options parse but are not listed (the leaderboard refuses
    ``--seed`` and ``--model`` by name, for its ``--seeds`` and ``--models``)."""
    from coldbrew.registry import MODELS

    focus = _help_model[0] or default_model
    run = parser.add_argument_group("run options")
    list_original = original_flags and focus in (None, "clcrec")
    original = (
        parser.add_argument_group(
            "original CLCRec flags",
            "the original main.py's spellings, so the original's commands run as they are",
        )
        if list_original
        else parser
    )
    defaults = TrainConfig()
    refused = hidden_run_options(focus if model_options else None)
    for name, spec in FIELDS.items():
        default = _shown_default(getattr(defaults, name))
        per_model = [
            f"{m}: {s.run_defaults[name]}"
            for m, s in MODELS.items()
            if name in s.run_defaults and focus in (None, m)
        ]
        if focus and per_model:
            default = per_model[0].partition(": ")[2]
            per_model = []
        if name in ORIGINAL_FIELDS:
            _add(original, parser, spec, default, shown=list_original, original=True)
        else:
            shown = name not in unlisted and name not in refused
            _add(run, parser, spec, "; ".join([default, *per_model]), shown)
    added: set[str] = set(FIELDS)
    # the named model's options first, so its defaults are the ones shown
    order = sorted(MODELS, key=lambda name: name != focus) if model_options else []
    if model_options and focus is None:
        list_models(parser)
    for model in order:
        model_spec = MODELS[model]
        shown = focus == model
        # another model's flags still parse (to be refused by name), under no heading
        group = (
            parser.add_argument_group(f"{model} options", model_spec.summary) if shown else parser
        )
        section = model_spec.config()
        for spec in dataclasses.fields(section):
            if spec.name not in added:
                added.add(spec.name)
                default = _shown_default(getattr(section, spec.name))
                _add(group, parser, spec, default, shown=shown)
    _add_original_flags(original, added, shown=list_original)


def _add_original_flags(group, added: set[str], *, shown: bool) -> None:
    """The original CLCRec's spellings of options added above (``--l_r`` for ``--lr`` ...),
    ``--no-cuda`` and its flags that have no meaning here (accepted with a note)."""
    for old, new in ALIASES.items():
        if new in added and old != new:
            spelled = f"--{new}" if new in ORIGINAL_FIELDS else f"--{new.replace('_', '-')}"
            text = f"the original's spelling of {spelled}"
            group.add_argument(
                f"--{old}",
                dest=new,
                default=argparse.SUPPRESS,
                metavar=new.upper(),
                help=text if shown else argparse.SUPPRESS,
            )
    group.add_argument(
        "--no-cuda",
        "--no_cuda",
        dest="no_cuda",
        nargs="?",
        const="true",
        default=argparse.SUPPRESS,
        metavar="BOOL",
        help="same as --device cpu" if shown else argparse.SUPPRESS,
    )
    for name, note in IGNORED_ORIGINAL.items():
        group.add_argument(
            f"--{name}",
            dest=name,
            default=argparse.SUPPRESS,
            metavar="VALUE",
            help=f"ignored: {note}" if shown else argparse.SUPPRESS,
        )


def config_flags(args: argparse.Namespace, exclude: tuple[str, ...] = ()) -> dict:
    """The configuration options the user gave on the command line (text values)."""
    from coldbrew.registry import MODELS

    known = set(FIELDS) | set(IGNORED_ORIGINAL) | {"no_cuda"}
    for spec in MODELS.values():
        known |= {f.name for f in dataclasses.fields(spec.config)}
    return {k: v for k, v in vars(args).items() if k in known and k not in exclude}


# a run on generated data, trained because --data was forgotten, looked like a real one (its
# only sign a line saying "training clcrec on synthetic"): a command that trains and scores
# models (train, leaderboard, search, tune) names its data or refuses
NO_DATA = (
    "no --data given: name the data to train on, e.g. --data ml-100k, --data ml-1m-coldstart "
    "or --data DIR (your own files: coldbrew data init); --data synthetic trains on generated "
    "data to try coldbrew out"
)


def require_data(flags: dict, preset: dict) -> None:
    """Refuse a command that would fall back to synthetic data: neither ``flags`` nor the
    YAML ``preset`` names ``data``."""
    from coldbrew.config import canonical_key

    if "data" not in {canonical_key(str(key)) for key in [*flags, *preset]}:
        raise ColdbrewError(NO_DATA)


def warn_synthetic(flags: dict, preset: dict) -> None:
    """A measuring command (bench, profile, memory) with no data named runs on generated data:
    say so, as its figures are not those of the user's data."""
    import warnings

    from coldbrew.config import canonical_key

    if "data" not in {canonical_key(str(key)) for key in [*flags, *preset]}:
        warnings.warn(
            "no --data given: measuring on generated data (synthetic); give --data DIR or a "
            "dataset name to measure yours",
            stacklevel=2,
        )


def add_command(
    commands, name: str, help_text: str, description: str, **options
) -> argparse.ArgumentParser:
    """The subcommand ``name`` of ``commands``, its description printed as written (its
    examples keep their lines)."""
    return commands.add_parser(
        name,
        help=help_text,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **options,
    )


# --run's help where a command reads a trained run (evaluate, recommend, export)
RUN_HELP = "run directory written by 'coldbrew train'"
# what a search trial's value or a blend's weights maximise (coldbrew.research's OBJECTIVES)
OBJECTIVES = ("monitored", "joint")


def add_objective_option(
    parser: argparse.ArgumentParser,
    help_text: str,
    flag: str = "--objective",
    default: str | None = "monitored",
) -> None:
    """``--objective monitored|joint`` (or ``flag``): the monitored metric, or the geometric
    mean of the cold metric under both cold-candidate conventions."""
    parser.add_argument(flag, choices=OBJECTIVES, default=default, help=help_text)


def add_run_option(parser: argparse.ArgumentParser, help_text: str = RUN_HELP) -> None:
    """``--run``, required: the trained run (or, where ``help_text`` says so, the export) a
    command reads."""
    parser.add_argument("--run", required=True, help=help_text)


def add_layout_option(parser: argparse.ArgumentParser, help_text: str | None = None) -> None:
    """``--layout KEY=VALUE``, repeatable, for a command whose flags are not the run options
    (``data info``, ``bench``, and beside ``recommend``'s or ``evaluate``'s ``--data``)."""
    parser.add_argument(
        "--layout",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=help_text or FIELDS["layout"].metadata["help"],
    )


def add_other_data_layout(parser: argparse.ArgumentParser) -> None:
    """``--layout`` beside ``--data``: the other folder's own tables, named over the run's
    saved layout key by key (``other_data_layout`` reads it)."""
    add_layout_option(
        parser,
        "with --data: that folder's layout over the run's own, key by key (coldbrew.yaml's "
        "keys, e.g. --layout interactions=new.csv)",
    )


def other_data_layout(args: argparse.Namespace) -> dict | None:
    """The ``--layout`` flags, checked, or None; refused without ``--data`` (the run's own
    data is read as it was trained)."""
    from coldbrew.data.tables.settings import parse_layout_flags

    if not args.layout:
        return None
    if args.data is None:
        raise ColdbrewError(
            "--layout names another folder's tables: give it with --data (the run's own data "
            "is read with the layout it was trained on)"
        )
    return parse_layout_flags(args.layout)


def percent(share: float) -> str:
    """``0.004022...`` as ``0.40 %``; a share under 0.01 % keeps two significant digits."""
    import math

    value = 100 * share
    if value == 0 or value >= 0.01:
        return f"{value:.2f} %"
    return f"{value:.{1 - math.floor(math.log10(value))}f} %"
