"""What training did, epoch by epoch: TensorBoard scalars while a run trains, ``curves.png`` at
its end.

``curve_hooks`` are the hooks ``coldbrew.training.run.train`` takes for this (``train_with_curves``
passes them): after every epoch, TensorBoard event files in the run directory
(``tensorboard --logdir runs/`` shows every run below it):

* ``loss/<term>``: the epoch's mean of each loss term (``loss/loss`` is the total);
* ``val/<section>/<metric>``: every validation metric;
* ``speed/samples_per_second``: the epoch's own rate (its samples over its training seconds);
* ``memory/rss_mib`` (this process's resident set) and, on a GPU,
  ``memory/cuda_max_allocated_mib`` (``torch.cuda.max_memory_allocated``).

When the run ends (finished, stopped early or stopped by a non-finite loss), ``curves.png``
(matplotlib) draws the loss terms and the validation metrics by epoch from results.json's
history, with the best epoch marked. Under ``torchrun`` only rank 0 writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from coldbrew.training.hooks import RunHook

CURVES_PNG = "curves.png"
MIB = 2**20
_notes_given: set[str] = set()


def note_once(key: str, text: str, log: Callable[[str], None]) -> None:
    """Say ``text`` once per process (e.g. that tensorboard is not installed)."""
    if key not in _notes_given:
        _notes_given.add(key)
        log(f"note: {text}")


def tensorboard_available() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return True


class CurveWriter(RunHook):
    """Logs each epoch's scalars to TensorBoard in ``run_dir``.

    The writer opens at the first epoch's end, so a run refused before training leaves no
    file behind; a resumed run appends a new event file for its new epochs."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.writer = None

    def epoch_end(self, state) -> None:
        if not state.history:
            return
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(self.run_dir))
        for tag, value in epoch_scalars(state).items():
            self.writer.add_scalar(tag, value, global_step=state.history[-1]["epoch"])
        self.writer.flush()  # a killed run keeps the epochs it finished

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class CurvesPlot(RunHook):
    """``curves.png`` beside results.json, drawn from the results the run is about to write."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log

    def finish(self, results: dict, run_dir: Path) -> None:
        write_curves_png(run_dir, results, log=self.log)


def epoch_scalars(state) -> dict[str, float]:
    """The last epoch's scalars, by TensorBoard tag."""
    import torch

    from coldbrew.system.memory import rss_bytes

    entry = state.history[-1]
    scalars = {f"loss/{name}": value for name, value in entry["losses"].items()}
    for section, metrics in entry["val"].items():
        scalars.update({f"val/{section}/{name}": value for name, value in metrics.items()})
    previous = state.history[-2]["train_seconds"] if len(state.history) > 1 else 0.0
    epoch_seconds = entry["train_seconds"] - previous
    if state.epoch and epoch_seconds > 0:  # every epoch visits the same number of samples
        scalars["speed/samples_per_second"] = state.samples_seen / state.epoch / epoch_seconds
    rss = rss_bytes()
    if rss is not None:
        scalars["memory/rss_mib"] = rss / MIB
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        scalars["memory/cuda_max_allocated_mib"] = torch.cuda.max_memory_allocated() / MIB
    return {tag: float(value) for tag, value in scalars.items() if value is not None}


def curve_hooks(
    run_dir: Path | str,
    *,
    distributed=None,
    tensorboard: bool = True,
    plot: bool = True,
    log: Callable[[str], None] = print,
) -> list[RunHook]:
    """TensorBoard scalars every epoch (unless ``tensorboard`` is False, or tensorboard is not
    installed: said once) and ``curves.png`` at the end (unless ``plot`` is False, or matplotlib
    is not installed: said once), on rank 0 only: hooks for ``train``."""
    from coldbrew.training.distributed import Distributed

    distributed = distributed or Distributed.from_environment()
    if not distributed.is_main:
        return []
    hooks: list[RunHook] = [CurvesPlot(log)] if plot else []
    if tensorboard and tensorboard_available():
        hooks.append(CurveWriter(run_dir))
    elif tensorboard:
        note_once(
            "tensorboard",
            "tensorboard is not installed: no event files (pip install 'coldbrew[research]')",
            log,
        )
    return hooks


class CurveOptions(TypedDict, total=False):
    """What ``train_with_curves`` takes beyond the run itself, passed on unchanged to every seed
    by ``coldbrew.research.seeds.train_seeds``."""

    on_epoch_end: Callable | None
    tensorboard: bool
    plot: bool


def train_with_curves(
    config,
    run_dir: Path | str,
    *,
    resume: bool = False,
    dataset=None,
    on_epoch_end: Callable | None = None,
    distributed=None,
    tensorboard: bool = True,
    plot: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """``train`` (same arguments and result) with ``curve_hooks``."""
    from coldbrew.training.run import train

    hooks = curve_hooks(
        run_dir, distributed=distributed, tensorboard=tensorboard, plot=plot, log=log
    )
    return train(
        config,
        run_dir,
        resume=resume,
        dataset=dataset,
        hooks=hooks,
        on_epoch_end=on_epoch_end,
        distributed=distributed,
    )


def write_curves_png(
    run_dir: Path | str, results: dict | None = None, *, log: Callable[[str], None] = print
) -> Path | None:
    """``RUN_DIR/curves.png`` from ``results`` (default: ``RUN_DIR/results.json``); None without
    matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        note_once(
            "matplotlib",
            "matplotlib is not installed: no curves.png (pip install 'coldbrew[plot]')",
            log,
        )
        return None
    run_dir = Path(run_dir)
    if results is None:
        results = json.loads((run_dir / "results.json").read_text())
    monitor = (results.get("early_stop") or {}).get("monitor")
    return plot_curves(
        results.get("history") or [],
        run_dir / CURVES_PNG,
        monitor=monitor,
        best_epoch=results.get("best_epoch"),
        title=f"{results.get('model', '')} on {(results.get('dataset') or {}).get('name', '')}",
    )


def plotted_metrics(history: Sequence[Mapping[str, Any]], monitor: str | None) -> list[str]:
    """``section/metric`` names to draw: the monitored metric in every section, then the
    monitored section's other metrics at the same cut-off (all of them when there is none)."""
    sections = {
        section: list(values) for entry in history for section, values in entry["val"].items()
    }
    if not sections:
        return []
    section, _, metric = (monitor or "").partition("/")
    if section not in sections:
        section, metric = next(iter(sections)), ""
    _, at, cutoff = metric.partition("@")
    chosen = [f"{other}/{metric}" for other, names in sections.items() if metric in names]
    chosen += [
        f"{section}/{name}"
        for name in sections[section]
        if (not at or name.endswith(f"@{cutoff}")) and f"{section}/{name}" not in chosen
    ]
    return chosen


def plot_curves(
    history: Sequence[Mapping[str, Any]],
    path: Path | str,
    *,
    monitor: str | None = None,
    best_epoch: int | None = None,
    title: str = "",
) -> Path:
    """Two panels by epoch: loss terms, and validation metrics (``plotted_metrics``)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    epochs = [entry["epoch"] for entry in history]
    figure = Figure(figsize=(11, 4), layout="constrained")
    losses, metrics = figure.subplots(1, 2)
    terms = list(dict.fromkeys(name for entry in history for name in entry["losses"]))
    for name in terms:
        values = [entry["losses"].get(name, float("nan")) for entry in history]
        losses.plot(epochs, values, marker=".", label=name)
    for key in plotted_metrics(history, monitor):
        section, _, name = key.partition("/")
        values = [entry["val"].get(section, {}).get(name, float("nan")) for entry in history]
        style = "-" if key == monitor else "--"
        metrics.plot(epochs, values, style, marker=".", label=f"val {key}")
    for axis, label in ((losses, "training loss (epoch mean)"), (metrics, "validation")):
        if best_epoch:
            axis.axvline(best_epoch, color="grey", lw=0.8, ls=":", label=f"best epoch {best_epoch}")
        axis.set_xlabel("epoch")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_title(label)
        if axis.lines:
            axis.legend(fontsize=7)
    if title:
        figure.suptitle(title)
    path = Path(path)
    figure.savefig(path, dpi=100)
    return path
