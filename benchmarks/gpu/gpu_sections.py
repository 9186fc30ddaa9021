"""The sections of ``gpu_check.py``: each measures one thing through coldbrew's own functions
(``run_bench``, ``train``, ``estimate_memory``, ``run_doctor``, ``profile_training``, the CLI)
and records what it found through ``record(key, value)`` as it goes, so a section stopped at
its time box still leaves what it finished. No training loop here.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Record = Callable[[str, object], None]


def config_for(plan: dict, **settings):
    from coldbrew.config import make_config

    return make_config({"quiet": True, "seed": 1, **settings})


def clcrec_config(
    plan: dict, batch: int, precision: str = "fp32", compile: bool = False, **options
):
    return config_for(
        plan,
        data=plan["clcrec_data"],
        model="clcrec",
        batch_size=batch,
        num_neg=plan["num_neg"],
        precision=precision,
        compile=compile,
        **options,
    )


def bench(plan: dict, what: str, base, variants: dict | None = None) -> dict:
    from coldbrew.perf.bench import run_bench

    return run_bench(
        what,
        base,
        feature_widths=plan["feature_dims"],
        seconds=plan["bench_seconds"],
        variants=variants,
    )


def throughput_rows(result: dict, base_name: str) -> dict[str, dict]:
    """{configuration: samples/s, s/epoch, seconds per step} of one ``run_bench`` result."""
    train = result["train_interactions"]
    rows = {base_name: result, **result.get("variants", {})}
    return {
        name: {
            "batch_size": row["batch_size"],
            "samples_per_second": row["samples_per_second"],
            "epoch_seconds": train / row["samples_per_second"],
            "step_seconds": row["seconds_per_call"],
        }
        for name, row in rows.items()
    }


def clcrec_sweep(plan: dict, given: dict, record: Record) -> None:
    """Eager steps at each batch of the sweep, bf16 and fp32 (+TF32), one configuration at a
    time, smallest first; a batch that does not fit ends that precision's sweep."""
    import torch

    best = None
    for precision in plan["precisions"]:
        rows = {}
        for batch in plan["batches"]:
            try:
                result = bench(plan, "train", clcrec_config(plan, batch, precision))
            except torch.cuda.OutOfMemoryError as error:
                rows[f"b{batch}"] = {"error": f"out of memory: {str(error)[:200]}"}
                torch.cuda.empty_cache()
                break
            row = throughput_rows(result, "")[""]
            rows[f"b{batch}"] = {**row, "peak_memory_bytes": result["peak_memory_bytes"]}
            record("device", result["device"])
            record(precision, rows)
            if best is None or row["samples_per_second"] > best["samples_per_second"]:
                best = {"precision": precision, **row}
                record("fastest", best)
        record(precision, rows)
    record(
        "headline",
        f"fastest {best['precision']} b{best['batch_size']}: "
        f"{best['samples_per_second']:,.0f} samples/s",
    )


def clcrec_grid(plan: dict, batch: int, record: Record, extra: dict | None = None) -> dict:
    """fp32 (+TF32) and bf16, compile off and on, at ``batch``: samples/s, s/epoch, memory;
    ``extra``: {name: fp32 options} more configurations in the same turns."""
    variants = {
        f"{precision}{' compile' if compile else ''}": clcrec_config(
            plan, batch, precision, compile
        )
        for precision in plan["precisions"]
        for compile in plan["compile_options"]
    }
    del variants["fp32"]  # the base
    for name, options in (extra or {}).items():
        variants[name] = clcrec_config(plan, batch, "fp32", **options)
    started = time.perf_counter()
    result = bench(plan, "train", clcrec_config(plan, batch, "fp32"), variants)
    rows = throughput_rows(result, "fp32")
    record("batch_size", batch)
    record("rows", rows)
    record("peak_memory_bytes", result["peak_memory_bytes"])
    record("wall_seconds", time.perf_counter() - started)
    record("device", result["device"])
    fastest = max(rows, key=lambda name: rows[name]["samples_per_second"])
    record(
        "headline",
        f"b{batch}: {fastest} {rows[fastest]['samples_per_second']:,.0f} samples/s, "
        f"{rows[fastest]['epoch_seconds']:.3f} s/epoch",
    )
    return rows


def clcrec_256(plan: dict, given: dict, record: Record) -> None:
    """The grid at batch 256, then its levers side by side: fused Adam off (torch's default,
    the 2026-11-26 run's), and CUDA graphs (``compile_mode="reduce-overhead"``) in their own
    group, so a failure there leaves the grid's figures. (The dry run, compile off, runs that
    group eager.)"""
    batch = plan["batches"][0]
    grid = clcrec_grid(plan, batch, record, {"fp32 unfused": {"fused_optimizer": False}})
    graphs = {
        f"{precision} compile graphs": clcrec_config(
            plan, batch, precision, True in plan["compile_options"], compile_mode="reduce-overhead"
        )
        for precision in plan["precisions"]
    }
    base = graphs.pop(f"{plan['precisions'][0]} compile graphs")
    started = time.perf_counter()
    try:
        result = bench(plan, "train", base, graphs)
    except Exception as error:  # the grid's figures stay; this group's error is kept
        record("graphs_error", f"{type(error).__name__}: {error}")
        record("graphs_where", traceback.format_exc()[-2000:])
        return
    rows = throughput_rows(result, f"{plan['precisions'][0]} compile graphs")
    record("graphs_rows", rows)
    record("graphs_wall_seconds", time.perf_counter() - started)
    everything = {**grid, **rows}
    fastest = max(everything, key=lambda name: everything[name]["samples_per_second"])
    record(
        "headline",
        f"b{batch}: {fastest} {everything[fastest]['samples_per_second']:,.0f} samples/s, "
        f"{everything[fastest]['epoch_seconds']:.3f} s/epoch",
    )


def clcrec_fastest(plan: dict, given: dict, record: Record) -> None:
    fastest = (given.get("clcrec_sweep") or {}).get("fastest")
    batch = fastest["batch_size"] if fastest else plan["batches"][-1]
    record("batch_from", "clcrec_sweep" if fastest else "the sweep's largest (no sweep result)")
    clcrec_grid(plan, batch, record)


def sync_free(plan: dict, given: dict, record: Record) -> None:
    """Training steps under ``set_sync_debug_mode("error")`` (the first host sync raises), then
    the syncs per step counted in "warn" mode (``coldbrew.perf.profile.natural_steps``)."""
    import torch

    from coldbrew.data import load_dataset
    from coldbrew.perf.bench import random_features, random_samples
    from coldbrew.perf.profile import natural_steps
    from coldbrew.training.run import build_trainer

    cuda = torch.cuda.is_available()
    record("cuda", cuda)
    # a batch known to fit: the sweep's fastest, else the last device run's
    fastest = (given.get("clcrec_sweep") or {}).get("fastest")
    batch = fastest["batch_size"] if fastest else plan["fastest_batch"]
    record("batch_size", batch)
    dataset = load_dataset(plan["clcrec_data"], features=[])
    dataset.features = random_features(dataset.num_items, plan["feature_dims"], 1)
    headline = []
    configurations = [(precision, False) for precision in plan["precisions"]]
    if True in plan["compile_options"]:
        configurations.append((plan["precisions"][-1], True))
    for precision, compile in configurations:
        name = f"{precision}{' compile' if compile else ''}"
        config = clcrec_config(plan, batch, precision, compile)
        trainer = build_trainer(config, dataset)
        draw = random_samples(trainer, config.batch_size, config.seed)
        natural_steps(trainer, draw, 3, count_syncs=False)  # warm-up, compile
        row = {"steps": 5, "error_mode": "no CUDA: nothing to check" if not cuda else "passed"}
        if cuda:
            batches = [draw() for _ in range(5)]
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
            try:
                for index in batches:
                    trainer.train_step(index)
            except RuntimeError as error:
                row["error_mode"] = f"host sync: {error}"
                row["where"] = traceback.format_exc(limit=-6)[-2000:]
            finally:
                torch.cuda.set_sync_debug_mode(0)
            torch.cuda.synchronize()
        _, syncs = natural_steps(trainer, draw, 5, count_syncs=cuda)
        row["syncs_per_step"] = None if syncs is None else syncs / 5
        record(name, row)
        headline.append(f"{name} {row['syncs_per_step']}")
        del trainer
    record("headline", "syncs/step: " + ", ".join(headline))


def one_run(config, root: Path, name: str, record: Record) -> dict:
    """``coldbrew.training.run.train`` to its end; what it found, and its wall time. Each
    epoch's end is recorded under ``name`` as it comes, so a run stopped at the section's time
    box still shows how far it got."""
    from coldbrew.training.run import train

    started = time.perf_counter()

    def progress(state) -> None:
        seconds = time.perf_counter() - started
        done = {"epochs_done": state.epoch, "best_epoch": state.best_epoch, "wall_seconds": seconds}
        record(name, {"unfinished": True, **done, "train_seconds": state.train_seconds})

    results = train(config, root / name, on_epoch_end=progress)
    val = results["metrics"].get("val", {})
    return {
        "wall_seconds": time.perf_counter() - started,
        "best_epoch": results["best_epoch"],
        "epochs_run": results["epochs_run"],
        "stopped": results["stopped"],
        "monitor": results["early_stop"],
        "val": val,
        "timing": results["timing"],
        "device": results["device"],
    }


def ml1m_settings(plan: dict, model: str) -> dict:
    settings = {"data": plan["ml1m_data"], "features": plan["ml1m_features"], "model": model}
    if plan.get("epochs"):
        settings["epochs"] = plan["epochs"]
    return settings


def ml1m_clcrec(plan: dict, given: dict, record: Record) -> None:
    """CLCRec's whole run on ml-1m-coldstart (genre features) to its early stop."""
    with tempfile.TemporaryDirectory() as folder:
        run = one_run(
            config_for(plan, **ml1m_settings(plan, "clcrec")), Path(folder), "run", record
        )
    record("run", run)
    record(
        "headline",
        f"best epoch {run['best_epoch']}/{run['epochs_run']} in {run['wall_seconds']:.1f} s",
    )


def zoo(plan: dict, given: dict, record: Record) -> None:
    """Every zoo model's whole run on ml-1m-coldstart; the backbone from the carried cache."""
    from coldbrew.data.paths import cache_dir

    backbones = cache_dir() / "backbones"
    before = sorted(p.name for p in backbones.glob("*.pt")) if backbones.is_dir() else []
    record("backbones_cached_before", before)
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for model in plan["zoo"]:
            try:
                run = one_run(
                    config_for(plan, **ml1m_settings(plan, model)), Path(folder), model, record
                )
                times.append(f"{model} {run['wall_seconds']:.0f}s")
            except Exception as error:  # one model failing must not hide the others
                run = {
                    "error": f"{type(error).__name__}: {error}",
                    "where": traceback.format_exc()[-1500:],
                }
                times.append(f"{model} ERROR")
            record(model, run)
    after = sorted(p.name for p in backbones.glob("*.pt")) if backbones.is_dir() else []
    record("backbones_trained_here", sorted(set(after) - set(before)))
    record("headline", ", ".join(times))


def capture_cli(argv: list[str]) -> str:
    from coldbrew.cli import main

    buffer, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(errors):
        code = main(argv)
    if code:
        said = (errors.getvalue() or buffer.getvalue())[-800:]
        raise RuntimeError(f"coldbrew {' '.join(argv)} exited {code}: {said}")
    return buffer.getvalue()


def leaderboard(plan: dict, given: dict, record: Record) -> None:
    """``coldbrew leaderboard`` of CLCRec and content KNN on ml-1m-coldstart, one seed."""
    with tempfile.TemporaryDirectory() as folder:
        argv = ["leaderboard", "--data", plan["ml1m_data"], "--features", plan["ml1m_features"]]
        argv += ["--models", "clcrec,knn", "--seeds", "1", "--out", str(Path(folder) / "board")]
        argv += ["--no-plot", "--markdown", "--quiet"]
        if plan.get("epochs"):
            argv += ["--epochs", str(plan["epochs"])]
        started = time.perf_counter()
        text = capture_cli(argv)
    record("wall_seconds", time.perf_counter() - started)
    record("table", text)
    record("headline", f"2 models in {time.perf_counter() - started:.0f} s")
