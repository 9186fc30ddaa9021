"""The table ``gpu_check.py`` prints last, and the GPU issue's targets read off its report."""

from __future__ import annotations


def _get(report: dict, *keys):
    value = report.get("sections", {})
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _best(rows: dict | None, key: str = "samples_per_second"):
    if not rows:
        return None
    return max(row[key] for row in rows.values())


def targets(report: dict) -> dict:
    """{target: {"wanted", "measured", "met"}}; measured None where its section gave nothing."""
    fastest = _get(report, "clcrec_fastest", "result", "rows")
    at_256 = _get(report, "clcrec_256", "result", "rows")
    fastest_epoch = (
        min((row["epoch_seconds"] for row in fastest.values()), default=None) if fastest else None
    )
    evaluation = _get(report, "clcrec_eval", "result")
    passes = [v for k, v in (evaluation or {}).items() if k in ("fp32", "bf16")]
    passes += list((evaluation or {}).get("one_pass", {}).values())  # as training evaluates
    eval_seconds = min((row["seconds"] for row in passes), default=None)
    graphs = _get(report, "clcrec_256", "result", "graphs_rows")
    sync = _get(report, "sync_free", "result") or {}
    syncs = [row.get("syncs_per_step") for row in sync.values() if isinstance(row, dict)]
    counts = _get(report, "pytest_gpu", "result", "counts")
    ratio = _get(report, "synthetic_memory", "result", "estimate_over_measured")
    rows = {
        "fastest batch >= 2,000,000 samples/s": (2e6, _best(fastest), lambda m: m >= 2e6),
        "batch 256 >= 100,000 samples/s": (1e5, _best({**(at_256 or {}), **(graphs or {})}), lambda m: m >= 1e5),
        "epoch of 922,007 < 0.5 s": (0.5, fastest_epoch, lambda m: m < 0.5),
        "val+test evaluation < 0.1 s": (0.1, eval_seconds, lambda m: m < 0.1),
        "zero host syncs per step": (0, max(syncs) if syncs and None not in syncs else None, lambda m: m == 0),
        "every GPU test passes": (0, None if counts is None else counts.get("failed", 0) + counts.get("error", 0), lambda m: m == 0),
        "memory estimate within 15 %": (0.15, None if ratio is None else abs(ratio - 1), lambda m: m <= 0.15),
    }  # fmt: skip
    return {
        name: {"wanted": wanted, "measured": measured, "met": None if measured is None else bool(test(measured))}
        for name, (wanted, measured, test) in rows.items()
    }  # fmt: skip


def table(report: dict) -> str:
    meta = report["meta"]
    lines = [
        f"gpu_check on {meta['device']} (torch {meta['torch']}, commit {meta['commit']}, {meta['date']})"
        + ("  DRY RUN: tiny sizes on the CPU" if meta["dry_run"] else ""),
        f"{'section':18s} {'status':8s} {'seconds':>8s}  headline / error",
    ]
    for name, row in report["sections"].items():
        text = row.get("result", {}).get("headline") if row["status"] == "ok" else row.get("error")
        seconds = f"{row['seconds']:8.1f}" if "seconds" in row else f"{'-':>8s}"
        lines.append(f"{name:18s} {row['status']:8s} {seconds}  {str(text or '')[:110]}")
    lines.append("")
    lines.append("targets (the GPU issue's; meaningful on the device only):")
    for name, row in report.get("targets", {}).items():
        verdict = {True: "met", False: "NOT MET", None: "no figure"}[row["met"]]
        measured = "-" if row["measured"] is None else f"{row['measured']:,.4g}"
        lines.append(f"  {name:40s} {measured:>12s}  {verdict}")
    if report.get("rerun"):
        lines.append(
            f"rerun what did not finish: python benchmarks/gpu/gpu_check.py {report['rerun']}"
        )
    return "\n".join(lines)
