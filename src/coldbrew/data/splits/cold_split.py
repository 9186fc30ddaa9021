"""Cold items the user chooses: which items a run holds out as cold, as a ``Dataset`` transform.

``cold_split`` (a run option) is one of:

- ``files`` (the default): the data's own split, as its files give it (or none at all);
- ``time:FRACTION``: the newest ``FRACTION`` of items by their first interaction are cold (how
  new items really arrive); needs timestamps;
- ``random:FRACTION``: a ``FRACTION`` of items drawn by the run's selection seed.

A fraction counts the items with at least one interaction (at least one item is made cold and
at least one stays warm); items without any interaction are cold whatever the option says.

For ``time`` and ``random`` every known interaction is pooled (training and every held-out
split), the chosen items' interactions move to the split ``val`` (group ``cold``) and the rest
train; ``coldbrew.data.splits.selection`` then cuts ``val`` into its select and report halves as for
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


def apply_cold_split(dataset, cold_split: str, seed: int):
    """``dataset`` with the items ``cold_split`` names made cold (see the module's docstring);
    ``files`` returns it as it is. Once: a dataset split the same way already is returned as
    it is, one split another way or already cut into select/report is refused."""
    import dataclasses

    import numpy as np

    kind, fraction = parse_cold_split(cold_split)
    if kind == "files":
        return dataset
    done = dataset.cold_split
    wanted = {"kind": kind, "fraction": fraction, "seed": seed if kind == "random" else None}
    if done is not None:
        if {key: done.get(key) for key in wanted} == wanted:
            return dataset
        raise DataError(
            f"{dataset.name} was split by cold_split {done['kind']}:{done['fraction']} already; "
            f"it cannot be split again by {cold_split}"
        )
    if dataset.selection is not None:
        raise DataError(
            f"{dataset.name} was cut into select/report already: choose its cold items first"
        )
    known = _every_interaction(dataset)
    seen = np.flatnonzero(np.diff(known.tocsc().indptr))  # items with an interaction
    if len(seen) < 2:
        raise DataError(f"{dataset.name}: cold_split needs at least 2 items with interactions")
    count = min(max(int(round(fraction * len(seen))), 1), len(seen) - 1)
    notes = list(dataset.notes)
    if kind == "time":
        chosen = _newest(dataset, seen, count, notes)
    else:
        chosen = np.random.default_rng([int(seed), 0xC01D]).choice(seen, count, replace=False)
    cold = np.zeros(dataset.num_items, dtype=bool)
    cold[chosen] = True
    train, val = _columns(known, ~cold), _columns(known, cold)
    lost = int(np.count_nonzero(np.diff(known.indptr)) - np.count_nonzero(np.diff(train.indptr)))
    pooled = (
        f"the data's own {', '.join(dataset.splits)} split(s) pooled first"
        if dataset.splits
        else "the data had no split of its own"
    )
    notes.append(
        f"cold_split {cold_split}: {count} of {len(seen)} items with interactions made cold "
        f"({val.nnz} interactions moved to val; {pooled})"
        + (f"; {lost} user(s) have no training interaction left" if lost else "")
    )
    source = dataset.item_ids if dataset.item_ids is not None else np.arange(dataset.num_items)
    record = {**wanted, "cold_items": count, "items": np.asarray(source)[np.sort(chosen)].tolist()}
    return dataclasses.replace(
        dataset,
        train=train,
        cold_items=np.flatnonzero(np.diff(train.tocsc().indptr) == 0),
        splits={"val": {"cold": val}},
        known=known,
        notes=notes,
        cold_split=record,
    )


def _every_interaction(dataset):
    """Training and every held-out interaction, one binary CSR."""
    import scipy.sparse as sp

    total = dataset.known if dataset.known is not None else dataset.train
    for groups in dataset.splits.values():
        for matrix in groups.values():
            total = total + matrix
    total = sp.csr_matrix(total)
    total.data[:] = 1.0
    total.sort_indices()
    return total


def _newest(dataset, seen, count: int, notes: list[str]):
    """The ``count`` items of ``seen`` whose first interaction is latest (ties: higher id)."""
    import numpy as np

    if dataset.item_first_seen is None:
        raise DataError(
            f"{dataset.name} has no interaction times: cold_split time:FRACTION needs a "
            "timestamp column; use random:FRACTION"
        )
    first = dataset.item_first_seen[seen]
    unknown = int(np.isnan(first).sum())
    if unknown:
        notes.append(f"cold_split time: {unknown} item(s) without a time count as the oldest")
    order = np.lexsort((seen, np.nan_to_num(first, nan=-np.inf)))  # oldest first
    return seen[order[-count:]]


def _columns(matrix, keep):
    """``matrix`` with only the entries whose column is marked in ``keep`` (CSR, same shape)."""
    import scipy.sparse as sp

    coo = matrix.tocoo()
    inside = keep[coo.col]
    out = sp.csr_matrix((coo.data[inside], (coo.row[inside], coo.col[inside])), shape=matrix.shape)
    out.sort_indices()
    return out


def cold_split_hint(dataset) -> str:
    """How to score a run on data with no cold split: train with ``--cold-split`` (``time``
    when the data has timestamps, else ``random``) or compare models on folds."""
    kind = "random" if getattr(dataset, "item_first_seen", None) is None else "time"
    return (
        f"train with --cold-split {kind}:0.2 to hold out a fifth of the items as cold, or "
        "compare models with coldbrew leaderboard --folds 5"
    )
