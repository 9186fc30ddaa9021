"""``coldbrew forecast``: the LSTM through the engine and the baselines in one table, a window
sweep, results.json in the training form, and the PNG."""

from __future__ import annotations

import json

import pytest

from coldbrew.cli import main

SERIES = "synthetic:series=3,days=120"
QUICK = ["--data", SERIES, "--epochs", "2", "--batch-size", "64", "--hidden", "8", "--quiet"]


def test_a_window_sweep_prints_one_table_with_the_baselines(tmp_path, capsys):
    assert main(["forecast", *QUICK, "--window", "7,14", "--out", str(tmp_path / "f")]) == 0
    text = capsys.readouterr().out
    lines = text.strip().splitlines()
    assert lines[0].split() == ["test:", "window", "method", "mae", "rmse", "mase", "smape"]
    methods = {(line.split()[0], line.split()[1]) for line in lines[1:]}
    for window in ("7", "14"):
        assert {
            (window, m) for m in ("lstm", "naive", "seasonal_naive", "moving_average")
        } <= methods
    for window in (7, 14):
        results = json.loads((tmp_path / "f" / f"window-{window}" / "results.json").read_text())
        assert results["config"]["lstm"]["window"] == window
        assert results["early_stop"] == {
            "monitor": "all/mae",
            "mode": "min",
            "best": pytest.approx(min(h["val"]["all"]["mae"] for h in results["history"])),
            "min_epochs": 0,  # a forecast is no fold run: patience alone
        }
        assert set(results["baselines"]) == {"val", "test"}
        assert results["baselines"]["test"]["naive"]["all"]["mae"] > 0


def test_one_window_writes_the_run_and_the_png(tmp_path):
    pytest.importorskip("matplotlib")  # the [plot] extra
    assert main(["forecast", *QUICK, "--window", "14", "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "forecasts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "f" / "best.pt").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--window", "abc"], "--window must be days"),
        (["--window", "7,7"], "lists a window twice"),
        (["--series", "users"], "option 'series' must be one of item|genre|total"),
        (["--epochs", "0"], "option 'epochs' must be >= 1"),
    ],
)
def test_bad_forecast_options_are_one_line_errors(tmp_path, capsys, flags, message):
    argv = ["forecast", "--data", SERIES, "--out", str(tmp_path / "f"), *flags]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
