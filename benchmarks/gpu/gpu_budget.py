"""What the GPU check is expected to take on the device, from the last GPU run's figures.

A session lent a GPU has 15 device-minutes in all, every start, idle wait and call counted.
Each section's expected seconds are its seconds in the last device run that finished it
(``benchmarks/gpu/gpu_results/*.json``), plus what this version adds to it (``ADDED``, each with
its reason); a section no run has finished is expected to take its whole time box. The check
runs in two calls (``CALLS``), each under a deadline; ``budget_rows`` and ``budget_table`` say
whether the expected seconds fit each call's deadline, and the calls and the machine starts
the 15 minutes, with a margin. The dry run prints the table; tests/perf/test_gpu_check.py
checks that it fits.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "gpu_results"
DEVICE_BUDGET = 900.0  # seconds of device time a session is lent, all calls and starts
START_SECONDS = 60.0  # a fresh machine (the 2026-11-26 session's second call started one)
CALL_SLACK = 20.0  # each call's timeout_s over its --deadline: the start-up and the table
MARGIN = 0.10  # the share of each limit kept free: a slower device, a slow compile

# (call, sections in order, --deadline): what matters most first. The sweep, the fastest
# batch's grid and the ml-1m whole runs met or measured their targets on 2026-11-26; they
# are left out of the two calls (``--only`` still runs them).
CALLS = [
    ("1", ["doctor", "clcrec_256", "clcrec_eval", "sync_free", "pytest_gpu"], 330.0),
    ("2", ["synthetic_memory", "lm", "lm_run", "profile"], 300.0),
]

# seconds a section now takes over its last measured run, and why (device seconds, guessed
# from that run's figures)
ADDED = {
    "clcrec_256": (35.0, "3 more configurations: fused off, two reduce-overhead compiles"),
    "clcrec_eval": (10.0, "2 more chunk sizes, a second profiled pass"),
    "lm": (10.0, "MiniLM restored from float16, ml-1m-coldstart's texts encoded"),
    "profile": (30.0, "a second profile: batch 256 with CUDA graphs, its compile"),
}


def last_measured(folder: Path = RESULTS) -> dict[str, dict]:
    """{section: {"seconds", "file", "device"}} of the latest run that finished each section
    with status ok, over the JSON reports in ``folder`` (oldest first by name)."""
    found = {}
    for path in sorted(folder.glob("*.json")):
        report = json.loads(path.read_text())
        device = report.get("meta", {}).get("device")
        for name, row in report.get("sections", {}).items():
            if row.get("status") == "ok":
                found[name] = {"seconds": row["seconds"], "file": path.name, "device": device}
    return found


def expected_seconds(name: str, box: float, measured: dict[str, dict]) -> tuple[float, str]:
    """(expected device seconds of section ``name``, where that figure comes from)."""
    added, why = ADDED.get(name, (0.0, ""))
    if name not in measured:
        return box, "no finished run: its whole box"
    row = measured[name]
    source = f"{row['seconds']:.1f} s on {row['device']} ({row['file']})"
    return row["seconds"] + added, source + (f" + {added:.0f} s: {why}" if added else "")


def budget_rows(boxes: dict[str, float], folder: Path = RESULTS) -> dict:
    """Each call's sections (box, expected, source), its expected total against its deadline,
    and the whole check against the device budget (two starts, both calls to their limits)."""
    measured = last_measured(folder)
    calls, worst = [], 0.0
    for call, names, deadline in CALLS:
        rows = []
        for name in names:
            expected, source = expected_seconds(name, boxes[name], measured)
            rows.append({"section": name, "box": boxes[name], "expected": expected, "from": source})
        total = sum(row["expected"] for row in rows)
        calls.append(
            {
                "call": call,
                "sections": rows,
                "expected": total,
                "deadline": deadline,
                "timeout_s": deadline + CALL_SLACK,
                "fits": total <= deadline * (1 - MARGIN),
            }
        )
        worst += START_SECONDS + deadline + CALL_SLACK
    return {
        "calls": calls,
        "expected_device_seconds": sum(START_SECONDS + c["expected"] for c in calls),
        "worst_device_seconds": worst,  # both calls run to their limits, each on a fresh start
        "device_budget": DEVICE_BUDGET,
        "fits": all(c["fits"] for c in calls) and worst <= DEVICE_BUDGET * (1 - MARGIN),
    }


def budget_table(budget: dict) -> str:
    lines = ["expected GPU seconds (from the last GPU run; docs/gpu.md, section 2):"]
    for call in budget["calls"]:
        lines.append(
            f"call {call['call']}: --deadline {call['deadline']:.0f} (timeout_s "
            f"{call['timeout_s']:.0f}), expected {call['expected']:.0f} s"
            + ("" if call["fits"] else f"  OVER {1 - MARGIN:.0%} OF ITS DEADLINE")
        )
        for row in call["sections"]:
            lines.append(
                f"  {row['section']:18s} box {row['box']:5.0f} s  expected {row['expected']:5.0f} s"
                f"  {row['from']}"
            )
    lines.append(
        f"device time: expected {budget['expected_device_seconds']:.0f} s, at most "
        f"{budget['worst_device_seconds']:.0f} s (two starts of {START_SECONDS:.0f} s, both calls "
        f"to their timeouts) of {budget['device_budget']:.0f} s: "
        + ("fits with margin" if budget["fits"] else "DOES NOT FIT")
    )
    return "\n".join(lines)
