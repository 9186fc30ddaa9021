"""When training stops: the rule the trainer applies after every evaluation, and its replay.

Four knobs (``TrainConfig``: ``patience``, ``min_gain``, ``time_budget``, ``min_epochs``):

* the **best epoch** is the best monitored value seen, as always (any strict improvement);
* **patience** counts evaluations since the last *significant* gain: a value that beats the
  reference (the value that last reset the count) by at least ``min_gain`` of it, relatively
  (``min_gain`` 0.01: 1 %; 0: any strict improvement, the rule before these options). A small
  gain still makes a new best epoch but does not buy more epochs;
* **time budget**: the run stops after the evaluation that brings its training and evaluation
  seconds (``TrainState.train_seconds + eval_seconds``, data loading not included) to the
  budget or past it;
* **minimum epochs**: patience cannot stop a run before epoch ``min_epochs`` (the run's
  ``--epochs`` still ends it, and the time budget still stops it). Fold runs get a floor by
  default (``TrainConfig.resolved_min_epochs``): a fold that stops while its curve is still
  low would otherwise drag the mean fold curve, and its own fold score, down with it.

``replay`` applies the same rule to a finished run's history (``results.json``: per epoch the
validation metrics and the cumulative seconds), so a rule can be judged offline on runs that
trained past it (``benchmarks/speed/replay_stopping.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StopRule:
    patience: int
    min_gain: float = 0.0
    time_budget: float | None = None  # seconds of training + evaluation
    min_epochs: int = 0  # patience cannot stop a run before this epoch


@dataclass
class StopCount:
    """What the rule remembers between evaluations."""

    best: float | None = None  # the best value seen (None: none finite yet)
    best_epoch: int = 0
    reference: float | None = None  # the value that last reset the count
    without_gain: int = 0  # evaluations since then


def beats(value: float, best: float | None, mode: str, relative: float = 0.0) -> bool:
    """``value`` is finite and better than ``best`` by more than ``relative`` of ``best``'s
    size (``best`` None: any finite value beats it). A NaN never does."""
    if not math.isfinite(value):
        return False
    if best is None:
        return True
    margin = relative * abs(best) if math.isfinite(best) else 0.0
    return value > best + margin if mode == "max" else value < best - margin


def update(count: StopCount, value: float, epoch: int, rule: StopRule, mode: str) -> bool:
    """Record epoch ``epoch``'s monitored ``value``; returns whether it is a new best epoch."""
    improved = beats(value, count.best, mode)
    if improved:
        count.best, count.best_epoch = value, epoch
    if beats(value, count.reference, mode, rule.min_gain):
        count.reference, count.without_gain = value, 0
    else:
        count.without_gain += 1
    return improved


def stop_reason(count: StopCount, seconds: float, rule: StopRule, epoch: int) -> str | None:
    """``"early_stop"`` (patience spent, ``epoch`` at least ``min_epochs``), ``"time_budget"``
    or None (train on). ``epoch``: the epochs trained so far."""
    if count.without_gain >= rule.patience and epoch >= rule.min_epochs:
        return "early_stop"
    if rule.time_budget is not None and seconds >= rule.time_budget:
        return "time_budget"
    return None


def stop_line(reason: str, rule: StopRule, count: StopCount, monitor: str, epoch: int) -> str:
    """The log line of a run that ``reason`` stopped after ``epoch``."""
    if reason == "time_budget":
        short = (
            f", before its minimum of {rule.min_epochs} epochs" if epoch < rule.min_epochs else ""
        )
        return (
            f"time budget of {rule.time_budget:g} s spent after epoch {epoch}{short}; "
            f"best epoch {count.best_epoch}"
        )
    gain = f" by {rule.min_gain:.1%}" if rule.min_gain else ""
    held = f", held to epoch {rule.min_epochs} at least" if rule.min_epochs else ""
    return (
        f"early stop: {monitor} did not improve{gain} for {count.without_gain} evaluations "
        f"(patience {rule.patience}{held}); best epoch {count.best_epoch}"
    )


@dataclass(frozen=True)
class Replayed:
    best_epoch: int  # the epoch the rule selects (0: none finite)
    best_value: float | None
    stop_epoch: int  # the last epoch trained
    seconds: float  # training + evaluation seconds up to the stop
    reason: str  # early_stop, time_budget, or end (the history ran out first)


def replay(
    values: Sequence[float],
    seconds: Sequence[float],
    rule: StopRule,
    mode: str = "max",
    start: float | None = None,
) -> Replayed:
    """``rule`` on a history: ``values[i]`` the monitored value after epoch ``i + 1``,
    ``seconds[i]`` the cumulative training + evaluation seconds then. ``start``: the
    monitor's value before any evaluation (None: the worst)."""
    if len(values) != len(seconds) or not values:
        raise ValueError("replay needs as many values as seconds, at least one")
    count = StopCount(best=start, reference=start)
    for epoch, (value, elapsed) in enumerate(zip(values, seconds, strict=True), start=1):
        update(count, float(value), epoch, rule, mode)
        reason = stop_reason(count, elapsed, rule, epoch)
        if reason is not None:
            return Replayed(count.best_epoch, count.best, epoch, elapsed, reason)
    return Replayed(count.best_epoch, count.best, len(values), seconds[-1], "end")
