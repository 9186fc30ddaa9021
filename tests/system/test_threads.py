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


def test_cpu_times_are_busy_and_total_jiffies_from_proc_stat():
    stat = "cpu  100 5 50 800 20 1 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\nintr 1 2\n"
    # user 100 + nice 5 + system 50 + irq 1 + softirq 2 + steal 0 = 158 busy; idle 800 and
    # iowait 20 are not; total 978
    assert threads.cpu_times(stat) == (158, 978)
    assert threads.cpu_times("intr 1 2\n") is None
    assert threads.cpu_times("cpu  1 x 3 4 5\n") is None
    # 200 of 400 jiffies busy on 2 CPUs: one core busy
    assert threads.busy_between((158, 978), (358, 1378), 2) == 1.0
    assert threads.busy_between((158, 978), (158, 978), 2) is None


def test_the_automatic_choice_reads_the_cores_busy_now(monkeypatch):
    monkeypatch.delenv("COLDBREW_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "load_average", lambda: 0.0)  # a lagging average says idle
    monkeypatch.setattr(threads, "busy_cores", lambda: 1.6)
    choice = threads.current_choice()
    assert choice.threads == 1 and choice.reason.startswith("busy cores 1.6 on 2 cores")
    monkeypatch.setattr(threads, "busy_cores", lambda: None)  # no /proc/stat: the average
    assert threads.current_choice().reason == "1-minute load 0.0 on 2 cores: all 2 free"

    def not_sampled():
        raise AssertionError("a variable sets the count: nothing to sample")

    monkeypatch.setattr(threads, "busy_cores", not_sampled)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert threads.current_choice().threads == 2


def test_one_sample_answers_for_a_while(monkeypatch):
    readings = iter(["cpu  0 0 0 100 0 0 0 0\n", "cpu  50 0 0 150 0 0 0 0\n"])
    monkeypatch.setattr(threads, "_read_stat", lambda: next(readings))
    monkeypatch.setattr(threads, "_sampled", None)
    monkeypatch.setattr(threads.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    assert threads.busy_cores() == 1.0  # 50 of 100 jiffies busy on 2 CPUs
    assert threads.busy_cores() == 1.0  # kept: /proc/stat not read again (no third reading)
    monkeypatch.setattr(threads, "_sampled", (threads.time.monotonic() - 11, 1.0))
    with pytest.raises(StopIteration):  # older than SAMPLE_KEPT: read again
        threads.busy_cores()


def test_the_busy_cores_of_this_machine_are_a_share_of_its_cores(monkeypatch):
    monkeypatch.setattr(threads, "_sampled", None)
    busy = threads.busy_cores()
    if busy is None:
        pytest.skip("no /proc/stat here")
    assert 0.0 <= busy <= (threads.os.cpu_count() or 1)


def test_processes_side_by_side_share_the_cores_unless_a_variable_says_otherwise(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 8)
    monkeypatch.setattr(threads, "busy_cores", lambda: 2.2)
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


def test_a_run_started_from_python_takes_the_choice_and_an_entry_points_choice_stands(
    monkeypatch,
):
    # the Python API (coldbrew.training.run.train, the demo) reaches configure_process: with no
    # choice made in the process, it makes the CLI's; after an entry point made one, it keeps it
    from coldbrew.system.runtime import configure_process

    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_applied", [None])
    monkeypatch.setattr(threads, "current_choice", lambda: threads.ThreadChoice(1, "busy"))
    try:
        torch.set_num_threads(3)  # torch's one thread per core, say
        configure_process(torch.device("cpu"))
        assert torch.get_num_threads() == 1
        monkeypatch.setattr(threads, "current_choice", lambda: threads.ThreadChoice(2, "later"))
        configure_process(torch.device("cpu"))  # a second sample could see this process busy
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_lower_count_the_caller_set_stands(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_applied", [None])
    monkeypatch.setattr(threads, "current_choice", lambda: threads.ThreadChoice(4, "4 free"))
    try:
        torch.set_num_threads(2)
        choice = threads.ensure_threads()
        assert torch.get_num_threads() == 2 == choice.threads
        assert choice.reason == "2 set before (4 free)"
    finally:
        torch.set_num_threads(before)


def test_a_command_inside_a_process_leaves_no_choice_behind(monkeypatch):
    monkeypatch.setattr(threads, "_applied", [None])
    monkeypatch.setenv("COLDBREW_THREADS", "1")
    with threads.chosen_threads() as choice:
        assert threads.ensure_threads() is choice
    assert threads._applied[0] is None


@pytest.mark.parametrize("command", ["serve", "export", "blend"])
def test_the_server_export_and_blend_take_the_choice_too(command, monkeypatch):
    from coldbrew.cli import HANDLERS, main

    seen = {}
    module, _, function = HANDLERS[command].partition(":")
    monkeypatch.setenv("COLDBREW_THREADS", "3")
    monkeypatch.setattr(
        f"coldbrew.cli.{module}.{function}",
        lambda args: seen.setdefault("n", torch.get_num_threads()) and 0,
    )
    argv = {
        "serve": ["serve", "--run", "r"],
        "export": ["export", "--run", "r", "--out", "o"],
        "blend": ["blend", "--runs", "a,b", "--out", "o"],
    }[command]
    main(argv)
    assert seen["n"] == 3


def test_the_python_apis_load_dataset_takes_the_choice_first(monkeypatch):
    import coldbrew

    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_applied", [None])
    monkeypatch.setattr(threads, "current_choice", lambda: threads.ThreadChoice(1, "busy"))
    try:
        torch.set_num_threads(2)
        dataset = coldbrew.load_dataset("synthetic:small", seed=1)
        assert torch.get_num_threads() == 1 and dataset.num_users > 0
    finally:
        torch.set_num_threads(before)
