"""Typed option fields: one declaration gives the default, the help text, the bounds and the
parsing of a setting, whether it comes from YAML (typed values) or the command line (text).

``option(default, "help", minimum=..., choices=...)`` is a ``dataclasses.field`` whose metadata
``check_fields`` and ``coerce`` read. No torch here: the CLI builds its flags from these
declarations, and ``coldbrew --help`` must not import torch.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import field
from typing import Any

from coldbrew.errors import ColdbrewError

Hint = Any


def option(
    default: Any,
    help: str,
    *,
    choices: tuple[str, ...] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> Any:
    """A dataclass field with its help text and bounds (``minimum <= v <= maximum``, ``v > above``)."""
    metadata = {"help": help, "choices": choices, "minimum": minimum, "maximum": maximum}
    metadata["above"] = above
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def hints(cls: type) -> dict[str, Hint]:
    return typing.get_type_hints(cls)


def _base(hint: Hint) -> tuple[Hint, bool]:
    """(the type without ``None``, whether ``None`` is allowed)."""
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return hint, False


def _spelled(base: Hint) -> bool:
    """Whether ``base`` is a value type written as one string, which its ``parse`` classmethod
    reads (the text encoder's choice): ``coerce`` keeps it as text, and the dataclass holding
    it parses it once, after every layer is merged (a later layer may mend an earlier one's)."""
    return isinstance(base, type) and callable(getattr(base, "parse", None))


def describe(hint: Hint) -> str:
    base, optional = _base(hint)
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    if _spelled(base):
        text = names[str]
    elif typing.get_origin(base) is list:
        (inner,) = typing.get_args(base)
        text = f"a list of {'integers' if inner is int else 'strings'} (e.g. 10,20)"
    else:
        text = names[base]
    return text + (" or none" if optional else "")


def parse_bool_text(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def _parse_number(value: Any, kind: type, from_text: bool) -> Any:
    if kind is int:
        if isinstance(value, bool):
            raise ValueError(value)
        if isinstance(value, int):
            return value
        if from_text and isinstance(value, str):
            return int(value.strip())
        raise ValueError(value)
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string: take it as a number
        return float(value.strip())
    raise ValueError(value)


def _parse_list(value: Any, inner: type, from_text: bool) -> list:
    if isinstance(value, str):
        items: list = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ValueError(value)
    if inner in (int, float):
        return [
            _parse_number(item, inner, from_text=isinstance(value, str) or from_text)
            for item in items
        ]
    if not all(isinstance(item, str) for item in items):
        raise ValueError(value)
    return items


def coerce(key: str, value: Any, hint: Hint, *, from_text: bool = False) -> Any:
    """``value`` as the type ``hint`` names, or a ``ColdbrewError`` naming the key and the type.

    YAML values must already have their type (``epochs: "two"`` and ``batch_size: "512"`` are
    refused, ``lr: 1e-3`` is a number); command-line values are text and are parsed.
    """
    base, optional = _base(hint)
    if value is None or (
        optional and isinstance(value, str) and value.strip().lower() in ("none", "null")
    ):
        if optional:
            return None
        raise ColdbrewError(f"option {key!r}: expected {describe(hint)}, got none")
    try:
        if typing.get_origin(base) is list:
            return _parse_list(value, typing.get_args(base)[0], from_text)
        if base is bool:
            if isinstance(value, bool):
                return value
            if from_text and isinstance(value, str):
                return parse_bool_text(value)
            raise ValueError(value)
        if base in (int, float):
            return _parse_number(value, base, from_text)
        if base is str or _spelled(base):  # a spelled value stays text (or is parsed)
            if isinstance(value, str | base):
                return value
            raise ValueError(value)
    except ValueError:
        raise ColdbrewError(f"option {key!r}: expected {describe(hint)}, got {value!r}") from None
    raise TypeError(f"unsupported option type {hint!r}")  # pragma: no cover - a coding error


def check_fields(instance: Any) -> None:
    """Bounds and choices declared with ``option``; the first violation as a ``ColdbrewError``."""
    for spec in dataclasses.fields(instance):
        value, meta = getattr(instance, spec.name), spec.metadata
        if value is None or not meta:
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, bool):
                continue
            if meta.get("choices") and item not in meta["choices"]:
                allowed = "|".join(meta["choices"])
                raise ColdbrewError(f"option {spec.name!r} must be one of {allowed}, not {item!r}")
            if not isinstance(item, int | float):
                continue
            if isinstance(item, float) and not math.isfinite(item):
                raise ColdbrewError(f"option {spec.name!r} must be a finite number, not {item}")
            if meta.get("minimum") is not None and item < meta["minimum"]:
                raise ColdbrewError(
                    f"option {spec.name!r} must be >= {meta['minimum']}, not {item}"
                )
            if meta.get("maximum") is not None and item > meta["maximum"]:
                raise ColdbrewError(
                    f"option {spec.name!r} must be <= {meta['maximum']}, not {item}"
                )
            if meta.get("above") is not None and item <= meta["above"]:
                raise ColdbrewError(f"option {spec.name!r} must be > {meta['above']}, not {item}")
