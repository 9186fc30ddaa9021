"""The data's own ids, stored with a run: ``RUN_DIR/ids.json`` maps each internal row to the id
the data gave it (``{"users": [...], "items": [...]}``, integers or text as read).

A run is reloaded by rebuilding its data (``recommend``, ``evaluate``, ``export``, ``serve``,
``train --resume``);
``check_ids`` compares the rebuilt ids with the stored ones, so data that changed since training
(an item added, a user removed, ids renamed) is refused by name instead of the run's rows
silently naming other users and items.
"""

from __future__ import annotations

import json
from pathlib import Path

from coldbrew.errors import ColdbrewError

IDS = "ids.json"
KINDS = (("users", "user_ids"), ("items", "item_ids"))


def write_ids(run_dir: Path, dataset) -> None:
    """Store ``dataset``'s user and item ids in ``run_dir`` (nothing for data without them)."""
    stored = {
        kind: ids.tolist()
        for kind, attribute in KINDS
        if (ids := getattr(dataset, attribute, None)) is not None
    }
    if stored:
        (run_dir / IDS).write_text(json.dumps(stored), encoding="utf-8")


def check_ids(run_dir: Path, dataset) -> None:
    """Refuse ``dataset`` when its ids differ from those ``run_dir`` trained with (a run
    without ``ids.json``, from an older coldbrew, is not checked)."""
    path = run_dir / IDS
    if not path.exists():
        return
    stored = json.loads(path.read_text(encoding="utf-8"))
    for kind, attribute in KINDS:
        ids = getattr(dataset, attribute, None)
        if kind not in stored or ids is None:
            continue
        problem = _difference(stored[kind], ids.tolist(), kind[:-1])
        if problem:
            raise ColdbrewError(
                f"{run_dir} trained on other {kind} than the data now holds ({problem}): its rows "
                "would name the wrong ones; train again on this data, or restore the data it had"
            )


def _difference(before: list, now: list, kind: str) -> str | None:
    """``None`` when equal, else a short account: counts, and the first id that differs."""
    if before == now:
        return None
    gone = set(before) - set(now)
    new = set(now) - set(before)
    if gone or new:
        parts = [f"{len(new):,} new, e.g. {kind} {sorted(new, key=str)[0]!r}"] if new else []
        parts += [f"{len(gone):,} gone, e.g. {kind} {sorted(gone, key=str)[0]!r}"] if gone else []
        return "; ".join(parts)
    return "the same ids in another order"  # ids are sorted when read: a changed sort
