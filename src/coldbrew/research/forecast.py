"""``coldbrew forecast``: train the LSTM through the engine, score the baselines on the same
windows, write one table, and a PNG of forecasts against the truth.

``forecast(config, out, windows=[7, 14, 30])`` trains one run per window (``OUT/window-W``;
``OUT`` itself for a single window); each run directory is a training run (config.yaml,
best.pt, results.json ...) whose ``results.json`` also holds ``"baselines": {split: {name:
metrics}}`` for the validation and test windows, and ``forecasts.png`` (with matplotlib).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError
from coldbrew.training.hooks import RunHook

TABLE_METRICS = ("mae", "rmse", "mase", "smape")


def forecast(
    config: TrainConfig,
    out: str | Path,
    *,
    windows: Sequence[int] | None = None,
    plot: bool = True,
    log=print,
) -> dict:
    """Train ``config`` (model ``lstm``) for each window; ``{window: results}`` (with baselines)."""
    from coldbrew.training.run import train
    from coldbrew.training.run_dir import check_new_run_dir

    if config.model != "lstm":
        raise ColdbrewError(f"forecast trains the lstm model, not {config.model!r}")
    windows = list(windows) if windows else [config.model_options.window]
    if len(set(windows)) != len(windows):
        raise ColdbrewError(f"--window lists a window twice: {windows}")
    out = Path(out)
    runs = {window: out if len(windows) == 1 else out / f"window-{window}" for window in windows}
    settings = [make_config(config.to_dict(), {"window": window}) for window in windows]
    for run_dir in runs.values():
        check_new_run_dir(run_dir)
    summary = {}
    for window, window_config in zip(windows, settings, strict=True):
        log(f"window {window}: training into {runs[window]}")
        hook = Baselines(window_config, plot=plot)
        summary[window] = train(window_config, runs[window], hooks=[hook])
    return summary


class Baselines(RunHook):
    """Adds ``baselines`` (each baseline's val and test metrics on the LSTM's windows) to the
    run's results before they are written, and ``forecasts.png`` beside them."""

    def __init__(self, config: TrainConfig, *, plot: bool):
        self.config, self.plot = config, plot

    def finish(self, results: dict, run_dir: Path) -> None:
        results["baselines"] = score_baselines(self.config, run_dir, plot=self.plot)


def score_baselines(config: TrainConfig, run_dir: Path, *, plot: bool) -> dict:
    """Baselines' metrics on val and test; ``forecasts.png`` of the best checkpoint beside them."""
    from coldbrew.registry import build_model
    from coldbrew.tasks import build_task, load_data
    from coldbrew.tasks.forecasting import baseline_forecasts, evaluate_baselines
    from coldbrew.training.checkpoint import BEST, load_checkpoint

    series = load_data("forecasting", config)
    task = build_task("forecasting", series, config, "cpu")
    scores = {split: evaluate_baselines(task, split) for split in task.splits()}
    if plot and (run_dir / BEST).exists():
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return scores
        from coldbrew.research.forecast_plot import plot_forecasts

        model = build_model(config.model, series, config)
        model.load_state_dict(load_checkpoint(run_dir / BEST)["model"])
        plot_forecasts(
            run_dir / "forecasts.png",
            task,
            {
                "lstm": task.forecasts(model, "test"),
                "seasonal_naive": baseline_forecasts(task, "seasonal_naive", "test"),
            },
        )
    return scores


def forecast_rows(summary: dict, split: str = "test") -> list[dict]:
    """One row per (window, method): the LSTM's best-checkpoint metrics and each baseline's."""
    rows = []
    for window, results in summary.items():
        methods = {"lstm": results["metrics"].get(split, {})}
        methods.update(results["baselines"].get(split, {}))
        for name, metrics in methods.items():
            overall = metrics.get("all", {})
            rows.append(
                {"window": window, "method": name, **{m: overall.get(m) for m in TABLE_METRICS}}
            )
    return rows


def forecast_table(summary: dict, split: str = "test") -> str:
    """The rows as an aligned text table (lower is better in every column)."""
    lines = [
        f"{split}: {'window':>6}  {'method':16s}" + "".join(f"{m:>10s}" for m in TABLE_METRICS)
    ]
    for row in forecast_rows(summary, split):
        cells = "".join(
            f"{row[m]:10.4f}" if row[m] is not None else f"{'n/a':>10s}" for m in TABLE_METRICS
        )
        lines.append(f"{'':6s}{row['window']:6d}  {row['method']:16s}{cells}")
    return "\n".join(lines)
