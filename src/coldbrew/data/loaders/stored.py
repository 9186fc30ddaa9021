"""A pickle-free copy of any ``Dataset``: ``coldbrew.json`` (manifest) + ``arrays.npz``.

Written by ``coldbrew data convert`` (``save``) and read back without pickle (``load``), so a
dataset that arrived as pickles needs trusting only once.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset, Feature, WordIds
from coldbrew.errors import DataError

MANIFEST_FILE = "coldbrew.json"
ARRAYS_FILE = "arrays.npz"
FORMAT = "coldbrew-dataset"
VERSION = 1


def save(dataset: Dataset, dst: Path) -> Path:
    """Write ``dataset`` to the new folder ``dst`` (JSON + ``.npz``), atomically via a rename."""
    dst = Path(dst)
    refuse_existing(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".partial", dir=dst.parent))
    try:
        arrays, manifest = _to_arrays(dataset)
        np.savez(staging / ARRAYS_FILE, **arrays)
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
        staging.chmod(0o755)
        if dst.exists():
            dst.rmdir()  # empty, checked above
        staging.rename(dst)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dst


def refuse_existing(dst: Path) -> None:
    """Raise unless ``dst`` is absent or an empty directory, in a place this process may write
    (checked before anything is loaded, so a read-only place fails at once, in one line)."""
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise DataError(f"{dst} already exists and is not empty; choose a new destination")
    existing = next(folder for folder in Path(dst).absolute().parents if folder.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise DataError(f"cannot write {dst}: {existing} is not a folder this user may write to")


def _to_arrays(dataset: Dataset) -> tuple[dict[str, np.ndarray], dict]:
    arrays: dict[str, np.ndarray] = {"cold_items": dataset.cold_items}
    matrices = {"train": dataset.train, "known": dataset.known}
    for split, groups in dataset.splits.items():
        matrices.update({f"{split}_{group}": matrix for group, matrix in groups.items()})
    for key, matrix in matrices.items():
        if matrix is not None:
            arrays[f"{key}_indptr"], arrays[f"{key}_indices"] = matrix.indptr, matrix.indices
    for key in ("user_ids", "item_ids"):
        if getattr(dataset, key) is not None:
            arrays[key] = np.asarray(getattr(dataset, key))
    features = []
    for index, (name, feature) in enumerate(dataset.features.items()):
        if isinstance(feature, WordIds):
            arrays[f"feature{index}_items"] = feature.item_index.numpy()
            arrays[f"feature{index}_words"] = feature.word_index.numpy()
            features.append({"name": name, "kind": "words", "num_words": feature.num_words})
        else:
            arrays[f"feature{index}"] = feature.detach().cpu().numpy()
            entry = {"name": name, "kind": "dense"}
            if name in dataset.feature_columns:
                entry["columns"] = list(dataset.feature_columns[name])
            features.append(entry)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "name": dataset.name,
        "num_users": dataset.num_users,
        "num_items": dataset.num_items,
        "splits": {split: list(groups) for split, groups in dataset.splits.items()},
        "features": features,
        "notes": list(dataset.notes),
        "item_text": dataset.item_text,
        "item_titles": dataset.item_titles,
        "user_text": dataset.user_text,
    }
    return arrays, manifest


def load(path: Path, wanted: Sequence[str] | None) -> Dataset:
    """Read a folder written by ``save``; ``wanted`` selects features (None: all)."""
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text())
        with np.load(path / ARRAYS_FILE, allow_pickle=False) as stored:
            arrays = dict(stored)
    except (OSError, ValueError) as error:
        raise DataError(f"{path}: cannot read the converted dataset ({error})") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DataError(f"{path / MANIFEST_FILE}: not a {FORMAT} manifest")
    if manifest.get("version") != VERSION:
        raise DataError(
            f"{path / MANIFEST_FILE}: version {manifest.get('version')}, expected {VERSION}"
        )
    shape = (manifest["num_users"], manifest["num_items"])

    def matrix(key: str) -> sp.csr_matrix | None:
        if f"{key}_indptr" not in arrays:
            return None
        indices = arrays[f"{key}_indices"]
        ones = np.ones(len(indices), dtype=np.float32)
        return sp.csr_matrix((ones, indices, arrays[f"{key}_indptr"]), shape=shape)

    return Dataset(
        name=manifest["name"],
        num_users=shape[0],
        num_items=shape[1],
        train=matrix("train"),
        cold_items=arrays["cold_items"],
        splits={
            split: {group: matrix(f"{split}_{group}") for group in groups}
            for split, groups in manifest["splits"].items()
        },
        features=_converted_features(path, manifest["features"], arrays, wanted),
        user_ids=arrays.get("user_ids"),
        item_ids=arrays.get("item_ids"),
        known=matrix("known"),
        notes=list(manifest["notes"]),
        item_text=manifest["item_text"],
        item_titles=manifest.get("item_titles"),  # absent from manifests written before it
        user_text=manifest.get("user_text"),  # absent from manifests written before it existed
        feature_columns={e["name"]: e["columns"] for e in manifest["features"] if "columns" in e},
    )


def _converted_features(
    path: Path, entries: list[dict], arrays: dict[str, np.ndarray], wanted: Sequence[str] | None
) -> dict[str, Feature]:
    by_name = {entry["name"]: index for index, entry in enumerate(entries)}
    features: dict[str, Feature] = {}
    for name in list(by_name) if wanted is None else wanted:
        if name not in by_name:
            offered = ", ".join(by_name) or "none"
            raise DataError(f"{path}: unknown feature {name!r}; this dataset has {offered}")
        index = by_name[name]
        if entries[index]["kind"] == "words":
            items = torch.from_numpy(arrays[f"feature{index}_items"])
            words = torch.from_numpy(arrays[f"feature{index}_words"])
            features[name] = WordIds(items, words, int(entries[index]["num_words"]))
        else:
            features[name] = torch.from_numpy(arrays[f"feature{index}"])
    return features
