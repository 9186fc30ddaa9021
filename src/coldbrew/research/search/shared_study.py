"""Where a search's Optuna study lives, and how workers share its trials.

The default is ``STUDY/study.db``, a SQLite file one process holds (the study folder's lock).
With ``--storage`` the study lives in a database (``postgresql://...``, ``mysql://...``, any URL
SQLAlchemy reads) or an Optuna journal file (``journal:PATH``) that any number of workers, on any
number of machines, open with the same command:

- ``trials`` is the study's total, not each worker's: before a trial starts, the trials before
  it (finished, running, waiting) are counted, and a trial past the total is given up at once
  (a *surplus* trial, left out of every table).
- In a database each running trial sends a heartbeat (Optuna's ``heartbeat_interval``); one
  silent for twice that is marked failed (*interrupted*, not counted) and its settings queued
  again (Optuna's retry callback, at most ``MAX_RETRIES`` times). A worker with no trial left to
  start waits for the others' running trials, to take over one whose worker died, then writes
  the table. A journal file has no heartbeat: a trial whose worker died stays running and
  counts, and a worker stops once the running and finished trials make the total.
"""

from __future__ import annotations

import random
import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from coldbrew.errors import ColdbrewError

MAX_RETRIES = 3  # times an interrupted trial's settings are tried again
INTERRUPTED = "interrupted"  # study attribute: trials cut short (a list, or one key per trial)
SURPLUS = "surplus"  # trial attribute: started past the study's total, given up at once
STORAGE_FILE = "storage.json"  # a shared study's folder: which study its trials belong to
JOURNAL = "journal:"
FOLDER_WAIT = 10.0  # seconds a worker waits for the study folder's lock before giving up


def retry_callback():
    """Optuna's ``RetryHeartbeatStaleTrialCallback`` (``RetryFailedTrialCallback`` before
    Optuna 4.9), without its experimental-feature warning."""
    import optuna

    callback = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)  # the deprecated name, on older Optuna
        return (callback or optuna.storages.RetryFailedTrialCallback)(max_retry=MAX_RETRIES)


def mark_interrupted(study, number: int) -> None:
    """Trial ``number`` was cut short: it does not count towards the study's total. One key
    per trial, so workers marking trials at the same moment never overwrite each other."""
    study.set_user_attr(f"{INTERRUPTED}:{number}", True)


def interrupted_trials(study) -> set[int]:
    """Trials cut short: marked (a list in studies before shared storage, or a key per trial),
    or the originals of a retried trial (Optuna's ``retry_history``)."""
    attrs = study.user_attrs
    numbers = set(attrs.get(INTERRUPTED, []))
    numbers |= {int(key.split(":")[1]) for key in attrs if key.startswith(f"{INTERRUPTED}:")}
    for trial in study.get_trials(deepcopy=False):
        numbers.update(trial.system_attrs.get("retry_history", []))
    return numbers


def display_url(storage: str) -> str:
    """``storage`` without its password, for logs and the study folder."""
    return re.sub(r"(://[^:/@]*):[^/]*@", r"\1:***@", storage)


def open_storage(storage: str, heartbeat: int, log: Callable[[str], None]):
    """The Optuna storage ``storage`` names: ``journal:PATH`` or a database URL; in a database,
    heartbeats every ``heartbeat`` seconds and stale trials tried again."""
    import inspect

    import optuna

    if storage.startswith(JOURNAL):
        return journal_storage(Path(storage.removeprefix(JOURNAL)))
    if "://" not in storage:
        raise ColdbrewError(
            f"--storage {storage!r} is neither a database URL nor journal:PATH; "
            "e.g. postgresql://user@host/db or journal:/shared/study.log"
        )
    if heartbeat < 1:
        raise ColdbrewError(f"--heartbeat must be at least 1 second, not {heartbeat}")
    import sqlalchemy

    from coldbrew.research.claims.database import connect, database_url

    connect(storage).dispose()  # a wrong URL or a server down: one line saying which

    def retry_stale(study, trial) -> None:
        mark_interrupted(study, trial.number)
        retry_callback()(study, trial)
        log(f"trial {trial.number}'s worker stopped sending heartbeats: its settings queued again")

    parameters = inspect.signature(optuna.storages.RDBStorage).parameters
    callback = next(
        name
        for name in ("heartbeat_stale_trial_callback", "failed_trial_callback")
        if name in parameters
    )
    for attempt in range(5):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    database_url(storage),
                    engine_kwargs={"pool_pre_ping": True},
                    heartbeat_interval=heartbeat,
                    **{callback: retry_stale},
                )
        except sqlalchemy.exc.DatabaseError:  # workers creating Optuna's tables at one moment
            if attempt == 4:
                raise
            time.sleep(0.5 + random.random())


def journal_storage(path: Path):
    """Optuna's journal file at ``path`` (``JournalFileBackend``; ``JournalFileStorage`` before
    Optuna 4.0), its folder created."""
    import optuna

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ColdbrewError(f"cannot create the journal's folder {path.parent}: {error}") from None
    journal = optuna.storages.journal
    backend = getattr(journal, "JournalFileBackend", None) or optuna.storages.JournalFileStorage
    return optuna.storages.JournalStorage(backend(str(path)))


def beats(storage) -> bool:
    """Whether trials in ``storage`` send heartbeats (so a dead worker's trial is noticed)."""
    from optuna.storages._heartbeat import is_heartbeat_enabled

    return not isinstance(storage, str) and is_heartbeat_enabled(storage)


def check_shared_folder(out: Path, storage: str, study_name: str, local_db: str) -> None:
    """``out`` is this shared study's folder (``storage.json`` says which study), a new one
    (then marked), or refused: a local study's folder or another study's. Checked and marked
    under the folder's lock (``RunLock``), which a local search holds while it runs and a
    worker only for this check: workers on one machine share the folder, and trial folders
    are numbered by the study, so none is written by two."""
    from coldbrew.training.checkpoint import RunLock

    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out, wait=FOLDER_WAIT):  # another worker checking it, or a local search running
        mark_shared_folder(out, storage, study_name, local_db)


def mark_shared_folder(out: Path, storage: str, study_name: str, local_db: str) -> None:
    import json

    from coldbrew.training.run import write_json

    mark = {"storage": display_url(storage), "study": study_name}
    if (out / local_db).exists():
        raise ColdbrewError(
            f"{out} holds a local study ({local_db}): leave out --storage to continue it, "
            "or choose another --out"
        )
    saved = out / STORAGE_FILE
    if saved.exists():
        found = json.loads(saved.read_text())
        if found != mark:
            raise ColdbrewError(
                f"{out} holds trials of the study {found['study']!r} in {found['storage']}; "
                "give that --storage and --study-name, or choose another --out"
            )
        return
    if any(path.name != ".lock" for path in out.iterdir()):
        raise ColdbrewError(f"{out} is not empty and holds no study; choose another --out")
    write_json(mark, saved)


def create_or_load(name: str, storage, direction: str, pruner) -> tuple[object, bool]:
    """The study ``name`` in ``storage`` and whether this call created it (exactly one of
    several workers starting together does)."""
    import optuna

    try:
        study = optuna.create_study(
            study_name=name, storage=storage, direction=direction, pruner=pruner
        )
        return study, True
    except optuna.exceptions.DuplicatedStudyError:
        return optuna.load_study(study_name=name, storage=storage, pruner=pruner), False


def saved_settings(study, wait: float) -> dict | None:
    """The settings the study's creator saved, waiting up to ``wait`` seconds for them (a
    worker that started with the creator may load the study before they are written)."""
    deadline = time.monotonic() + wait
    while (saved := study.user_attrs.get("settings")) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return saved


def counted(trial, interrupted: set[int]) -> bool:
    """Whether ``trial`` counts towards the study's total: finished, running or waiting, and
    neither interrupted nor surplus."""
    from optuna.trial import TrialState

    states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    states += (TrialState.RUNNING, TrialState.WAITING)
    return (
        trial.state in states
        and trial.number not in interrupted
        and SURPLUS not in trial.user_attrs
    )


def guard_total(objective: Callable, trials: int) -> Callable:
    """``objective``, which first checks that the trials before it leave room for it in the
    study's total; a trial past the total is marked surplus and pruned before it draws
    anything."""
    import optuna

    def guarded(trial) -> float:
        study = trial.study
        interrupted = interrupted_trials(study)
        before = study.get_trials(deepcopy=False)[: trial.number]
        if sum(counted(other, interrupted) for other in before) >= trials:
            trial.set_user_attr(SURPLUS, True)
            raise optuna.TrialPruned("the study has its trials: given up")
        return objective(trial)

    return guarded


def run_trials(study, objective, trials: int, *, timeout, wait: bool, poll: float, **optimize):
    """Start trials until the study holds ``trials`` (counted as ``counted``), or ``timeout``
    seconds have passed; with ``wait``, then wait for other workers' running trials to end
    (those whose worker died are tried again here). ``optimize``: ``study.optimize``'s
    ``catch`` and ``callbacks``."""
    import optuna
    from optuna.trial import TrialState

    started = time.monotonic()
    guarded = guard_total(objective, trials)
    while True:
        interrupted = interrupted_trials(study)
        all_trials = study.get_trials(deepcopy=False)
        finished = [t for t in all_trials if counted(t, interrupted) and t.state.is_finished()]
        running = [t for t in all_trials if t.state == TrialState.RUNNING]
        if len(finished) >= trials:
            return
        if len(finished) + len(running) >= trials:  # the rest run elsewhere
            if not wait:
                return
            time.sleep(poll)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(study)
            continue
        if timeout is not None and time.monotonic() - started > timeout:
            return
        study.optimize(guarded, n_trials=1, **optimize)
