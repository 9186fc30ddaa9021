"""The thread count: free cores from the load average, the variables that override it."""

from __future__ import annotations

import pytest
import torch

from coldbrew.errors import ColdbrewError
from coldbrew.system import threads
from coldbrew.system.threads import choose_threads


@pytest.mark.parametrize(
    ("cores", "load", "expected"),
    [
        (2, 0.0, 2),  # idle: every core
        (2, 0.3, 2),  # 1.7 free rounds to 2
        (2, 0.5, 2),  # 1.5: half a core rounds up
        (2, 0.6, 1),  # 1.4 -> 1
        (2, 1.9, 1),  # 0.1 free: still one thread
        (2, 2.0, 1),  # load == cores: 1
        (2, 9.5, 1),  # far over: 1, never 0
        (16, 4.2, 12),  # 11.8 -> 12
        (16, 20.0, 1),
        (4, None, 4),  # no load average on this platform: every core
    ],
)
def test_threads_are_the_free_cores(cores, load, expected):
    assert choose_threads(cores, load).threads == expected


def test_the_reason_names_the_load_and_the_override():
    busy = choose_threads(2, 3.0)
    assert "load 3.0 on 2 cores: none free, so 1 thread" in busy.reason
    assert "COLDBREW_THREADS" in busy.reason
    assert choose_threads(2, 0.1).reason == "1-minute load 0.1 on 2 cores: all 2 free"


def test_variables_override_the_load():
    # COLDBREW_THREADS first, then OMP_NUM_THREADS (torch reads it itself), then the load
    assert choose_threads(2, 5.0, setting="3", omp="1").threads == 3
    assert choose_threads(2, 5.0, setting="3").reason == "COLDBREW_THREADS=3"
    assert choose_threads(2, 0.0, setting="auto", omp="1").threads == 1
    assert choose_threads(2, 0.0, omp="1").reason == "OMP_NUM_THREADS=1"
    assert choose_threads(2, 0.0, setting=" auto ", omp="").threads == 2


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_a_bad_setting_is_refused(bad):
    with pytest.raises(ColdbrewError, match="COLDBREW_THREADS must be a positive number"):
        choose_threads(2, 0.0, setting=bad)
    with pytest.raises(ColdbrewError, match="OMP_NUM_THREADS must be"):
        choose_threads(2, 0.0, omp=bad)


def test_chosen_threads_applies_and_restores(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("COLDBREW_THREADS", str(before + 1))
    with threads.chosen_threads() as choice:
        assert choice.threads == before + 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before


def test_a_command_runs_with_the_choice_and_leaves_the_process_as_it_was(monkeypatch):
    from coldbrew.cli import main

    seen = {}
    monkeypatch.setenv("COLDBREW_THREADS", "3")
    monkeypatch.setattr(
        "coldbrew.cli.runs.run_data", lambda args: seen.setdefault("n", torch.get_num_threads())
    )
    before = torch.get_num_threads()
    main(["data", "info", "synthetic:small"])
    assert seen["n"] == 3 and torch.get_num_threads() == before


def test_processes_side_by_side_share_the_cores_unless_a_variable_says_otherwise(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 8)
    monkeypatch.setattr(threads, "load_average", lambda: 2.2)
    monkeypatch.delenv("COLDBREW_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert threads.threads_per_process(2).threads == 4  # 8 cores // 2 processes
    assert threads.threads_per_process(3).threads == 2  # 8 // 3
    assert threads.threads_per_process(16).threads == 1  # never 0
    assert threads.free_cores().threads == 6  # 8 - 2.2 = 5.8 -> 6: --jobs auto
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.threads_per_process(2).threads == 3  # set by the user: kept
    assert threads.free_cores().threads == 6  # the variables say threads, not processes
    monkeypatch.setenv("COLDBREW_THREADS", "5")
    assert threads.threads_per_process(2).threads == 5
