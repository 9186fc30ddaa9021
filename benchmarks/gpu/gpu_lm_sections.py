"""The LM sections of ``gpu_check.py``, with all-MiniLM-L6-v2's real weights: carried in
float16 byte planes (``gpu_minilm``) and restored to a float32 folder on the device, which the
LM recommender reads as its backbone and the text pipeline as its sentence encoder."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from gpu_sections import Record, config_for, ml1m_settings, one_run


def restored_minilm(plan: dict, folder: str, record: Record) -> Path:
    from gpu_minilm import restore

    started = time.perf_counter()
    backbone = restore(Path(plan["minilm"]), Path(folder) / "minilm")
    what = "all-MiniLM-L6-v2, float16 weights widened" if not plan["dry_run"] else "tiny BERT"
    record("backbone", {"what": what, "restore_seconds": time.perf_counter() - started})
    return backbone


def lm_settings(plan: dict, backbone: Path, mode: str) -> dict:
    settings = {**ml1m_settings(plan, "lm"), "lm_mode": mode, "backbone": str(backbone)}
    if plan.get("lm_batch"):
        settings["batch_size"] = plan["lm_batch"]
    return settings


def encode_texts(plan: dict, backbone: Path, record: Record) -> str:
    """The text pipeline: every ml-1m-coldstart item's text embedded with the real weights."""
    from coldbrew.data import load_dataset

    started = time.perf_counter()
    dataset = load_dataset(
        plan["ml1m_data"], features=["text"], text_encoder=str(backbone), progress=False
    )
    seconds = time.perf_counter() - started
    vectors = dataset.features["text"]  # (items, width)
    record("text", {"items": vectors.shape[0], "width": vectors.shape[1], "seconds": seconds})
    return f"{vectors.shape[0]} texts in {seconds:.1f} s"


def lm(plan: dict, given: dict, record: Record) -> None:
    """The item texts encoded, then the LM recommender's training steps/s in cache mode and
    in tune mode (LoRA on the top layer)."""
    from coldbrew.perf.bench import run_bench

    with tempfile.TemporaryDirectory() as folder:
        backbone = restored_minilm(plan, folder, record)
        headline = [encode_texts(plan, backbone, record)]
        for mode in ("cache", "tune"):
            started = time.perf_counter()
            settings = lm_settings(plan, backbone, mode)
            settings.pop("epochs", None)
            result = run_bench("train", config_for(plan, **settings), seconds=plan["bench_seconds"])
            steps = result["samples_per_second"] / result["batch_size"]
            record(
                mode,
                {
                    "steps_per_second": steps,
                    "samples_per_second": result["samples_per_second"],
                    "batch_size": result["batch_size"],
                    "peak_memory_bytes": result["peak_memory_bytes"],
                    "wall_seconds_with_build": time.perf_counter() - started,
                },
            )
            headline.append(f"{mode} {steps:.1f} steps/s")
    record("headline", ", ".join(headline))


def lm_run(plan: dict, given: dict, record: Record) -> None:
    """The LM's tune mode, a whole run on ml-1m-coldstart with the real weights, stopped by
    its early stop or by ``lm_run_budget`` seconds of training and evaluation (the run's own
    ``time_budget``: it ends after the epoch that reaches it, the best epoch kept)."""
    with tempfile.TemporaryDirectory() as folder:
        backbone = restored_minilm(plan, folder, record)
        settings = lm_settings(plan, backbone, "tune")
        settings["time_budget"] = plan["lm_run_budget"]
        run = one_run(config_for(plan, **settings), Path(folder), "run", record)
    record("run", run)
    record(
        "headline",
        f"tune: best epoch {run['best_epoch']}/{run['epochs_run']} in {run['wall_seconds']:.1f} s"
        f" ({run['stopped'] or 'ran its epochs'})",
    )
