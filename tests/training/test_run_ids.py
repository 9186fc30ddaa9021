"""A run stores its data's ids (``ids.json``); reloading it on data whose ids changed is refused
by name, not scored with rows that now mean other users or items."""

from __future__ import annotations

import json

from coldbrew.cli import main

EVENTS = "uid,sku\n" + "".join(f"u{u},s{(u + step) % 6}\n" for u in range(8) for step in (0, 2))
ITEMS = "sku,year\n" + "".join(f"s{i},{1990 + i}\n" for i in range(8))  # s6, s7 cold
LAYOUT = ["--layout", "interactions=events.csv", "--layout", "user=uid", "--layout", "item=sku"]
LAYOUT += ["--layout", "items=items.csv", "--layout", "numeric=year"]


def test_the_ids_are_stored_and_a_renamed_item_is_refused_by_name(tmp_path, capsys):
    data, run = tmp_path / "shop", tmp_path / "run"
    data.mkdir()
    (data / "events.csv").write_text(EVENTS)
    (data / "items.csv").write_text(ITEMS)
    argv = ["train", "--data", str(data), *LAYOUT, "--model", "ridge", "--quiet", "--out", str(run)]
    assert main([*argv, "--device", "cpu"]) == 0
    stored = json.loads((run / "ids.json").read_text())
    assert stored["items"] == [f"s{i}" for i in range(8)] and stored["users"][:2] == ["u0", "u1"]
    capsys.readouterr()
    assert main(["recommend", "--run", str(run), "--user", "u1", "--k", "2", "--json"]) == 0
    capsys.readouterr()
    (data / "items.csv").write_text(ITEMS.replace("s7,", "s9,"))  # same count, one id renamed
    assert main(["recommend", "--run", str(run), "--user", "u1", "--k", "2"]) == 2
    error = capsys.readouterr().err
    assert "trained on other items than the data now holds (1 new, e.g. item 's9'" in error
    assert "1 gone, e.g. item 's7'" in error and error.count("\n") == 1
