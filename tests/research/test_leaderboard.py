"""``coldbrew leaderboard``: every model x seed through the one way in, both conventions of the
cold group, mean ± std per model, resumable; what it refuses."""

from __future__ import annotations

import json
import statistics

import pytest
from tiny_run import TINY

from coldbrew.cli import main
from coldbrew.errors import ColdbrewError
from coldbrew.research.leaderboard import leaderboard, parse_blends, parse_models


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
    for convention in ("all", "split"):
        per_seed = [
            json.loads(
                (out / "clcrec" / f"seed-{seed}" / f"evaluation-{convention}.json").read_text()
            )
            for seed in (1, 2)
        ]
        assert {entry["cold_candidates"] for entry in per_seed} == {convention}
        values = [entry["metrics"]["val"]["cold"]["recall@20"] for entry in per_seed]
        cell = row["metrics"][convention]["val"]["cold"]["recall@20"]
        assert cell["mean"] == pytest.approx(statistics.mean(values))
        assert cell["std"] == pytest.approx(statistics.stdev(values))
    # the default convention's scores are the ones the seed's own training wrote
    trained = json.loads((out / "clcrec" / "seed-1" / "results.json").read_text())
    evaluated = json.loads((out / "clcrec" / "seed-1" / "evaluation-all.json").read_text())
    assert evaluated["metrics"]["val"]["cold"] == pytest.approx(trained["metrics"]["val"]["cold"])
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
    with pytest.raises(ColdbrewError, match="joined by"):
        parse_blends("clcrec+bpr", ["clcrec", "lm"])
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
    assert printed.startswith("| model |") and "split val/cold recall@20" in printed


def test_models_share_one_load_per_seed_and_encoder(monkeypatch):
    """The data cache keys by what loading reads: two recommendation models and a seed share
    one load; another seed or text encoder loads again."""
    from coldbrew.config import make_config
    from coldbrew.research import search

    loads = []
    monkeypatch.setattr(
        "coldbrew.training.run.load_run_dataset", lambda config: loads.append(config) or object()
    )
    cache = search.DataCache()
    first = cache(make_config({**TINY, "model": "clcrec", "seed": 1}))
    assert cache(make_config({**TINY, "model": "aldi", "seed": 1})) is first
    cache(make_config({**TINY, "model": "aldi", "seed": 2}))
    cache(make_config({**TINY, "model": "clcrec", "seed": 1, "text_encoder": "mpnet"}))
    assert [(c.model, c.seed, c.text_encoder) for c in loads] == [
        ("clcrec", 1, "minilm"),
        ("aldi", 2, "minilm"),
        ("clcrec", 1, "mpnet"),
    ]
