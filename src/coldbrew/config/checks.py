"""Checks of single run option values beyond a field's own type and bounds: the monitored
metric and the device's name."""

from __future__ import annotations

from coldbrew.errors import ColdbrewError

METRIC_NAMES = ("precision", "recall", "ndcg", "hit")


def parse_monitor(text: str, ks: list[int]) -> tuple[str, str]:
    """``"cold/recall@20"`` -> ``("cold", "recall@20")``; refuses what evaluation never measures."""
    group, _, metric = text.partition("/")
    name, _, k = metric.partition("@")
    if not group or name not in METRIC_NAMES or not k.isdigit():
        raise ColdbrewError(
            f"early_stop_metric must look like 'cold/recall@20' ({'|'.join(METRIC_NAMES)}), "
            f"not {text!r}"
        )
    if int(k) not in ks:
        raise ColdbrewError(
            f"early_stop_metric {text!r}: K={k} is not measured; add it to --ks (now {ks})"
        )
    return group, metric


def check_device_name(name: str) -> None:
    kind, _, index = name.partition(":")
    if kind in ("auto", "cpu") and not index or kind == "cuda" and (not index or index.isdigit()):
        return
    raise ColdbrewError(f"device must be auto, cpu, cuda or cuda:N, not {name!r}")
