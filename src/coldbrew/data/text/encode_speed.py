"""How an encode runs here: its precision (bf16 where the CPU does bf16 in hardware), its rate
remembered, its time foretold.

**Precision.** On a CPU with AMX or AVX-512 bf16 the backbone runs under
``torch.autocast("cpu", dtype=torch.bfloat16)``: mpnet@128 on an AMX Xeon at 2 threads was 3.3x
faster than fp32, its vectors at cosine >= 0.9995 to fp32's (mean 0.99998). Elsewhere, and on
CUDA, the numbers are fp32 as before. ``COLDBREW_TEXT_PRECISION=fp32`` (or ``bf16``) forces
one. The text cache keeps the two apart (``text_cache``: a bf16 run may read fp32 vectors, the
reference, never the reverse).

**Rate.** Each encode of a backbone remembers its characters per second on this machine
(``remember_rate``, in ``<cache>/rates.json``), so ``coldbrew data info`` can say how long an
encode would take without encoding anything (``estimate``).
"""

from __future__ import annotations

import json
import logging
import os
from functools import cache
from pathlib import Path

PRECISION_VARIABLE = "COLDBREW_TEXT_PRECISION"
BF16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo's flags of bf16 done in hardware
LOGGER = logging.getLogger(__name__)


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The flags of the first processor in ``cpuinfo`` (default: ``/proc/cpuinfo``; empty
    where there is none, as on macOS)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


@cache
def cpu_has_bf16() -> bool:
    """Whether this CPU does bf16 matrix products in hardware (AMX or AVX-512 bf16)."""
    return bool(cpu_flags() & set(BF16_FLAGS))


def text_precision(device_type: str, setting: str | None = None) -> str:
    """``fp32`` or ``bf16``: ``setting``, else ``$COLDBREW_TEXT_PRECISION``, else ``bf16`` on
    a CPU that has it (``cpu_has_bf16``) and ``fp32`` elsewhere. On CUDA always ``fp32`` (the
    encode there is quick; its numbers are left as they were)."""
    from coldbrew.errors import DataError

    choice = (setting or os.environ.get(PRECISION_VARIABLE) or "auto").strip().lower()
    if choice not in ("auto", "fp32", "bf16"):
        raise DataError(
            f"text precision must be auto, fp32 or bf16 (${PRECISION_VARIABLE}), not {choice!r}"
        )
    if device_type != "cpu":
        return "fp32"
    if choice == "auto":
        return "bf16" if cpu_has_bf16() else "fp32"
    return choice


# -------------------------------------------------------------------------------- rates
def _rates_file(root: Path) -> Path:
    return Path(root) / "rates.json"


def rate_key(encoder_id: str, precision: str, threads: int) -> str:
    return f"{encoder_id}|{precision}|threads-{threads}"


def stored_rate(root: Path, key: str) -> float | None:
    """Characters per second remembered for ``key`` (``rate_key``), or None."""
    try:
        rates = json.loads(_rates_file(root).read_text())
    except (OSError, ValueError):
        return None
    rate = rates.get(key) if isinstance(rates, dict) else None
    return float(rate) if isinstance(rate, int | float) and rate > 0 else None


def remember_rate(root: Path, key: str, chars_per_second: float) -> None:
    """Keep ``chars_per_second`` for ``key`` (a failure to write is logged, not raised)."""
    from coldbrew.data.text.text_cache import _write_text

    try:
        rates = json.loads(_rates_file(root).read_text())
        rates = rates if isinstance(rates, dict) else {}
    except (OSError, ValueError):
        rates = {}
    rates[key] = round(chars_per_second, 1)
    _write_text(_rates_file(root), json.dumps(rates, indent=1, sort_keys=True))


def estimate(chars: int, chars_per_second: float | None) -> float | None:
    """Seconds to encode ``chars`` characters at a remembered rate (None: no rate)."""
    if chars_per_second is None:
        return None
    return chars / chars_per_second
