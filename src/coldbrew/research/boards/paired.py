"""Which lead is real: the best row against each other row, paired over folds × seeds.

Two rows of a cross-validated leaderboard are scored on the same folds with the same seeds, so
their scores pair up: ``d_i = best_i - other_i`` over the J = folds × seeds pairs. The folds'
training sets overlap, so the ``d_i`` are not independent and the plain paired t-test is too
sure of itself; the corrected resampled t-test (Nadeau & Bengio, Machine Learning 2003; as
Bouckaert & Frank use it for repeated K-fold cross-validation) widens the variance of the mean
by the share of the data held out against the share trained on:

    var(mean d) = (1 / J + n_test / n_train) * s^2,   n_test / n_train = 1 / (K - 1) for K folds

and the interval is ``mean(d) ± t_{0.975, J-1} * sqrt(var)``. A lead is real when the whole
interval is above zero; otherwise the rows are level. Why not a paired bootstrap over users:
a user's scores in one fold are not independent of the model's other users (one model, one
training run), and the variance that matters for choosing a model is the one from training on
other items, which only the folds see.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95


def corrected_interval(
    differences: Sequence[float], folds: int, confidence: float = CONFIDENCE
) -> dict:
    """``{"mean", "low", "high", "n"}`` of the paired ``differences`` (one per fold and seed) of
    a ``folds``-fold cross-validation, by the corrected resampled t-test (module docstring).
    With one pair there is no spread to measure: the interval is unbounded."""
    from scipy.stats import t

    count = len(differences)
    if count == 0:
        raise ValueError("no paired differences")
    mean = sum(differences) / count
    if count < 2:
        return {"mean": mean, "low": -math.inf, "high": math.inf, "n": count}
    variance = sum((d - mean) ** 2 for d in differences) / (count - 1)
    scale = math.sqrt((1 / count + 1 / (folds - 1)) * variance)
    half = float(t.ppf((1 + confidence) / 2, count - 1)) * scale
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": count}


def verdict(interval: dict) -> str:
    """``"leads"`` when the whole interval is above zero, else ``"level"``."""
    return "leads" if interval["low"] > 0 else "level"


def paired_leads(scores: dict[str, dict[tuple, float]], folds: int) -> dict:
    """``{"best": name, "versus": {name: interval + {"verdict"}}}``: the row with the highest
    mean score against every other, paired on the (fold, seed) keys both have. ``scores`` maps
    a row's name to its ``{(fold, seed): score}``."""
    means = {name: sum(values.values()) / len(values) for name, values in scores.items() if values}
    if not means:
        return {"best": None, "versus": {}}
    best = max(means, key=means.get)
    versus = {}
    for name, values in scores.items():
        shared = [key for key in scores[best] if key in values]
        if name == best or not shared:
            continue
        interval = corrected_interval([scores[best][key] - values[key] for key in shared], folds)
        versus[name] = {**interval, "verdict": verdict(interval)}
    return {"best": best, "versus": versus}
