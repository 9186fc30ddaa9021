"""Cold items the user chooses: which items a run holds out as cold, as a ``Dataset`` transform.

``cold_split`` (a run option) is one of:

- ``files`` (the default): the data's own split, as its files give it (or none at all);
- ``time:FRACTION``: the newest ``FRACTION`` of items by their first interaction are cold (how
  new items really arrive); needs timestamps;
- ``random:FRACTION``: a ``FRACTION`` of items drawn by the run's selection seed.

For ``time`` and ``random`` every known interaction is pooled (training and every held-out
split), the chosen items' interactions move to the split ``val`` (group ``cold``) and the rest
train; ``coldbrew.data.selection`` then cuts ``val`` into its select and report halves as for
any data. The dataset records what was done in ``Dataset.cold_split`` (kind, fraction, seed and
the cold items' source ids), which ``results.json`` shows with the dataset's summary.

This module imports no torch at import time: ``coldbrew.config`` checks the option with it.
"""

from __future__ import annotations

from coldbrew.errors import DataError

KINDS = ("files", "time", "random")
DEFAULT_COLD_SPLIT = "files"
FORMS = "files, time:FRACTION or random:FRACTION (e.g. time:0.2)"


def parse_cold_split(text: object) -> tuple[str, float | None]:
    """``"time:0.2"`` -> ``("time", 0.2)``; ``"files"`` -> ``("files", None)``; else a ``DataError``.

    >>> parse_cold_split("random:0.1")
    ('random', 0.1)
    """
    if not isinstance(text, str):
        raise DataError(f"cold_split must be {FORMS}, not {text!r}")
    kind, colon, fraction_text = text.strip().partition(":")
    if kind == "folds":
        raise DataError("cold_split 'folds' is cold-item cross-validation: give --folds K instead")
    if kind not in KINDS:
        raise DataError(f"cold_split must be {FORMS}, not {text!r}")
    if kind == "files":
        if colon:
            raise DataError(f"cold_split 'files' takes no fraction, got {text!r}")
        return kind, None
    try:
        fraction = float(fraction_text)
    except ValueError:
        raise DataError(
            f"cold_split {kind}:FRACTION needs a fraction between 0 and 1, got {text!r}"
        ) from None
    if not 0.0 < fraction < 1.0:
        raise DataError(
            f"cold_split {kind}:FRACTION needs a fraction above 0 and below 1, got {fraction}"
        )
    return kind, fraction
