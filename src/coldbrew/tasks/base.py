"""The task contract: what a problem owns, so the one training loop owns nothing problem-specific.

A task knows

* how an epoch's batches are made: ``num_samples()`` samples, visited in ``epoch_order`` (a
  permutation on the device), cut into index slices that ``make_batch`` turns into the model's
  input (the recommendation task draws negatives there; the forecasting task gathers windows).
  ``epoch_order`` draws from the generator it is given (with several processes, one every
  process seeds alike, so all agree on the order and each takes its slice); ``make_batch``
  draws from the global torch RNG, each process's own stream;
* how a split is evaluated: ``evaluate(model, split)`` returns ``{section: {metric: value}}``
  (``{"cold": {"recall@20": ...}}``, ``{"all": {"mae": ...}}``);
* which metric is monitored for early stopping and best-checkpoint selection, and its direction.

The trainer calls ``model(batch)`` for the loss, and nothing else of the model.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import torch

from coldbrew.errors import ColdbrewError

Metrics = dict[str, dict[str, float]]


@dataclass(frozen=True)
class Monitor:
    """The monitored metric, ``"section/metric"`` (``"cold/recall@20"``), and its direction."""

    section: str
    metric: str
    mode: str = "max"  # "max" or "min"
    start: float | None = None  # the best before any evaluation (None: the worst value)
    shown: tuple[str, ...] = ()  # further metrics of the section the epoch line shows

    def __post_init__(self) -> None:
        if self.mode not in ("max", "min"):
            raise ColdbrewError(f"monitor mode must be 'max' or 'min', not {self.mode!r}")

    @property
    def key(self) -> str:
        return f"{self.section}/{self.metric}"

    @property
    def worst(self) -> float:
        """The best before any evaluation: ``start``, else -inf (max) or +inf (min)."""
        if self.start is not None:
            return self.start
        return -math.inf if self.mode == "max" else math.inf

    def value(self, metrics: Metrics) -> float:
        """The monitored value in ``metrics``; an error when it was not measured."""
        try:
            return float(metrics[self.section][self.metric])
        except KeyError:
            raise ColdbrewError(f"monitored metric {self.key} was not measured") from None

    def improved(self, value: float, best: float) -> bool:
        """Strictly better (a NaN never is)."""
        return value > best if self.mode == "max" else value < best


class Task(ABC):
    """Batches, evaluation and the monitored metric of one problem on one device."""

    monitor: Monitor
    device: torch.device

    @abstractmethod
    def num_samples(self) -> int:
        """Samples in one epoch (positives for recommendation, windows for forecasting)."""

    def epoch_order(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """The order of an epoch's samples: a permutation on the task's device, drawn from
        ``generator`` (None: the global torch RNG)."""
        return torch.randperm(self.num_samples(), device=self.device, generator=generator)

    def check_trainable(self) -> None:
        """Refuse, before anything is trained, data this task cannot train on (one line: the
        cause and the fix); nothing by default."""
        return None

    @abstractmethod
    def make_batch(self, index: torch.Tensor) -> Any:
        """The model's input for samples ``index`` (int64, on the device); random draws
        (negatives) come from the global torch RNG, the trainer's per-process stream."""

    @abstractmethod
    def evaluate(self, model: torch.nn.Module, split: str, *, progress: bool = False) -> Metrics:
        """Metrics of ``model`` on ``split`` (``"val"`` or ``"test"``), ``{section: {metric: v}}``."""

    @abstractmethod
    def splits(self) -> tuple[str, ...]:
        """The evaluation splits this task's data has (``("val", "test")``, or fewer)."""

    def evaluate_splits(
        self, model: torch.nn.Module, splits: tuple[str, ...], *, progress: bool = False
    ) -> dict[str, Metrics]:
        """``{split: metrics}``; a task that can score several splits in one pass overrides it."""
        return {split: self.evaluate(model, split, progress=progress) for split in splits}
