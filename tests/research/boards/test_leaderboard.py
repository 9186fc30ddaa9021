"""``coldbrew leaderboard``: every model x seed through the one way in, both conventions of the
cold group, mean ± std per model, resumable; what it refuses."""

from __future__ import annotations

import json
import statistics

import pytest

from coldbrew.cli import main
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend_names import parse_blends
from coldbrew.research.boards.board import seed_seconds, table_cells
from coldbrew.research.boards.leaderboard import leaderboard, parse_models
from research_tiny_run import TINY


def quiet(_line: str) -> None:
    pass


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("board") / "board"
    result = leaderboard(({**TINY},), ["clcrec"], [1, 2], out, plot=False, log=quiet)
    return out, result


def test_the_board_is_the_mean_and_std_of_each_seeds_own_evaluation(board):
    out, result = board
    row = result["rows"][0]
    assert row["model"] == "clcrec" and row["seeds"] == [1, 2]
    # the run's own convention (all) is what its training wrote; the other was scored after
    own = [json.loads((out / "clcrec" / f"seed-{s}" / "results.json").read_text()) for s in (1, 2)]
    assert {entry["config"]["cold_candidates"] for entry in own} == {"all"}
    other = [
        json.loads((out / "clcrec" / f"seed-{seed}" / "evaluation-split.json").read_text())
        for seed in (1, 2)
    ]
    assert {entry["cold_candidates"] for entry in other} == {"split"}
    for convention, per_seed in {"all": own, "split": other}.items():
        values = [entry["metrics"]["report"]["cold"]["recall@20"] for entry in per_seed]
        cell = row["metrics"][convention]["report"]["cold"]["recall@20"]
        assert cell["mean"] == pytest.approx(statistics.mean(values))
        assert cell["std"] == pytest.approx(statistics.stdev(values))
    assert not (out / "clcrec" / "seed-1" / "evaluation-all.json").exists()  # never re-scored
    written = json.loads((out / "leaderboard.json").read_text())
    assert written["rows"][0]["metrics"] == json.loads(json.dumps(row["metrics"]))
    assert "| clcrec |" in (out / "leaderboard.md").read_text()


def test_a_second_call_trains_nothing_and_other_settings_are_refused(board):
    out, _ = board
    finished = (out / "clcrec" / "seed-1" / "best.pt").stat().st_mtime_ns
    lines: list[str] = []
    leaderboard(({**TINY},), ["clcrec"], [1, 2], out, plot=False, log=lines.append)
    assert (out / "clcrec" / "seed-1" / "best.pt").stat().st_mtime_ns == finished
    assert any("finished before" in line for line in lines)
    with pytest.raises(ColdbrewError, match="other settings.*dim"):
        leaderboard(({**TINY, "dim": 8},), ["clcrec"], [1, 2], out, plot=False, log=quiet)


def test_models_and_blends_are_checked_before_anything_runs(tmp_path):
    with pytest.raises(ColdbrewError, match="unknown model"):
        parse_models("clcrec,nope")
    with pytest.raises(ColdbrewError, match="twice"):
        parse_models("clcrec,CLCRec")
    with pytest.raises(ColdbrewError, match="not one"):
        parse_models("lstm")
    with pytest.raises(ColdbrewError, match="at least one"):
        parse_models(" , ")
    with pytest.raises(ColdbrewError, match="joined by"):
        parse_blends("clcrec", ["clcrec", "lm"])
    with pytest.raises(ColdbrewError, match="bpr not in --models \\(clcrec,lm\\).* add it"):
        parse_blends("clcrec+bpr", ["clcrec", "lm"])
    with pytest.raises(ColdbrewError, match="--models blend: a blend is made of .* --blend A\\+B"):
        parse_models("clcrec,knn,blend")
    assert parse_blends("clcrec+lm", ["clcrec", "lm"]) == [["clcrec", "lm"]]
    out = tmp_path / "refused"
    argv = ["leaderboard", "--models", "clcrec", "--seed", "2", "--out", str(out)]
    with pytest.raises(ColdbrewError, match="--seeds LIST"):
        from coldbrew.cli import build_parser, handler

        handler("leaderboard")(build_parser().parse_args(argv))
    assert not out.exists()


def test_leaderboard_command_prints_the_table(tmp_path, capsys):
    out = tmp_path / "cli"
    flags = ["--data", TINY["data"], "--epochs", "1", "--ks", "5,20"]
    argv = ["leaderboard", "--models", "clcrec", "--seeds", "3", "--out", str(out), "--quiet"]
    assert main([*argv, *flags, "--no-plot", "--markdown"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| model |") and "split report/cold recall@20" in printed
    assert "val" not in printed  # the items that chose are not reported


def test_the_table_shows_report_and_test_and_marks_val_where_there_is_no_report():
    from coldbrew.research.boards.board import table_cells

    cell = {"recall@20": {"mean": 0.2, "std": None, "n": 1, "values": [0.2]}}
    honest = {"all": {"val": {"cold": cell}, "report": {"cold": cell}, "test": {"cold": cell}}}
    header, _ = table_cells([{"model": "a", "metrics": honest, "wall_seconds": {"mean": 1}}])
    assert header == ["model", "all report/cold recall@20", "all test/cold recall@20", "seconds"]
    whole = {"all": {"val": {"cold": cell}}}  # report_share 0: val chose and reports
    header, _ = table_cells([{"model": "a", "metrics": whole, "wall_seconds": {"mean": 1}}])
    assert header == ["model", "all val (chose)/cold recall@20", "seconds"]


def test_a_blends_seconds_are_its_own_plus_those_of_its_runs_backbones_included():
    trained = {
        "a": {
            "per_seed": {
                1: {"timing": {"wall_seconds": 10.0}},
                2: {"timing": {"wall_seconds": 12.0}},
            }
        },
        "b": {
            "per_seed": {
                1: {"timing": {"wall_seconds": 20.0, "backbone_seconds": 5.0}},
                2: {"timing": {"wall_seconds": 30.0, "backbone_seconds": 6.0}},
            }
        },
        "blend-a+b": {
            "per_seed": {
                1: {"timing": {"wall_seconds": 1.0}},
                2: {"timing": {"wall_seconds": 2.0}},
            },
            "parts": ["a", "b"],
        },
    }
    assert seed_seconds("a", trained) == [10.0, 12.0]  # an older run: no backbone_seconds
    assert seed_seconds("b", trained) == [20.0 + 5.0, 30.0 + 6.0]  # its backbone counts
    assert seed_seconds("blend-a+b", trained) == [10.0 + 25.0 + 1.0, 12.0 + 36.0 + 2.0]


def test_a_model_with_no_cold_signal_shows_it_in_its_cold_columns(tmp_path, board):
    # bpr scores every cold item 0: no number in its cold columns; clcrec (content) has one
    result = leaderboard(({**TINY},), ["bpr"], [1], tmp_path / "bpr", plot=False, log=quiet)
    row = result["rows"][0]
    assert sorted(row["no_cold_signal"]) == [
        [c, s] for c in ("all", "split") for s in ("report", "test", "val")
    ]
    header, cells = table_cells([row, board[1]["rows"][0]])
    cold = [index for index, name in enumerate(header) if "/cold " in name]
    warm = [index for index, name in enumerate(header) if "/warm " in name]
    assert cold and warm
    assert {cells[0][index] for index in cold} == {"no cold signal"}
    assert "no cold signal" not in {cells[0][index] for index in warm}
    assert board[1]["rows"][0]["no_cold_signal"] == []
    assert "no cold signal" not in cells[1]
    assert "no cold signal" in (tmp_path / "bpr" / "leaderboard.md").read_text()
    # compare says the same of the run's cold metrics, and only of those
    from coldbrew.research.boards.compare import compare_table

    keys = ["report/cold/recall@20", "report/warm/recall@20"]
    header, rows = compare_table([tmp_path / "bpr" / "bpr", board[0] / "clcrec"], keys)
    assert rows[0][header.index(keys[0])] == "no cold signal"
    assert rows[0][header.index(keys[1])] != "no cold signal"
    assert rows[1][header.index(keys[0])] != "no cold signal"


def test_a_presets_leaderboard_section_names_the_models_blends_and_seeds(tmp_path, capsys):
    import yaml

    preset = tmp_path / "best.yaml"
    section = {"models": ["clcrec", "bpr"], "blend": ["clcrec+bpr"], "seeds": [3]}
    section["blend_objective"] = "joint"
    preset.write_text(yaml.safe_dump({**TINY, "epochs": 1, "leaderboard": section}))
    out = tmp_path / "best"
    assert main(["leaderboard", "--config", str(preset), "--out", str(out), "--no-plot"]) == 0
    assert sorted(path.name for path in out.iterdir() if path.is_dir()) == [
        "blend-clcrec+bpr",
        "bpr",
        "clcrec",
    ]
    assert (out / "clcrec" / "seed-3" / "results.json").exists()
    assert json.loads((out / "leaderboard.json").read_text())["seeds"] == [3]
    blended = json.loads((out / "blend-clcrec+bpr" / "seed-3" / "results.json").read_text())
    assert blended["config"]["blend"]["chosen_by"] == "joint"
    # the flag wins over the section, and a blend another objective chose is not read back
    argv = ["leaderboard", "--config", str(preset), "--out", str(out), "--no-plot"]
    capsys.readouterr()
    assert main([*argv, "--blend-objective", "monitored"]) == 2
    assert "chosen by the joint objective, not monitored" in capsys.readouterr().err
    # flags win over the section; train ignores the section (it is no run option)
    from coldbrew.config import load_yaml, make_config

    assert make_config(load_yaml(preset)).model == "clcrec"


def test_a_leaderboard_section_is_checked():
    from coldbrew.research.boards.leaderboard import board_preset

    assert board_preset({}) == {}
    assert board_preset({"leaderboard": {"models": ["a", "b"], "seeds": "1,2"}}) == {
        "models": "a,b",
        "seeds": "1,2",
    }
    with pytest.raises(ColdbrewError, match="unknown key 'model'"):
        board_preset({"leaderboard": {"model": "clcrec"}})
    with pytest.raises(ColdbrewError, match="expected a mapping"):
        board_preset({"leaderboard": ["clcrec"]})


def test_a_leaderboard_without_models_says_how_to_name_them(tmp_path):
    with pytest.raises(ColdbrewError, match="give --models LIST"):
        from coldbrew.cli import build_parser, handler

        handler("leaderboard")(build_parser().parse_args(["leaderboard", "--out", str(tmp_path)]))


def test_one_out_holds_one_setting_and_its_table_covers_every_model_trained_there(board):
    out, _ = board  # clcrec, seeds 1 and 2
    with pytest.raises(ColdbrewError, match="clcrec was trained with other settings.*dim"):
        leaderboard(({**TINY, "dim": 8},), ["bpr"], [1, 2], out, plot=False, log=quiet)
    assert not (out / "bpr").exists()  # refused before anything ran
    board = leaderboard(({**TINY},), ["bpr"], [1, 2], out, plot=False, log=quiet)
    assert [row["model"] for row in board["rows"]] == ["bpr", "clcrec"]
    assert "clcrec" in (out / "leaderboard.md").read_text()


def test_a_flat_model_option_names_the_model_without_it_and_where_to_put_it(tmp_path, capsys):
    with pytest.raises(ColdbrewError, match="applies to every model, and clcrec has no such"):
        leaderboard(({"neighbors": 20},), ["clcrec", "knn"], [1], tmp_path / "b", log=quiet)
    assert not (tmp_path / "b").exists()
    argv = ["leaderboard", "--models", "clcrec,knn", "--out", str(tmp_path / "c"), "--dim", "8"]
    with pytest.raises(SystemExit):
        main(argv)
    assert "--dim is an option of clcrec" in capsys.readouterr().err


def test_models_share_one_load_per_seed_and_encoder(monkeypatch):
    """The data cache keys by what loading reads: two recommendation models and a seed share
    one load; another seed or text encoder loads again."""
    from coldbrew.config import make_config
    from coldbrew.research.search import study

    loads = []
    monkeypatch.setattr(
        "coldbrew.tasks.load_data",
        lambda task, config, select: loads.append(config) or object(),
    )
    cache = study.DataCache()
    first = cache(make_config({**TINY, "model": "clcrec", "seed": 1}))
    assert cache(make_config({**TINY, "model": "aldi", "seed": 1})) is first
    cache(make_config({**TINY, "model": "aldi", "seed": 2}))
    cache(make_config({**TINY, "model": "clcrec", "seed": 1, "text_encoder": "mpnet"}))
    assert [(c.model, c.seed, c.text_encoder.spelling) for c in loads] == [
        ("clcrec", 1, "minilm"),
        ("aldi", 2, "minilm"),
        ("clcrec", 1, "mpnet"),
    ]


def test_a_cold_column_over_no_more_items_than_k_is_marked_not_scored():
    """15 cold items and K = 20: Recall@20 is 1 for any model, so the column says so."""
    from coldbrew.research.summary import mean_std

    metrics = {"split": {"report": {"cold": {"recall@20": mean_std([1.0, 1.0])}}}}
    row = {
        "model": "a",
        "metrics": metrics,
        "wall_seconds": {"mean": 1},
        "candidates": {"split": {"report": 15}},
    }
    _, cells = table_cells([row])
    assert cells[0][1] == "<= 20 items"
    row["candidates"] = {"split": {"report": 21}}
    assert table_cells([row])[1][0][1].startswith("1.0000")
