"""A run on plain files named by ``--layout`` (no coldbrew.yaml): trained, saved with its layout,
and read back by ``recommend``, ``export`` and ``--resume`` as it was trained."""

from __future__ import annotations

import json

import pytest
import yaml

from coldbrew.cli import main

USERS = [f"u{number}" for number in range(12)]


@pytest.fixture
def tables(tmp_path):
    """Plain CSV files only: 12 users, 8 warm items and 2 cold ones with a genre and a year."""
    folder = tmp_path / "shop"
    folder.mkdir()
    events = [
        f"{user},s{(index + step) % 8}" for index, user in enumerate(USERS) for step in (0, 3)
    ]
    (folder / "events.csv").write_text("uid,sku\n" + "\n".join(events) + "\n")
    cold = [f"{user},s{8 + index % 2}" for index, user in enumerate(USERS[:6])]
    (folder / "cold.csv").write_text("uid,sku\n" + "\n".join(cold) + "\n")
    rows = [f"s{item},{'AB'[item % 2]}|C,{1990 + item}" for item in range(10)]
    (folder / "items.csv").write_text("sku,genres,year\n" + "\n".join(rows) + "\n")
    return folder


LAYOUT = ["interactions=events.csv", "user=uid", "item=sku", "items=items.csv", "val=cold.csv"]
FAST = ["--model", "ridge", "--device", "cpu", "--quiet"]


def flags(*settings: str) -> list[str]:
    return [word for setting in settings for word in ("--layout", setting)]


def test_a_run_on_flags_alone_is_recommended_and_exported_from_its_saved_layout(
    tables, tmp_path, capsys
):
    run = tmp_path / "run"
    layout = flags(*LAYOUT, "categories=genres", "numeric=year")
    assert main(["train", "--data", str(tables), *layout, *FAST, "--out", str(run)]) == 0
    saved = yaml.safe_load((run / "config.yaml").read_text())["layout"]
    assert saved["categories"] == ["genres"] and saved["interactions"] == "events.csv"
    assert json.loads((run / "results.json").read_text())["config"]["layout"] == saved
    capsys.readouterr()
    assert main(["recommend", "--run", str(run), "--user", "u3", "--k", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 3 and {row["item"] for row in rows} <= {f"s{i}" for i in range(10)}
    assert main(["export", "--run", str(run), "--out", str(tmp_path / "export")]) == 0
    more = ["--resume", str(run), "--layout", "numeric="]  # other data: refused by name
    assert main(["train", *more]) == 2
    assert "--resume cannot change layout" in capsys.readouterr().err


def test_a_config_files_layout_mapping_trains_and_flags_go_over_it(tables, tmp_path, capsys):
    preset = tmp_path / "shop.yaml"
    mapping = dict(setting.split("=") for setting in LAYOUT)
    preset.write_text(yaml.safe_dump({"data": str(tables), "layout": {**mapping, "numeric": []}}))
    run = tmp_path / "run"
    argv = ["train", "--config", str(preset), *flags("numeric=year"), *FAST, "--out", str(run)]
    assert main(argv) == 0
    saved = yaml.safe_load((run / "config.yaml").read_text())["layout"]
    assert saved == {**mapping, "numeric": ["year"]}
    summary = json.loads((run / "results.json").read_text())["dataset"]
    assert summary["features"] == {"numeric": [10, 1]}


def test_train_refuses_a_layout_for_a_prepared_dataset_before_making_a_run(tmp_path, capsys):
    run = tmp_path / "run"
    argv = ["train", "--data", "synthetic", *flags("text=title"), *FAST, "--out", str(run)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "synthetic is not your own tables" in error and error.count("\n") == 1
    assert not run.exists()


def test_forecast_neither_lists_nor_takes_a_layout(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["forecast", "--help"])
    assert "--layout" not in capsys.readouterr().out
    out = tmp_path / "forecast"
    argv = ["forecast", "--data", "synthetic", *flags("text=title"), "--out", str(out)]
    assert main([*argv, "--no-plot"]) == 2
    assert "forecasting reads MovieLens ratings" in capsys.readouterr().err and not out.exists()


def test_other_data_is_read_with_its_own_layout_over_the_runs(tables, tmp_path, capsys):
    run, other = tmp_path / "run", tmp_path / "other"
    layout = flags(*LAYOUT, "categories=genres")
    assert main(["train", "--data", str(tables), *layout, *FAST, "--out", str(run)]) == 0
    other.mkdir()
    for name in ("cold.csv", "items.csv"):
        (other / name).write_text((tables / name).read_text())
    (other / "march.csv").write_text((tables / "events.csv").read_text())
    capsys.readouterr()
    ask = ["recommend", "--run", str(run), "--user", "u3", "--k", "2", "--data", str(other)]
    assert main(ask) == 2  # the run's own layout names events.csv, which the folder lacks
    assert "events.csv" in capsys.readouterr().err
    assert main([*ask, *flags("interactions=march.csv"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    evaluate = ["evaluate", "--run", str(run), "--data", str(other), "--json"]
    assert main([*evaluate, *flags("interactions=march.csv")]) == 0
    capsys.readouterr()
    assert main(["recommend", "--run", str(run), "--user", "u3", *flags("text=x")]) == 2
    assert "give it with --data" in capsys.readouterr().err
