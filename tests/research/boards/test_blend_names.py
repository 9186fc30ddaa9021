"""``--blend`` spellings: models joined by +, an inner blend in parentheses made first, their
folders, and what is refused; a leaderboard that blends a blend with one more run."""

from __future__ import annotations

import json

import pytest
import yaml

from coldbrew.cli import main
from coldbrew.errors import ColdbrewError
from coldbrew.research.boards.blend_names import (
    blend_name,
    member_name,
    parse_blends,
    split_members,
)
from research_tiny_run import TINY

MODELS = ["lm", "clcrec", "aldi", "popularity"]


def test_an_inner_blend_is_made_before_the_blend_that_uses_it():
    assert parse_blends("(lm+clcrec+aldi)+popularity", MODELS) == [
        ["lm", "clcrec", "aldi"],
        [("lm", "clcrec", "aldi"), "popularity"],
    ]
    # asked for itself as well, and after: made once, first
    assert parse_blends("(lm+clcrec)+aldi,lm+clcrec", MODELS) == [
        ["lm", "clcrec"],
        [("lm", "clcrec"), "aldi"],
    ]
    assert parse_blends("CLCRec+lm, ", MODELS) == [["clcrec", "lm"]]


def test_folders_spell_the_blend():
    nested = [("lm", "clcrec"), "popularity"]
    assert blend_name(nested) == "blend-(lm+clcrec)+popularity"
    assert blend_name(["lm", "clcrec"]) == "blend-lm+clcrec"
    assert [member_name(member) for member in nested] == ["blend-lm+clcrec", "popularity"]
    assert split_members("(a+b)+c") == ["(a+b)", "c"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clcrec", "two or more"),
        ("clcrec+clcrec", "two or more"),
        ("(lm+clcrec)", "two or more"),
        ("(lm)+clcrec", "two or more"),
        ("((lm+clcrec)+aldi)+popularity", "one level deep"),
        ("(lm+clcrec+aldi", "not closed"),
        ("lm+clcrec)+aldi", "one level deep"),
        ("(lm+clcrec)x+aldi", "neither a model nor"),
        ("(lm+bpr)+aldi", "bpr not in --models"),
        ("(lm+clcrec)+nope", "unknown model"),
    ],
)
def test_what_is_refused(text, message):
    with pytest.raises(ColdbrewError, match=message):
        parse_blends(text, MODELS)


def test_a_leaderboard_blends_a_blend_with_one_more_run(tmp_path):
    tiny = {key: value for key, value in TINY.items() if key != "num_neg"}
    section = {"models": ["clcrec", "bpr", "popularity"], "blend": ["(clcrec+bpr)+popularity"]}
    preset = tmp_path / "best.yaml"
    preset.write_text(
        yaml.safe_dump({**tiny, "epochs": 1, "leaderboard": {**section, "seeds": [3]}})
    )
    out = tmp_path / "best"
    argv = ["leaderboard", "--config", str(preset), "--out", str(out), "--no-plot"]
    assert main(argv) == 0
    nested, inner = out / "blend-(clcrec+bpr)+popularity", out / "blend-clcrec+bpr"
    config = yaml.safe_load((nested / "seed-3" / "config.yaml").read_text())
    assert config["blend"]["runs"] == [str(inner / "seed-3"), str(out / "popularity" / "seed-3")]
    rows = {row["model"]: row for row in json.loads((out / "leaderboard.json").read_text())["rows"]}
    assert set(rows) == {"clcrec", "bpr", "popularity", inner.name, nested.name}
    # popularity gives every user one list, and its row's name says so; the others personalise
    assert [name for name, row in rows.items() if row["one_list"]] == ["popularity"]
    table = (out / "leaderboard.md").read_text()
    assert "| popularity (one list for all users) |" in table and "| clcrec |" in table

    def own(path):
        timing = json.loads((path / "seed-3" / "results.json").read_text())["timing"]
        return timing["wall_seconds"] + timing.get("backbone_seconds", 0.0)

    # the nested blend's seconds: its own, the inner blend's with its runs', popularity's
    inner_total = own(inner) + own(out / "clcrec") + own(out / "bpr")
    assert rows[inner.name]["wall_seconds"]["mean"] == pytest.approx(inner_total)
    total = own(nested) + inner_total + own(out / "popularity")
    assert rows[nested.name]["wall_seconds"]["mean"] == pytest.approx(total)
    # a second call without --blend finds both blends in --out and trains nothing
    finished = (nested / "seed-3" / "best.pt").stat().st_mtime_ns
    section.pop("blend")
    preset.write_text(
        yaml.safe_dump({**tiny, "epochs": 1, "leaderboard": {**section, "seeds": [3]}})
    )
    assert main(argv) == 0
    rows = [row["model"] for row in json.loads((out / "leaderboard.json").read_text())["rows"]]
    assert rows[-2:] == [inner.name, nested.name]
    assert (nested / "seed-3" / "best.pt").stat().st_mtime_ns == finished
