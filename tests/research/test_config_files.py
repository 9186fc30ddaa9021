"""Every file in configs/ loads: presets as configurations, search spaces against their model.

A renamed option or a range outside an option's bounds then fails here, not in a user's first
trial.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coldbrew.config import load_yaml, make_config
from coldbrew.research.search.space import load_space

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SPACES = sorted(CONFIGS.glob("search_*.yaml"))
PRESETS = sorted(set(CONFIGS.glob("*.yaml")) - set(SPACES))


def test_there_are_files_to_check():
    assert SPACES and PRESETS


@pytest.mark.parametrize("path", SPACES, ids=lambda path: path.stem)
def test_search_space_fits_its_model(path):
    # search_aldi.yaml searches aldi; search_lm_tune.yaml searches lm (a suffix names a mode)
    model = path.stem.removeprefix("search_").partition("_")[0]
    space = load_space(path, ({"model": model},))
    assert space.dimensions


@pytest.mark.parametrize("path", PRESETS, ids=lambda path: path.stem)
def test_preset_is_a_valid_configuration(path):
    config = make_config(load_yaml(path))
    assert config.model


def test_a_search_space_for_another_model_is_refused():
    # GAR's tower_dim is no option of ALDI's
    with pytest.raises(Exception, match="tower_dim"):
        load_space(CONFIGS / "search_gar.yaml", ({"model": "aldi"},))


def test_the_champion_preset_names_a_board_that_parses():
    from coldbrew.research.boards.blend_names import parse_blends
    from coldbrew.research.boards.leaderboard import board_preset, parse_models
    from coldbrew.research.seeds import parse_seeds

    named = board_preset(load_yaml(CONFIGS / "best.yaml"))
    models = parse_models(named["models"])
    assert parse_blends(named["blend"], models) and parse_seeds(named["seeds"])
