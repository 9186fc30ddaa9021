"""A pytest plugin for ``gpu_check.py``'s pytest section (``-p gpu_pytest_progress``).

Each test's start and outcome go to the file named by ``$GPU_CHECK_PYTEST_LOG``, one JSON line
each, as they happen: a section stopped at its time box still knows which tests finished and
which one was running (on an H100 the first device run lost all of them, since pytest's JUnit
XML is written only at the end).
"""

from __future__ import annotations

import json
import os


def _write(entry: dict) -> None:
    with open(os.environ["GPU_CHECK_PYTEST_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def pytest_runtest_logstart(nodeid: str, location) -> None:
    _write({"start": nodeid})


def pytest_runtest_logreport(report) -> None:
    # one outcome a test: its call, or the setup / teardown that skipped or failed it
    if report.when == "call" or report.outcome != "passed":
        outcome = "error" if report.when != "call" and report.failed else report.outcome
        message = report.longreprtext[-300:] if not report.passed else ""
        _write({"test": report.nodeid, "outcome": outcome, "seconds": report.duration,
                "message": message})  # fmt: skip
