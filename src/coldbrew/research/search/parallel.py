"""Independent pieces of work (a leaderboard's models) in several processes at once.

``run_in_processes(work, units, jobs, threads=..., log=...)`` starts ``jobs`` processes with the
"spawn" method (a forked process would inherit torch's thread pools and locks mid-use), each
with ``threads`` torch threads, set before its first torch work, and its own cache: a process
keeps one ``coldbrew.research.search.study.DataCache`` for all its units, so it loads the dataset and
text vectors once per seed. The units are handed out in the order given, each to the first
process that is free. ``work(unit, cache, log)`` must be a module-level function (the new
process imports it by name), and each unit must pickle (a board's unit is a
``coldbrew.research.boards.model_runs.RunUnit``); what ``work`` prints, warnings included, comes
back to ``log`` line by line as ``[name] line``; progress bars are off there (its output is no
terminal).

Errors: the first unit that raises stops the hand-out; the units already running finish (what
they write is whole, as in one process) and the error is raised again here, the same class and
message (``COLDBREW_DEBUG=1`` shows the worker's traceback as its cause). A process that dies
(killed, out of memory) is an error naming its unit. Ctrl-C reaches every process (one
terminal group); an interrupt of this process alone, or a SIGTERM, is passed on to them, and
each is ended if it has not stopped within ``STOP_SECONDS``; a process whose parent was killed
stops on its own (``watch_parent``). Every unit leaves what an interrupted run in one process
would: a finished unit's results, an unfinished one resumable.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from coldbrew.errors import ColdbrewError

# a leaderboard's models by a seed's seconds on ml-1m-coldstart (BENCHMARKS.md's zoo tables),
# longest first, so the last to start is a short one; a model not named goes between the groups
LONGEST_FIRST = ("lm", "clcrec", "heater", "dropoutnet", "aldi", "gar", "deepmusic")
SHORTEST_LAST = ("ridge", "knn", "marec", "popularity", "bpr")
STOP_SECONDS = 20.0  # after an interrupt, how long a process may take to stop on its own
WAIT_SECONDS = 1.0  # how often the hand-out loop looks for a process that died
IDLE_SECONDS = 10.0  # how long an idle process that was told to end may take to end
INTERRUPT_GRACE_SECONDS = 1.0  # after Ctrl-C, before the processes still running are interrupted
PARENT_SECONDS = 1.0  # how often a process looks whether the process that started it is there


def parse_jobs(text: str | int | None) -> int | str:
    """``--jobs``: a positive number of processes, or ``auto``."""
    value = str(text if text is not None else 1).strip().lower()
    if value == "auto":
        return value
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise ColdbrewError(
            f"--jobs must be a positive number of processes or auto (one per free core), "
            f"not {text!r}"
        )
    return jobs


def resolve_jobs(jobs: int | str, units: int) -> int:
    """The processes to start: ``auto`` is the free cores (``coldbrew.system.threads``), and
    never more than there are units."""
    from coldbrew.system.threads import free_cores

    wanted = free_cores().threads if jobs == "auto" else int(jobs)
    return max(1, min(wanted, units))


def longest_first(names: Sequence[str]) -> list[str]:
    """``names`` in ``LONGEST_FIRST`` order, the unknown ones next, ``SHORTEST_LAST`` last; a
    unit of one model's part (``"clcrec/fold-2"``) goes by its model."""
    known = {name: rank for rank, name in enumerate(LONGEST_FIRST)}
    last = {name: len(known) + 1 + rank for rank, name in enumerate(SHORTEST_LAST)}

    def rank(name: str) -> int:
        model = name.split("/")[0]
        return known.get(model, last.get(model, len(known)))

    return sorted(names, key=rank)


def train_side_by_side(
    work: Callable, units: dict[str, Any], jobs: int | str, *, log: Callable[[str], None]
) -> dict[str, Any]:
    """``{name: work(unit, cache, log)}`` for every unit, in as many processes as ``jobs``
    allows (longest first, each torch thread count from ``threads_per_process``); ``{}`` when
    that is one process or fewer than two units: then the caller works through them itself."""
    from coldbrew.system.threads import threads_per_process, usable_cores

    names = longest_first(list(units))
    count = resolve_jobs(jobs, len(names))
    if count < 2:
        return {}
    threads = threads_per_process(count)
    log(
        f"training {', '.join(names)} in {count} processes at once, {threads.threads} torch "
        f"thread(s) each ({threads.reason})"
    )
    warning = oversubscribed(count, threads.threads, usable_cores())
    if warning:
        log(warning)
    pairs = [(name, units[name]) for name in names]
    return run_in_processes(work, pairs, count, threads=threads.threads, log=log)


def oversubscribed(processes: int, threads: int, cores: int) -> str | None:
    """A warning when ``processes`` × ``threads`` torch threads exceed ``cores`` (a
    ``COLDBREW_THREADS`` set for one process, kept by each), else None."""
    if processes * threads <= cores:
        return None
    share = max(1, cores // processes)
    return (
        f"warning: {processes} processes x {threads} threads on {cores} usable cores: each "
        f"step waits for threads that wait for a core (docs/speed.md, Threads); "
        f"COLDBREW_THREADS={share} gives each process its share"
    )


class WorkerTraceback(Exception):
    """The traceback of an error raised in a worker process (the cause of the one raised here)."""


class LineSender(io.TextIOBase):
    """A worker's stdout and stderr: each whole line goes to the parent as an event."""

    def __init__(self, events, index: int):
        self.events, self.index, self.name, self.partial = events, index, "", ""

    def write(self, text: str) -> int:
        self.partial += text.replace("\r", "\n")
        *lines, self.partial = self.partial.split("\n")
        for line in lines:
            if line.strip():
                self.events.put(("line", self.index, self.name, line))
        return len(text)

    def isatty(self) -> bool:  # no progress bars in a worker: its lines share one terminal
        return False


def sendable(error: BaseException) -> tuple[BaseException, str]:
    """``error`` if it pickles (a ColdbrewError does), else a RuntimeError with its message; and
    its traceback's text (a cause does not pickle: the parent attaches it)."""
    import traceback

    text = "".join(traceback.format_exception(error))
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        error = RuntimeError(f"{type(error).__name__}: {error}")
    return error.with_traceback(None), text


def worker(index: int, inbox, events, threads: int, work: Callable) -> None:
    """One process: ``threads`` torch threads, one cache, units until ``None`` arrives."""
    import sys
    import warnings

    from coldbrew.system.threads import THREADS_VARIABLE, apply_threads

    # before torch starts its pools; nested apply_threads (a library user's) keeps the count
    os.environ[THREADS_VARIABLE] = os.environ["OMP_NUM_THREADS"] = str(threads)
    watch_parent(os.getppid())
    try:
        from coldbrew.research.search.study import DataCache

        apply_threads()  # every entry point's one choice: here COLDBREW_THREADS, the share
        cache, sender = DataCache(), LineSender(events, index)
        sys.stdout = sys.stderr = sender
        warnings.showwarning = lambda message, *_, **__: sender.write(f"warning: {message}\n")
        while (item := inbox.get()) is not None:
            name, unit = item
            sender.name = name
            try:
                result = work(unit, cache, lambda line: sender.write(f"{line}\n"))
            except Exception as error:
                events.put(("error", index, name, sendable(error)))
            else:
                events.put(("done", index, name, result))
    except KeyboardInterrupt:  # Ctrl-C reaches every process; the parent reports it
        return


def watch_parent(parent: int) -> None:
    """A worker whose parent is gone (killed with SIGKILL, say) stops as at Ctrl-C: a thread
    looks every ``PARENT_SECONDS`` and, once this process has another parent, interrupts it,
    and ends it if it lingers ``STOP_SECONDS``. Its unit leaves what an interrupted run leaves,
    and no orphan goes on computing what nobody reads."""
    import signal
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_SECONDS)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(STOP_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="coldbrew-parent-watch", daemon=True).start()


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within it (in the main thread, where SIGTERM has its default action), SIGTERM raises
    ``SystemExit(143)`` here instead of ending this process at once, so the processes it
    started are stopped first (``run_in_processes``) and the exit status is still 128 + 15."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _terminated(signum, frame) -> None:
    raise SystemExit(128 + signum)


def run_in_processes(
    work: Callable[[Any, Any, Callable[[str], None]], Any],
    units: Sequence[tuple[str, Any]],
    jobs: int,
    *,
    threads: int,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """``{name: work(unit, cache, log)}`` for every ``(name, unit)``, ``jobs`` at a time."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    inboxes = [context.SimpleQueue() for _ in range(jobs)]
    processes = [
        context.Process(target=worker, args=(index, inboxes[index], events, threads, work))
        for index in range(jobs)
    ]
    with sigterm_raises():
        for process in processes:
            process.start()
        try:
            results, failure = hand_out(units, inboxes, processes, events, log)
        except BaseException:  # an interrupt, SIGTERM, a process that died: the others stop now
            stop(processes, inboxes, grace=INTERRUPT_GRACE_SECONDS)
            raise
    stop(processes, inboxes, grace=IDLE_SECONDS)  # each is idle: it ends on its None
    if failure is not None:
        raise failure
    return results


def hand_out(units, inboxes, processes, events, log) -> tuple[dict[str, Any], Any]:
    """Each unit to the next free process: ``{name: result}`` and the first error a unit
    raised (None if none); after an error no unit starts, those running finish."""
    from queue import Empty

    waiting, free = deque(units), deque(range(len(processes)))
    running: dict[int, str] = {}
    results: dict[str, Any] = {}
    failure: BaseException | None = None
    while running or (waiting and failure is None):
        while free and waiting and failure is None:
            index, (name, unit) = free.popleft(), waiting.popleft()
            inboxes[index].put((name, unit))
            running[index] = name
        try:
            kind, index, name, payload = events.get(timeout=WAIT_SECONDS)
        except Empty:
            check_alive(processes, running)
            continue
        if kind == "line":
            log(f"[{name}] {payload}")
            continue
        running.pop(index)
        free.append(index)
        if kind == "done":
            results[name] = payload
        elif failure is None:
            failure, text = payload
            failure.__cause__ = WorkerTraceback(f"in the worker process:\n{text}")
            if running:
                names = ", ".join(running.values())
                log(f"[{name}] failed: {failure}; waiting for {names} to finish")
    return results, failure


def check_alive(processes, running: dict[int, str]) -> None:
    for index, name in running.items():
        code = processes[index].exitcode
        if code is not None:
            raise ColdbrewError(
                f"the process training {name} ended without a result (exit code {code}: "
                "killed, or out of memory?); running the same command again continues from "
                "what finished"
            )


def stop(processes, inboxes, *, grace: float) -> None:
    """Each process's last unit is ``None``: an idle one ends now. One still running after
    ``grace`` seconds is interrupted (as Ctrl-C would), and ended if it lingers."""
    import signal
    import time

    for process, inbox in zip(processes, inboxes, strict=True):
        if process.is_alive():
            inbox.put(None)
    for wait, interrupt in ((grace, True), (STOP_SECONDS, False)):
        deadline = time.monotonic() + wait
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in processes:
            if interrupt and process.is_alive():
                os.kill(process.pid, signal.SIGINT)
    for process in processes:
        if process.is_alive():
            process.terminate()
            process.join()
