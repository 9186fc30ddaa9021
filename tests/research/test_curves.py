"""TensorBoard event files with every epoch's scalars, curves.png, and the switches off."""

from __future__ import annotations

import json

from coldbrew.config import make_config
from coldbrew.research import curves
from coldbrew.research.curves import plot_curves, plotted_metrics, train_with_curves
from research_optional import require
from research_tiny_run import TINY

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    """Every event file's scalars, files in the order they were written. (TensorBoard orders
    a folder's files by name, whose time is in whole seconds and whose per-process counter is
    not zero-padded: a run resumed within the same second can sort before its first part.)"""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars: dict[str, list[tuple[int, float]]] = {}
    files = sorted(run_dir.glob("events.out.tfevents.*"), key=lambda path: path.stat().st_mtime_ns)
    for path in files:
        events = EventAccumulator(str(path))
        events.Reload()
        for tag in events.Tags()["scalars"]:
            scalars.setdefault(tag, []).extend((e.step, e.value) for e in events.Scalars(tag))
    return scalars


def test_every_epoch_logs_losses_metrics_speed_and_memory_and_a_png(tmp_path):
    require("tensorboard")
    require("matplotlib")
    run = tmp_path / "run"
    train_with_curves(make_config(TINY), run, log=lambda line: None)
    results = json.loads((run / "results.json").read_text())
    scalars = read_scalars(run)
    assert list(run.glob("events.out.tfevents.*"))
    for entry in results["history"]:
        epoch = entry["epoch"]
        for name, value in entry["losses"].items():
            step, logged = scalars[f"loss/{name}"][epoch - 1]
            assert step == epoch and abs(logged - value) < 1e-6  # float32 in the event file
        recall = scalars["val/cold/recall@5"][epoch - 1]
        assert recall[0] == epoch and abs(recall[1] - entry["val"]["cold"]["recall@5"]) < 1e-6
    assert {"loss/loss", "loss/item_content", "loss/user_item", "loss/reg"} <= set(scalars)
    assert [step for step, _ in scalars["speed/samples_per_second"]] == [1, 2]
    assert all(value > 0 for _, value in scalars["speed/samples_per_second"])
    assert all(value > 1 for _, value in scalars["memory/rss_mib"])  # a Python process: > 1 MiB
    png = (run / "curves.png").read_bytes()
    assert png.startswith(PNG_MAGIC) and len(png) > 10_000


def test_resume_appends_the_new_epochs(tmp_path):
    require("tensorboard")
    from coldbrew.training.run import resume_config

    run = tmp_path / "run"
    train_with_curves(make_config(TINY, {"epochs": 1}), run, log=lambda line: None)
    train_with_curves(resume_config(run, {"epochs": 2}), run, resume=True, log=lambda line: None)
    assert [step for step, _ in read_scalars(run)["loss/loss"]] == [1, 2]


def test_no_tensorboard_and_tensorboard_missing(tmp_path, monkeypatch):
    require("matplotlib")
    train_with_curves(make_config(TINY, {"epochs": 1}), tmp_path / "off", tensorboard=False)
    assert not list((tmp_path / "off").glob("events.out.tfevents.*"))
    assert (tmp_path / "off" / "curves.png").exists()

    monkeypatch.setattr(curves, "tensorboard_available", lambda: False)
    monkeypatch.setattr(curves, "_notes_given", set())
    lines: list[str] = []
    for name in ("a", "b"):
        train_with_curves(make_config(TINY, {"epochs": 1}), tmp_path / name, log=lines.append)
    notes = [line for line in lines if "tensorboard is not installed" in line]
    assert len(notes) == 1  # said once
    assert not list((tmp_path / "a").glob("events.out.tfevents.*"))


def test_plotted_metrics_follow_the_monitor(tmp_path):
    require("matplotlib")
    history = [
        {
            "epoch": epoch,
            "losses": {"loss": 2.0 / epoch},
            "val": {
                "all": {"recall@20": 0.1 * epoch, "recall@50": 0.2},
                "cold": {"recall@20": 0.05 * epoch, "ndcg@20": 0.04, "recall@50": 0.3},
            },
        }
        for epoch in (1, 2, 3)
    ]
    assert plotted_metrics(history, "cold/recall@20") == [
        "all/recall@20",
        "cold/recall@20",
        "cold/ndcg@20",
    ]
    forecast = [{"epoch": 1, "losses": {"loss": 1.0}, "val": {"all": {"mae": 2.0, "rmse": 3.0}}}]
    assert plotted_metrics(forecast, "all/mae") == ["all/mae", "all/rmse"]
    path = plot_curves(history, tmp_path / "c.png", monitor="cold/recall@20", best_epoch=3)
    assert path.read_bytes().startswith(PNG_MAGIC)
