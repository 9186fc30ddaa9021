"""Whether data has the feature layout a run was trained on, said block by block.

A checkpoint's content encoder is as wide as the blocks it was trained on: evaluated on data
whose genre block has 18 columns instead of 19, torch answers "size mismatch for
encoder.layer1.weight ... [256, 403] ... [256, 402]", which names neither the block nor the
fix. ``check_run_layout`` compares the run's saved layout (``results.json``'s dataset summary;
an unfinished run's ``config.yaml`` comment) with the data before any state is loaded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from coldbrew.errors import DataError

# config.yaml's comment (``coldbrew.training.run.layout_comment``): "genre: 19 columns (A, B)"
COMMENT_BLOCK = re.compile(r"(\w+): (\d+) columns(?: \(([^)]*)\))?")


def saved_layout(run_dir: Path) -> tuple[dict, dict] | None:
    """``(features, feature_columns)`` of the data RUN_DIR was trained on: its
    ``results.json``'s summary, else (an unfinished run) the dense blocks its ``config.yaml``
    comment lists; None when neither says."""
    try:
        summary = json.loads((run_dir / "results.json").read_text())["dataset"]
        return dict(summary["features"]), dict(summary.get("feature_columns") or {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    try:
        lines = (run_dir / "config.yaml").read_text().splitlines()
    except OSError:
        return None
    comment = next((line for line in lines if line.startswith("# a new item's vector")), None)
    if comment is None:
        return None
    features, columns = {}, {}
    for block, count, names in COMMENT_BLOCK.findall(comment.partition("):")[2]):
        features[block] = [None, int(count)]
        if names:
            columns[block] = names.split(", ")
    return features, columns


def width(shape) -> str:
    """A block's width as a summary gives it: ``[items, 19]`` -> ``19 columns``; a bag of
    words ``words:N`` -> ``a vocabulary of N words``."""
    if isinstance(shape, list) and len(shape) == 2:
        return f"{shape[1]} columns"
    if isinstance(shape, str) and shape.startswith("words:"):
        return f"a vocabulary of {shape.partition(':')[2]} words"
    return str(shape)


def layout_differences(run_dir: Path, dataset) -> list[str]:
    """One phrase per block whose width differs between the run's data and ``dataset``
    (``genre: 18 columns here against 19 columns in the run; missing here: IMAX``); [] when they agree
    or the run saved no layout."""
    saved = saved_layout(run_dir)
    if saved is None:
        return []
    features, columns = saved
    summary = dataset.summary()
    now, now_columns = summary.get("features", {}), summary.get("feature_columns", {})
    differences = []
    for block, shape in features.items():
        if block not in now:
            differences.append(f"{block}: the run read {width(shape)}, this data has no {block}")
            continue
        if width(now[block]) == width(shape):
            continue
        phrase = f"{block}: {width(now[block])} here against {width(shape)} in the run"
        before, after = columns.get(block), now_columns.get(block)
        if before and after:
            missing = [name for name in before if name not in after]
            extra = [name for name in after if name not in before]
            if missing:
                phrase += f"; missing here: {', '.join(missing[:5])}"
            if extra:
                phrase += f"; new here: {', '.join(extra[:5])}"
        differences.append(phrase)
    return differences


def check_run_layout(run_dir: Path, dataset) -> None:
    """Refuse, naming each block whose width differs, data whose feature layout is not the
    one ``run_dir`` was trained on (before the checkpoint is loaded)."""
    differences = layout_differences(Path(run_dir), dataset)
    if differences:
        raise DataError(
            f"{dataset.name} does not have the feature layout {run_dir} was trained on "
            f"({'; '.join(differences)}): give data with the run's blocks and columns, or "
            f"train a run on {dataset.name}"
        )


def count_difference(run_dir: Path, dataset, error: Exception) -> str:
    """The message for a checkpoint that did not fit ``dataset`` (``error``): the cause first
    when the data's users or items are not as many as the run's (its ``results.json``)."""
    try:
        saved = json.loads((Path(run_dir) / "results.json").read_text())["dataset"]
        before = (int(saved["users"]), int(saved["items"]))
    except (OSError, ValueError, KeyError, TypeError):
        return str(error)
    now = (dataset.num_users, dataset.num_items)
    if now == before:
        return str(error)
    return (
        f"{run_dir} was trained on {before[0]:,} users and {before[1]:,} items, {dataset.name} "
        f"has {now[0]:,} and {now[1]:,}: its checkpoint holds vectors of those users and items, "
        f"so --data must have the same ones (another split of the run's data, say); {error}"
    )
