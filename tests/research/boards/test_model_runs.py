"""A board's units of work: each model's config made once from the board's layers, a fold's
and a final run's derived from it as the layers would make them, every unit named for logs and
claims and sent whole to another process."""

from __future__ import annotations

import pickle
from pathlib import Path

from coldbrew.config import make_config
from coldbrew.research.boards.cross_validation import final_unit, fold_unit, fold_units
from coldbrew.research.boards.leaderboard import plan_board
from research_tiny_run import TINY

# a preset, then the command line's flags; clcrec's own section sets one of its options and a
# run option for clcrec alone
BASE = {key: value for key, value in TINY.items() if key != "num_neg"}  # ridge lacks it
LAYERS = ({**BASE, "folds": 3, "clcrec": {"num_neg": 2, "lr": 0.05}}, {"epochs": 4})
OUT = Path("board")


def test_each_model_gets_its_own_section_and_run_options_once(tmp_path):
    plan = plan_board(LAYERS, ["clcrec", "ridge"], (), [1, 2], tmp_path / "board")
    clcrec, ridge = plan.configs
    assert clcrec == make_config(*LAYERS, {"model": "clcrec"})
    assert ridge == make_config(*LAYERS, {"model": "ridge"})
    assert (clcrec.lr, ridge.lr) == (0.05, TINY["lr"])  # clcrec's section, for clcrec alone
    assert plan.models == ["clcrec", "ridge"] and plan.folds == 3 and plan.seeds == (1, 2)


def test_a_fold_and_a_final_run_are_what_the_layers_would_make():
    config = make_config(*LAYERS, {"model": "clcrec"})
    fold = fold_unit(config, [1, 2], OUT, 2)
    assert fold.config == make_config(*LAYERS, {"fold": 2}, {"model": "clcrec"})
    assert (fold.name, fold.seeds, fold.run_dir) == (
        "clcrec/fold-2",
        (1, 2),
        OUT / "folds" / "clcrec" / "fold-2",
    )
    final = final_unit(config, [1, 2], OUT, 3)
    expected = make_config(*LAYERS, {"fold": None, "epochs": 3}, {"model": "clcrec"})
    assert final.config == expected
    assert (final.name, final.run_dir) == ("clcrec", OUT / "clcrec")
    assert config.fold is None and config.epochs == 4  # the model's config is left as it was


def test_units_carry_their_names_and_pickle_for_the_processes(tmp_path):
    plan = plan_board(LAYERS, ["clcrec", "ridge"], (), [1], tmp_path / "board")
    units = fold_units(plan)
    assert list(units) == [f"{m}/fold-{f}" for m in ("clcrec", "ridge") for f in range(3)]
    for unit in [*units.values(), *plan.model_units().values()]:
        assert pickle.loads(pickle.dumps(unit)) == unit
    assert {name: unit.run_dir for name, unit in plan.model_units().items()} == {
        "clcrec": tmp_path / "board" / "clcrec",
        "ridge": tmp_path / "board" / "ridge",
    }
