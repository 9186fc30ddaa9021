"""Typed training configuration: one source of defaults, YAML presets, command-line overrides.

``TrainConfig`` (``run_options``) holds the run's settings and the chosen model's section;
``make_config`` (``loading``) makes one from layers of YAML and flags, later over earlier;
``load_yaml`` and ``config_yaml`` (``yaml_files``) read and write them as files; ``checks``
holds the checks of single values (the monitored metric, the device). Every name is imported
from here: ``from coldbrew.config import TrainConfig, make_config``. No torch is imported here.
"""

from coldbrew.config.checks import METRIC_NAMES, check_device_name, parse_monitor
from coldbrew.config.loading import (
    ALIASES,
    BOARD_SECTION,
    IGNORED_ORIGINAL,
    PROTOCOL_DEFAULTS,
    USE_REASONS,
    Flags,
    canonical_key,
    check_usable_options,
    layout_value,
    make_config,
    unusable_options,
)
from coldbrew.config.run_options import (
    FIELDS,
    MAX_SEED,
    PROTOCOLS,
    SHARED_BY_MODELS,
    TRAINING_OPTIONS,
    TrainConfig,
    run_fields,
)
from coldbrew.config.yaml_files import (
    config_yaml,
    describe_yaml_error,
    load_saved_config,
    load_yaml,
    with_absent_options,
)

__all__ = [
    "ALIASES",
    "BOARD_SECTION",
    "FIELDS",
    "IGNORED_ORIGINAL",
    "MAX_SEED",
    "METRIC_NAMES",
    "PROTOCOLS",
    "PROTOCOL_DEFAULTS",
    "SHARED_BY_MODELS",
    "TRAINING_OPTIONS",
    "USE_REASONS",
    "Flags",
    "TrainConfig",
    "canonical_key",
    "check_device_name",
    "check_usable_options",
    "config_yaml",
    "describe_yaml_error",
    "layout_value",
    "load_saved_config",
    "load_yaml",
    "make_config",
    "parse_monitor",
    "run_fields",
    "unusable_options",
    "with_absent_options",
]
