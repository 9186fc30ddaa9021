"""What a kind of run adds to ``coldbrew.training.run.train`` without copying it.

A run's extras (TensorBoard scalars and ``curves.png`` for research runs, the baselines of a
forecast) are ``RunHook`` objects handed to ``train``: ``epoch_end(state)`` after each epoch's
checkpoint, ``finish(results, run_dir)`` on rank 0 once the best checkpoint is evaluated and
before ``results.json`` is written (a hook may add a section to ``results`` or write a file
beside it), and ``close()`` when the run ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class RunHook:
    """Override what you need; every method does nothing by default."""

    def epoch_end(self, state: Any) -> None:
        """After an epoch, its checkpoints written (``state``: the trainer's ``TrainState``)."""

    def finish(self, results: dict, run_dir: Path) -> None:
        """Rank 0, before ``results.json`` is written: add to ``results`` or write beside it."""

    def close(self) -> None:
        """When the run ends (finished, stopped, or failed)."""


class EpochCallback(RunHook):
    """A plain ``callable(state)`` run after every epoch (tests, search pruning)."""

    def __init__(self, callback: Callable[[Any], None]):
        self.callback = callback

    def epoch_end(self, state: Any) -> None:
        self.callback(state)


def as_hooks(hooks: Sequence[RunHook], on_epoch_end: Callable | None) -> list[RunHook]:
    return [*hooks, *([EpochCallback(on_epoch_end)] if on_epoch_end is not None else [])]
