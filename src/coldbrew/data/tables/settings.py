"""The general layout's settings: ``coldbrew.yaml``'s keys, checked, and the same settings given
as flags (``--layout KEY=VALUE``) or as a config's ``layout:`` mapping, merged over the file.

No torch or pandas here: the configuration checks a run's ``layout`` before anything loads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from coldbrew.errors import DataError

SPEC_FILE = "coldbrew.yaml"
FILE_KEYS = ("interactions", "items", "vectors", "val", "test")
COLUMN_KEYS = ("user", "item", "rating", "timestamp", "item_id")
LIST_KEYS = ("text", "categories", "numeric")
OTHER_KEYS = ("min_rating", "missing_items", "category_separator", "text_mode", "k_core")
OTHER_KEYS += ("date_format",)  # "%d/%m/%Y": how dates are written, where it cannot be told
READ_KEYS = ("encoding", "separator", "quote")  # how every table file is read: see read_keys
KEYS = FILE_KEYS + COLUMN_KEYS + LIST_KEYS + OTHER_KEYS + READ_KEYS
NAME_KEYS = FILE_KEYS + COLUMN_KEYS + ("missing_items", "category_separator", "text_mode")
NAME_KEYS += ("date_format",)
# what a flag's help and a refusal say
FLAG_EXAMPLE = "--layout interactions=events.csv --layout text=title,plot"


def check_layout(spec: Mapping, where: str | Path) -> dict[str, Any]:
    """``spec``'s settings, checked: known keys, one name for a file or column key, a list of
    names for ``text``/``categories``/``numeric`` (one name is a list of one), a number for
    ``min_rating``. ``where`` begins each error (the file, ``--layout``)."""
    if not isinstance(spec, Mapping):
        raise DataError(f"{where} must be a mapping of key: value (interactions: FILE, ...)")
    unknown = sorted(set(map(str, spec)) - set(KEYS))
    if unknown:
        raise DataError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    checked = dict(spec)
    for key in NAME_KEYS:
        if key not in checked or isinstance(checked[key], str) and checked[key]:
            continue
        value = checked[key]
        if isinstance(value, list | tuple):
            shown = ",".join(map(str, value))
            raise DataError(f"{where}: {key} takes one name, not a list ({shown})")
        raise DataError(f"{where}: {key} must be a name, not {value!r}")
    for key in LIST_KEYS:
        value = checked.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise DataError(f"{where}: {key} must be a list of column names, not {value!r}")
        if key in checked:
            checked[key] = list(value)
    value = checked.get("min_rating", 0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{where}: min_rating must be a number, not {value!r}")
    value = checked.get("k_core", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DataError(f"{where}: k_core must be a whole number, 1 or more, not {value!r}")
    checked.update(read_keys(checked, where))
    return checked


SEPARATOR_WORDS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
QUOTE_WORDS = {'"': "double", "'": "single", '\\"': "backslash", "": "none"}
QUOTES = ("double", "backslash", "single", "none")


def read_keys(spec: Mapping, where: str | Path) -> dict[str, str]:
    """``spec``'s ``encoding`` (a codec Python knows), ``separator`` (``,`` ``;`` ``|`` or
    tab, also as ``tab``, ``\\t``, ``comma`` ...) and ``quote`` (``double``: ``"`` with ``""``
    inside; ``backslash``: ``"`` with ``\\"`` inside; ``single``; ``none``), checked and
    spelled one way; they overrule the sniffer for every table file."""
    import codecs

    read = {}
    if "encoding" in spec:
        try:
            codecs.lookup(str(spec["encoding"]))
        except LookupError:
            raise DataError(
                f"{where}: encoding {spec['encoding']!r} is unknown; e.g. utf-8, cp1252, latin-1"
            ) from None
        read["encoding"] = str(spec["encoding"])
    if "separator" in spec:
        value = SEPARATOR_WORDS.get(str(spec["separator"]).lower(), spec["separator"])
        if value not in (",", ";", "\t", "|"):
            raise DataError(
                f"{where}: separator must be ',', ';', '|' or tab, not {spec['separator']!r}"
            )
        read["separator"] = value
    if "quote" in spec:
        value = QUOTE_WORDS.get(str(spec["quote"]), str(spec["quote"]).lower())
        if value not in QUOTES:
            raise DataError(f"{where}: quote must be {', '.join(QUOTES)}, not {spec['quote']!r}")
        read["quote"] = value
    return read


def parse_layout_flags(values: Iterable[str], where: str = "--layout") -> dict[str, Any]:
    """``["interactions=events.csv", "text=title,plot"]`` -> ``{"interactions": "events.csv",
    "text": ["title", "plot"]}``, checked; a later flag for the same key wins."""
    layout: dict[str, Any] = {}
    for text in values:
        key, equals, value = str(text).partition("=")
        key = key.strip()
        if not equals or not key:
            raise DataError(
                f"{where} takes KEY=VALUE (e.g. {FLAG_EXAMPLE}), not {text!r}; "
                f"keys: {', '.join(KEYS)}"
            )
        layout[key] = _flag_value(key, value)
    return check_layout(layout, where)


def _flag_value(key: str, value: str) -> Any:
    """A flag's text as coldbrew.yaml would hold it: names split at commas for a list key, a
    number for ``min_rating``, the separator as given (it may be a comma or a space)."""
    if key in ("category_separator", "separator", "quote"):
        return value
    if key in LIST_KEYS:
        return [name.strip() for name in value.split(",") if name.strip()]
    value = value.strip()
    if key == "k_core" and value.isdigit():
        return int(value)
    if key == "min_rating":
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                continue
        return value  # check_layout says it is not a number
    if "," in value:
        return [name.strip() for name in value.split(",")]  # check_layout refuses the list
    return value


def merge_layout(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """The layers' settings key by key, a later layer's value winning."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    return merged


def not_own_tables(name: str) -> DataError:
    """The refusal of layout settings for data that is not the general layout."""
    return DataError(
        f"{name} is not your own tables (no {SPEC_FILE}, no --layout interactions=FILE): layout "
        f"flags apply only to those; name your files ({FLAG_EXAMPLE}) or leave --layout out"
    )


ROLE_KEYS = ("user", "item", "rating", "timestamp")  # the interactions' columns, one role each
ROLE_DEFAULTS = {"user": "user", "item": "item"}


def check_roles(spec: Mapping[str, Any], where: str | Path) -> None:
    """Refuse one interactions column named for two roles (``user: item`` beside ``item:
    item`` would make every item its own user); ``user`` and ``item`` count their defaults."""
    roles: dict[str, str] = {}
    for key in ROLE_KEYS:
        column = spec.get(key) or ROLE_DEFAULTS.get(key)
        if column is None:
            continue
        if column in roles:
            defaults = [role for role in (roles[column], key) if role not in spec]
            default = f" ({defaults[0]}'s default)" if defaults else ""
            raise DataError(
                f"{where}: column {column!r} is named for both {roles[column]} and {key}"
                f"{default}: each of {', '.join(ROLE_KEYS)} needs a column of its own; name "
                "the right one for each"
            )
        roles[column] = key
