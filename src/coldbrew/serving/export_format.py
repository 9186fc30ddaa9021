"""The export folder: pickle-free, readable from any language with safetensors and JSON.

    DIR/manifest.json        format, model, data (name, digest, sizes), metrics, versions,
                             convention (score = user · item), feature blocks, new-item recipe
    DIR/vectors.safetensors  users (U, D) f32, items (I, D) f32, user_ids (U,) i64,
                             item_ids (I,) i64, cold_items (C,) i64, train_indptr (U + 1,) i64,
                             train_indices (nnz,) i64  (each user's training items, CSR rows);
                             where the data's ids are text, user_ids / item_ids hold the rows
                             0..n-1 and the manifest's "text_ids" the ids themselves
    DIR/model.safetensors    the model's learned state (its content encoder among it), when the
                             model can score a new item; rebuilt with DIR/config.yaml
    DIR/config.yaml          the run's configuration (YAML text)
    DIR/items.faiss          optional: a faiss index over the item vectors (faiss's own format)

The folder is written beside its final place and renamed into it: a failed export leaves
nothing half-written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coldbrew.errors import ColdbrewError

FORMAT = "coldbrew-export/1"
MANIFEST = "manifest.json"
VECTORS = "vectors.safetensors"
MODEL_STATE = "model.safetensors"
CONFIG_COPY = "config.yaml"
INDEX = "items.faiss"
ARRAYS = ("users", "items", "user_ids", "item_ids", "cold_items", "train_indptr", "train_indices")


@dataclass
class Vectors:
    """What a served catalogue ranks: vectors, source ids and each user's training items."""

    users: np.ndarray  # (U, D) float32
    items: np.ndarray  # (I, D) float32
    user_ids: np.ndarray  # (U,) int64 (or object str: text ids), internal row -> the data's id
    item_ids: np.ndarray  # (I,) int64 (or object str)
    cold_items: np.ndarray  # (C,) int64 internal rows of items with no training interactions
    train_indptr: np.ndarray  # (U + 1,) int64
    train_indices: np.ndarray  # (nnz,) int64 internal item rows
    item_text: list[str] | None = field(default=None)
    item_titles: list[str] | None = field(default=None)  # plain titles (Dataset.item_titles)

    def check(self) -> None:
        users, items = self.users, self.items
        if users.ndim != 2 or items.ndim != 2 or users.shape[1] != items.shape[1]:
            raise ColdbrewError(
                f"user vectors {users.shape} and item vectors {items.shape} do not share a width"
            )
        if len(self.user_ids) != len(users) or len(self.item_ids) != len(items):
            raise ColdbrewError("id lists do not match the vectors' rows")
        if len(self.train_indptr) != len(users) + 1:
            raise ColdbrewError("train_indptr needs one entry per user plus one")
        for name in ("users", "items"):
            if not np.isfinite(getattr(self, name)).all():
                raise ColdbrewError(f"the {name} vectors hold NaN or infinite values")


def data_digest(vectors: Vectors, features: dict | None = None) -> str:
    """SHA-256 over the ids, the training interactions and the item features (``name``:
    array), in a fixed order: the same data gives the same digest on any machine."""
    digest = hashlib.sha256()
    for name in ("user_ids", "item_ids", "cold_items", "train_indptr", "train_indices"):
        digest.update(name.encode())
        ids = getattr(vectors, name)
        if ids.dtype == object:  # text ids
            digest.update("\n".join(map(str, ids)).encode())
            continue
        digest.update(np.ascontiguousarray(ids, dtype=np.int64).tobytes())
    for name, array in (features or {}).items():
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(array, dtype=np.float32).tobytes())
    return digest.hexdigest()


def write_export(
    out: Path | str,
    vectors: Vectors,
    manifest: dict,
    *,
    model_state: dict | None = None,
    config_text: str | None = None,
    index=None,
) -> Path:
    """Write the folder ``out`` (which must not hold files yet) in one rename."""
    from safetensors.numpy import save_file

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ColdbrewError(f"{out} already exists and is not empty: choose a new --out")
    vectors.check()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        arrays = {name: np.ascontiguousarray(getattr(vectors, name)) for name in ARRAYS}
        arrays["users"] = arrays["users"].astype(np.float32)
        arrays["items"] = arrays["items"].astype(np.float32)
        text_ids = {}
        for name in ("user_ids", "item_ids"):
            if arrays[name].dtype == object:  # text ids: in the manifest, rows in the tensors
                text_ids[name] = [str(value) for value in arrays[name]]
                arrays[name] = np.arange(len(arrays[name]))
        if text_ids:
            manifest = {**manifest, "text_ids": text_ids}
        for name in ARRAYS[2:]:
            arrays[name] = arrays[name].astype(np.int64)
        save_file(arrays, str(staging / VECTORS), metadata={"format": FORMAT})
        if model_state is not None:  # torch tensors (any dtype, bf16 included)
            from safetensors.torch import save_file as save_tensors

            save_tensors(model_state, str(staging / MODEL_STATE), metadata={"format": FORMAT})
        if config_text is not None:
            (staging / CONFIG_COPY).write_text(config_text)
        if vectors.item_text is not None:
            manifest = {**manifest, "item_text": list(vectors.item_text)}
        if vectors.item_titles is not None:
            manifest = {**manifest, "item_titles": list(vectors.item_titles)}
        if index is not None:
            from coldbrew.serving.index import write_index

            write_index(index, staging / INDEX)
        manifest = {
            "format": FORMAT,
            **manifest,
            "files": sorted(p.name for p in staging.iterdir()),
        }
        manifest["files"].append(MANIFEST)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, allow_nan=False))
        for path in staging.iterdir():  # safetensors writes 0600; an export is for sharing
            os.chmod(path, 0o666 & ~_umask())
        os.chmod(staging, 0o777 & ~_umask())
        if out.exists():
            out.rmdir()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def is_export(path: Path | str) -> bool:
    return (Path(path) / MANIFEST).is_file()


def read_manifest(folder: Path | str) -> dict:
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ColdbrewError(f"cannot read {path}: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ColdbrewError(f"{path} is not a {FORMAT} manifest")
    return manifest


def read_vectors(folder: Path | str) -> Vectors:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    folder = Path(folder)
    manifest = read_manifest(folder)
    try:
        arrays = load_file(str(folder / VECTORS))
    except (OSError, SafetensorError) as error:
        raise ColdbrewError(f"cannot read {folder / VECTORS}: {error}") from None
    missing = [name for name in ARRAYS if name not in arrays]
    if missing:
        raise ColdbrewError(f"{folder / VECTORS} lacks {', '.join(missing)}")
    for name, ids in (manifest.get("text_ids") or {}).items():
        if name in ("user_ids", "item_ids"):
            arrays[name] = np.array(ids, dtype=object)
    vectors = Vectors(
        **{name: arrays[name] for name in ARRAYS},
        item_text=manifest.get("item_text"),
        item_titles=manifest.get("item_titles"),  # absent from exports made before it existed
    )
    vectors.check()
    return vectors
