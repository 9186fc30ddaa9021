"""A search space in YAML: any configuration field, either fixed or given a distribution.

```yaml
lr: {log_uniform: [0.0005, 0.01]}        # float, sampled uniformly in log space
weight_decay: {log_uniform: [1e-6, 1e-3], zero: true}   # ... or exactly 0
temp_value: {uniform: [0.5, 4.0]}        # float (optional step: 0.5)
num_neg: {int: [32, 256], step: 32}      # integer (optional step, or log: true)
batch_size: {categorical: [1024, 2048, 4096]}
epochs: 8                                # a plain value: the same in every trial
```

``zero: true`` lets a log range also draw exactly 0 (which no log scale holds): a trial first
draws the switch ``NAME=0`` (true or false), then, when false, the value. A search that starts
from a setting of 0 (weight decay off) can then train exactly that setting in its first trial.

Names are the configuration's (``--batch-size``, ``batch_size`` and the original aliases all
work); ``load_space`` checks every name and both ends of every range against the configuration's
types and bounds before any trial runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coldbrew.config import canonical_key, load_yaml, make_config
from coldbrew.errors import ColdbrewError

KINDS = ("log_uniform", "uniform", "int", "categorical")


@dataclass(frozen=True)
class Dimension:
    """One searched field: its distribution and range (or choices)."""

    name: str
    kind: str  # one of KINDS
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    choices: tuple = ()
    zero: bool = False  # a log range that can also draw exactly 0

    @property
    def switch(self) -> str:
        """The parameter that draws 0 (``zero``): ``"NAME=0"``."""
        return f"{self.name}=0"

    def suggest(self, trial) -> Any:
        """The value an Optuna ``trial`` draws for this field."""
        if self.zero and trial.suggest_categorical(self.switch, [False, True]):
            return 0.0
        if self.kind == "categorical":
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.kind == "int":
            step = int(self.step or 1)
            return trial.suggest_int(
                self.name, int(self.low), int(self.high), step=step, log=self.log
            )
        log = self.kind == "log_uniform"
        return trial.suggest_float(self.name, self.low, self.high, step=self.step, log=log)

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is one this dimension can draw (a choice, or inside the range)."""
        if self.kind == "categorical":
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "int" and value != int(value):
            return False
        return self.low <= value <= self.high or (self.zero and value == 0)

    def start(self, value: Any) -> dict[str, Any]:
        """The Optuna parameters that draw ``value`` (one this dimension ``contains``)."""
        if not self.zero:
            return {self.name: value}
        if value == 0:
            return {self.switch: True}
        return {self.switch: False, self.name: value}

    def ends(self) -> list[Any]:
        """Values that must be valid settings: both ends of a range, or every choice."""
        if self.kind == "categorical":
            return list(self.choices)
        if self.kind == "int":
            return [int(self.low), int(self.high)]
        return [float(self.low), float(self.high)] + ([0.0] if self.zero else [])


@dataclass
class SearchSpace:
    dimensions: dict[str, Dimension] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A plain description (stored with the study to recognise it on resume)."""
        searched = {
            name: {
                key: value
                for key, value in vars(dimension).items()
                if key != "name" and value not in (None, (), False)
            }
            for name, dimension in self.dimensions.items()
        }
        for description in searched.values():
            if "choices" in description:
                description["choices"] = list(description["choices"])
        return {"searched": searched, "fixed": dict(self.fixed)}

    def settings(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's Optuna parameters as settings: a ``zero`` switch drawn true is the value 0."""
        settings = dict(params)
        for dimension in self.dimensions.values():
            if dimension.zero and settings.pop(dimension.switch, False):
                settings[dimension.name] = 0.0
        return settings


def _number(value: Any) -> Any:
    """YAML 1.1 reads ``5e-4`` (no dot) as text: such text is taken as the number it spells."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def parse_dimension(name: str, spec: Mapping[str, Any]) -> Dimension:
    kinds = [kind for kind in KINDS if kind in spec]
    extra = set(spec) - set(KINDS) - {"step", "log", "zero"}
    if len(kinds) != 1 or extra:
        raise ColdbrewError(
            f"search space {name!r}: give one of {', '.join(KINDS)} (plus step, log or zero), "
            f"not {sorted(spec)}"
        )
    zero = spec.get("zero", False)
    if zero not in (True, False) or (zero and kinds[0] != "log_uniform"):
        raise ColdbrewError(
            f"search space {name!r}: zero: true goes with a log_uniform range, which cannot "
            f"hold 0 (a uniform or int range can: start it at 0), not {dict(spec)}"
        )
    kind, values = kinds[0], spec[kinds[0]]
    if kind != "categorical" and isinstance(values, list):
        values = [_number(value) for value in values]
    if not isinstance(values, list) or not values:
        raise ColdbrewError(f"search space {name!r}: {kind} takes a list, e.g. [low, high]")
    if kind == "categorical":
        return Dimension(name, kind, choices=tuple(values))
    if len(values) != 2 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    ):
        raise ColdbrewError(
            f"search space {name!r}: {kind} takes [low, high] numbers, not {values}"
        )
    low, high = values
    if not low < high:
        raise ColdbrewError(f"search space {name!r}: low {low} must be below high {high}")
    if kind == "log_uniform" and low <= 0:
        raise ColdbrewError(f"search space {name!r}: log_uniform needs low > 0, not {low}")
    if kind == "int" and not (float(low).is_integer() and float(high).is_integer()):
        raise ColdbrewError(f"search space {name!r}: int takes integer ends, not {values}")
    step, log = _number(spec.get("step")), bool(spec.get("log", False))
    if step is not None and (log or kind == "log_uniform"):
        raise ColdbrewError(f"search space {name!r}: a step cannot go with a log scale")
    if step is not None and not (isinstance(step, int | float) and step > 0):
        raise ColdbrewError(f"search space {name!r}: step must be a positive number, not {step!r}")
    return Dimension(name, kind, float(low), float(high), step, log, zero=zero)


def parse_space(mapping: Mapping[str, Any], base_layers: tuple[dict, ...] = ()) -> SearchSpace:
    """A ``SearchSpace`` from a YAML mapping, each value checked against the configuration
    (on top of ``base_layers``) so a bad name or range fails before any trial."""
    space = SearchSpace()
    for key, value in mapping.items():
        name = canonical_key(str(key))
        if isinstance(value, Mapping):
            space.dimensions[name] = parse_dimension(name, value)
        else:
            space.fixed[name] = value
    if not space.dimensions:
        raise ColdbrewError(
            "the search space has no searched field (e.g. lr: {log_uniform: [1e-4, 1e-2]})"
        )
    make_config(*base_layers, space.fixed)  # fixed values: typed and bounded like a preset's
    for name, dimension in space.dimensions.items():
        for value in dimension.ends():
            try:
                make_config(*base_layers, space.fixed, {name: value})
            except ColdbrewError as error:
                raise ColdbrewError(f"search space {name!r} = {value!r}: {error}") from None
    return space


def load_space(path: str | Path, base_layers: tuple[dict, ...] = ()) -> SearchSpace:
    return parse_space(load_yaml(path), base_layers)
