"""LSTM forecaster vs baselines on ML-100K daily series, and its training throughput on the CPU.

1. Accuracy, per series kind (``item``, ``genre``; window 30, horizon 7, 28 validation and 28
   test days): the baselines' test metrics (naive, seasonal naive, moving average 7, window
   median, and the kind's statsforecast model when the ``[stats]`` extra is installed), an
   all-zero forecast as a reference (80 % of item-days are zero), and the LSTM's test
   metrics over ``--seeds`` seeds, mean and std. The LSTM is trained by a plain Adam loop in
   *rounds* of ``--round-steps`` random batches (at most one epoch's worth), validated after each round (all/mae), stopped
   after ``--patience`` rounds without improvement, and tested at its best round.
   THIS LOOP IS A HARNESS until the training engine lands: no precision, compile or schedule.
2. Throughput: training samples/s (window gather + forward + backward + Adam step) on the
   item series at batch 128 with hidden 64 x 2 layers (the seed's LSTM) and at batch 512 with
   hidden 256 x 3 layers (its guide's proposal), measured side by side in this process,
   ``--repeats`` alternating runs of ``--speed-steps`` steps after 3 warm-up steps; medians.

    .venv/bin/python benchmarks/bench_forecast.py [--seeds 3] [--threads 1] [--plot out.png]

Prints JSON lines. Needs ../shared/data/ml-100k (or ``$COLDBREW_DATA``). The load averages are
recorded with each line: the machine is shared and every number moves with them.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_data import dataset_path  # noqa: E402

from coldbrew.data.forecast_config import ForecastConfig
from coldbrew.models.lstm import LSTMForecaster  # noqa: E402
from coldbrew.models.lstm_config import lstm_preset  # noqa: E402
from coldbrew.tasks.forecasting import (  # noqa: E402
    ForecastingTask,
    baseline_forecasts,
    evaluate_baselines,
)

REPORTED = ("mae", "rmse", "mase", "smape")


def harness_train(task: ForecastingTask, seed: int, args: argparse.Namespace) -> tuple:
    """Plain-loop training with early stopping on val all/mae; the best model and its record."""
    torch.manual_seed(seed)
    model = LSTMForecaster.from_config(lstm_preset("seed"), task.config.horizon)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(seed)
    best, best_state, best_round, stale, rounds = float("inf"), None, 0, 0, 0
    round_steps = min(args.round_steps, -(-task.num_samples() // args.batch_size))  # <= 1 epoch
    started = time.perf_counter()
    while rounds < args.max_rounds and stale < args.patience:
        rounds += 1
        for _ in range(round_steps):
            index = torch.randint(task.num_samples(), (args.batch_size,), generator=generator)
            loss = model(task.make_batch(index)).total
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        value = task.monitor.value(task.evaluate(model, "val"))
        if task.monitor.improved(value, best):
            best, best_state, best_round, stale = (
                value,
                copy.deepcopy(model.state_dict()),
                rounds,
                0,
            )
        else:
            stale += 1
    model.load_state_dict(best_state)
    record = {
        "seed": seed,
        "rounds": rounds,
        "round_steps": round_steps,
        "best_round": best_round,
        "val_mae": best,
        "seconds": time.perf_counter() - started,
    }
    return model, record


def mean_std(values: list[float]) -> dict:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "values": values,
    }


def accuracy(kind: str, args: argparse.Namespace, common: dict) -> ForecastingTask:
    task = ForecastingTask.from_data(args.data, ForecastConfig(series=kind))
    started = time.perf_counter()
    baselines = evaluate_baselines(task, "test")
    baseline_seconds = time.perf_counter() - started
    _, targets = task.raw_windows("test")
    zero = task.metrics(torch.zeros_like(targets), "test")  # reference: most item-days are 0
    runs, tests = [], []
    for seed in range(args.seeds):
        model, record = harness_train(task, seed, args)
        metrics = task.evaluate(model, "test")
        runs.append(record)
        tests.append(metrics)
        if seed == 0 and args.plot:
            plot(task, model, kind, args.plot)
    print(
        json.dumps(
            {
                "benchmark": "forecast_accuracy",
                "series": kind,
                "num_series": task.series.num_series,
                "train_windows": task.num_samples(),
                "split": "test",
                "counts": tests[0]["counts"],
                "lstm": {m: mean_std([t["all"][m] for t in tests]) for m in REPORTED},
                "lstm_step_mase": [
                    statistics.fmean(t[f"step_{h}"]["mase"] for t in tests)
                    for h in range(1, task.config.horizon + 1)
                ],
                "baselines": {
                    name: {m: result["all"][m] for m in REPORTED}
                    for name, result in baselines.items()
                },
                "zero_forecast": {m: zero["all"][m] for m in REPORTED},
                "baseline_seconds": baseline_seconds,
                "runs": runs,
                "harness": {
                    "batch_size": args.batch_size,
                    "lr": args.lr,
                    "round_steps": args.round_steps,
                    "max_rounds": args.max_rounds,
                    "patience": args.patience,
                    "model": "hidden 64, 2 layers, dropout 0, MAE loss",
                },
                **common,
                "load_average": os.getloadavg(),
            }
        ),
        flush=True,
    )
    return task


def plot(task: ForecastingTask, model: LSTMForecaster, kind: str, path: str) -> None:
    from coldbrew.research.forecast_plot import plot_forecasts

    forecasts = {"lstm": task.forecasts(model, "test")}
    for name in ("naive", "seasonal_naive", "median"):
        forecasts[name] = baseline_forecasts(task, name, "test")
    target = Path(path)
    plot_forecasts(target.with_name(f"{target.stem}_{kind}{target.suffix}"), task, forecasts)


def throughput(task: ForecastingTask, args: argparse.Namespace, common: dict) -> None:
    settings = [(128, "seed"), (512, "large")]
    steppers = {}
    for batch_size, preset in settings:
        torch.manual_seed(0)
        model = LSTMForecaster.from_config(lstm_preset(preset), task.config.horizon)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        generator = torch.Generator().manual_seed(0)

        def step(model=model, optimizer=optimizer, generator=generator, size=batch_size):
            index = torch.randint(task.num_samples(), (size,), generator=generator)
            loss = model(task.make_batch(index)).total
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        for _ in range(3):
            step()
        steppers[(batch_size, preset)] = (step, [])
    for _ in range(args.repeats):
        for step, times in steppers.values():
            started = time.perf_counter()
            for _ in range(args.speed_steps):
                step()
            times.append((time.perf_counter() - started) / args.speed_steps)
    for (batch_size, preset), (_, times) in steppers.items():
        config = lstm_preset(preset)
        seconds = statistics.median(times)
        print(
            json.dumps(
                {
                    "benchmark": "forecast_train_throughput",
                    "series": task.series.kind,
                    "batch_size": batch_size,
                    "hidden": config.hidden,
                    "layers": config.layers,
                    "ms_per_step": 1e3 * seconds,
                    "samples_per_second": batch_size / seconds,
                    "ms_per_step_runs": [1e3 * t for t in times],
                    **common,
                    "load_average": os.getloadavg(),
                }
            ),
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="ml-100k")
    parser.add_argument("--series", default="genre,item", help="kinds, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--round-steps", type=int, default=100)
    parser.add_argument("--max-rounds", type=int, default=12)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--speed-steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--plot", default=None, help="write PNG(s) <stem>_<kind>.png (seed 0)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dataset_path(args.data)
    warnings.simplefilter("ignore")  # the shared ml-100k has 3 ratings by an unknown user
    common = {
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    task = None
    for kind in [] if args.skip_accuracy else args.series.split(","):
        task = accuracy(kind, args, common)
    if task is None or task.series.kind != "item":
        task = ForecastingTask.from_data(args.data, ForecastConfig(series="item"))
    throughput(task, args, common)
    return 0


if __name__ == "__main__":
    sys.exit(main())
