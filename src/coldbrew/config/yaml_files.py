"""Options as files hold them: YAML presets and a run's own ``config.yaml``, read with one-line
errors, and a configuration written back (``config_yaml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from coldbrew.config.loading import model_name
from coldbrew.config.run_options import TrainConfig
from coldbrew.errors import ColdbrewError


def load_saved_config(path: str | Path) -> dict[str, Any]:
    """A run's own ``config.yaml``. A run saves every option, so an option its model section
    lacks was added after the run: it gets the value the run was trained with
    (``ModelSpec.absent_options``), not today's default."""
    return with_absent_options(load_yaml(path))


def with_absent_options(values: dict[str, Any]) -> dict[str, Any]:
    """A saved run's config ``values`` (changed in place) with the options its model section
    lacks set to what such a run was trained with (``ModelSpec.absent_options``)."""
    from coldbrew.registry import MODELS

    model = model_name((values,))
    section = values.get(model)
    if isinstance(section, dict):
        for key, value in MODELS[model].absent_options.items():
            section.setdefault(key, value)
    return values


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.safe_load``, except that a key given twice in one mapping is an error (PyYAML
    keeps the last silently, so ``epochs: 1`` then ``epochs: 3`` trained 3 epochs)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str | int | float | bool):
                    continue  # an unhashable key: PyYAML's own error follows
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def describe_yaml_error(error: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one line: the problem and where it is."""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def load_yaml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = yaml.load(handle, Loader=UniqueKeyLoader) or {}  # noqa: S506 - a SafeLoader
    except OSError as error:
        raise ColdbrewError(f"cannot read config {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ColdbrewError(f"config {path} is not UTF-8 text") from None
    except yaml.YAMLError as error:
        raise ColdbrewError(
            f"config {path} is not valid YAML: {describe_yaml_error(error)}"
        ) from None
    if not isinstance(loaded, dict):
        raise ColdbrewError(f"config {path} must be a mapping of option: value")
    return loaded


def config_yaml(config: TrainConfig) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True)
