"""``make demo``'s choice of data: ml-1m-coldstart, else ml-100k (downloadable), else synthetic."""

from __future__ import annotations

import pytest

from coldbrew import demo
from coldbrew.errors import DataError


@pytest.fixture
def empty_data(tmp_path, monkeypatch):
    monkeypatch.setenv("COLDBREW_DATA", str(tmp_path))
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_ml1m_coldstart_first(empty_data, capsys):
    (empty_data / "ml-1m-coldstart").mkdir()
    assert demo.find_data() == "ml-1m-coldstart"
    assert capsys.readouterr().out.startswith("data: ml-1m-coldstart")


def test_ml100k_when_it_can_be_had(empty_data, monkeypatch, capsys):
    import coldbrew.data

    monkeypatch.setattr(coldbrew.data, "resolve_data_path", lambda name: empty_data / name)
    assert demo.find_data() == "ml-100k"
    assert "data: ml-100k" in capsys.readouterr().out


def test_synthetic_when_nothing_else_is_there_and_it_says_why(empty_data, monkeypatch, capsys):
    import coldbrew.data

    def offline(name):
        raise DataError("the download failed: offline")

    monkeypatch.setattr(coldbrew.data, "resolve_data_path", offline)
    assert demo.find_data() == "synthetic"
    assert "ml-100k unavailable: the download failed: offline" in capsys.readouterr().out


def test_the_demo_trains_with_the_commands_thread_choice(monkeypatch, capsys):
    # torch's one thread per core made the demo 6x slower beside one busy process
    import torch

    from coldbrew.system import threads

    seen = {}

    def train(config, run_dir, dataset):
        seen["threads"] = torch.get_num_threads()
        raise DataError("stop here")

    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_applied", [None])
    monkeypatch.setattr(threads, "current_choice", lambda: threads.ThreadChoice(before + 1, "t"))
    monkeypatch.setattr(demo, "find_data", lambda: "synthetic")
    monkeypatch.setattr(demo, "train", train)
    try:
        assert demo.main([]) == 2
    finally:
        torch.set_num_threads(before)
    assert seen["threads"] == before + 1
    assert capsys.readouterr().out.startswith(f"threads: {before + 1} (t)")
