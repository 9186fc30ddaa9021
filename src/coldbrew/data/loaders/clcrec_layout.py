"""The original CLCRec ``Data/<name>/`` folder (and, through ``stored``, its pickle-free copy).

User ``u`` is ``u`` in every file; item ``i`` is ``num_users + i``. Counts come from the ids
in the files, never from the dataset's name. Files (all optional but one training file):

* ``train.npy`` ([n, 2] (user, item) pairs) or ``user_item_train_dict.npy`` (pickled
  ``dict[user] -> set(item)``): the training interactions;
* ``user_item_dict.npy`` (the seed system's ``main.py`` reads this one) or else
  ``user_item_all_dict.npy`` (the original's): pickled ``dict[user] -> items`` that negatives
  avoid, together with the training interactions; ``dataset.notes`` says which file was used;
* ``{val,test}_{full,warm,cold}.npy``: one row ``[user, item, item, ...]`` per user, giving
  the held-out groups ``all``, ``warm`` and ``cold``;
* ``warm_set.npy``, ``cold_set.npy``: item ids; without ``cold_set`` every item with no
  training interaction is cold;
* ``feat_v``, ``feat_a``, ``feat_t`` (``.npy`` or ``.pt``): the modalities ``visual``,
  ``acoustic`` and ``text``; an integer ``[2, nnz]`` ``feat_t`` holds (item, word) pairs.

Most of these ``.npy`` files are pickles, which run code when loaded, so they are read only
with ``trust_pickle=True``. ``convert`` writes the same dataset as ``coldbrew.json`` plus an
``arrays.npz`` of plain numeric arrays, which ``load`` reads without pickle.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import SPLITS, Dataset, Feature, WordIds, interactions_to_csr
from coldbrew.data.loaders import stored
from coldbrew.data.loaders.stored import MANIFEST_FILE, save
from coldbrew.errors import DataError

TRAIN_FILES = ("train.npy", "user_item_train_dict.npy")
KNOWN_FILES = ("user_item_dict.npy", "user_item_all_dict.npy")  # negatives avoid the first found
SPLIT_GROUPS = {"full": "all", "warm": "warm", "cold": "cold"}  # file suffix -> group
MODALITIES = {"feat_v": "visual", "feat_a": "acoustic", "feat_t": "text"}

Pairs = tuple[np.ndarray, np.ndarray]  # (users, items) as written in the files


def detect(path: Path) -> bool:
    """A CLCRec folder (a training file) or a folder written by ``convert``."""
    return any((Path(path) / name).is_file() for name in (*TRAIN_FILES, MANIFEST_FILE))


def load(
    path: Path,
    *,
    trust_pickle: bool = False,
    features: Sequence[str] | None = None,
    seed: int = 0,
    **options,
) -> Dataset:
    """Read a CLCRec folder (pickles only with ``trust_pickle``) or a converted one."""
    del seed  # the files fix every split: nothing here is random
    path = Path(path)
    if options:
        raise DataError(f"{path}: the CLCRec layout takes no options (got {', '.join(options)})")
    if not path.is_dir():
        raise DataError(f"{path}: no such dataset directory")
    if isinstance(features, str):
        features = [name.strip() for name in features.split(",") if name.strip()]
    if (path / MANIFEST_FILE).is_file():
        try:
            return stored.load(path, features)
        except (KeyError, TypeError) as error:
            raise DataError(f"{path}: incomplete converted dataset ({error!r})") from error
    return _load_clcrec(path, trust_pickle, features)


def convert(src: Path, dst: Path, *, trust_pickle: bool) -> Path:
    """Load the dataset at ``src`` and write it to the new folder ``dst`` without pickles."""
    stored.refuse_existing(Path(dst))
    return save(load(src, trust_pickle=trust_pickle), dst)


# ---------------------------------------------------------------------------- reading files
def _read_npy(file: Path, trust_pickle: bool) -> np.ndarray:
    """A ``.npy`` array; files that need unpickling are read only with ``trust_pickle``."""
    needs_pickle = _needs_pickle(file)
    if needs_pickle and not trust_pickle:
        raise DataError(
            f"{file} is a pickle, which can execute code when loaded; pass --trust-pickle if you "
            "trust its source (or convert it once: coldbrew data convert --trust-pickle SRC DST)"
        )
    try:
        return np.load(file, allow_pickle=needs_pickle)
    except Exception as error:  # a damaged file can fail in many ways; report it in one line
        raise DataError(f"{file}: cannot read ({error})") from error


def _needs_pickle(file: Path) -> bool:
    """Whether ``np.load`` must unpickle: no ``.npy`` header, or an object dtype."""
    with open(file, "rb") as handle:
        try:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                header = np.lib.format.read_array_header_1_0(handle)
            else:
                header = np.lib.format.read_array_header_2_0(handle)
        except ValueError:
            return True
    return bool(header[2].hasobject)


def _as_ids(values: np.ndarray, file: Path) -> np.ndarray:
    """Integer ids as int64; whole-valued floats are accepted, anything else is an error."""
    values = np.asarray(values)
    if values.dtype == object:
        values = np.asarray(values.tolist())
    if np.issubdtype(values.dtype, np.integer):
        return values.astype(np.int64, copy=False)
    if (
        np.issubdtype(values.dtype, np.floating)
        and np.isfinite(values).all()  # inf equals its own rounding, and casts to garbage
        and np.array_equal(values, np.round(values))
    ):
        return values.astype(np.int64)
    raise DataError(f"{file}: expected integer ids, found dtype {values.dtype}")


def _pairs_from_dict(array: np.ndarray, file: Path) -> Pairs:
    """``dict[user] -> iterable of items`` -> flat (users, items)."""
    mapping = array.item() if array.dtype == object and array.ndim == 0 else None
    if not isinstance(mapping, dict):
        raise DataError(f"{file}: expected a pickled dict user -> items")
    try:
        users = np.fromiter(mapping.keys(), dtype=np.int64, count=len(mapping))
        lengths = np.fromiter(map(len, mapping.values()), dtype=np.int64, count=len(mapping))
        total = int(lengths.sum())
        items = np.fromiter(chain.from_iterable(mapping.values()), dtype=np.int64, count=total)
    except (TypeError, ValueError) as error:
        raise DataError(f"{file}: user -> items dict holds non-integer ids ({error})") from error
    return np.repeat(users, lengths), items


def _pairs_from_rows(rows: np.ndarray, file: Path) -> Pairs:
    """Rows ``[user, item, item, ...]`` (an object array, or a 2-D integer one) -> pairs."""
    if rows.dtype != object:
        if rows.ndim != 2 or rows.shape[1] == 0:
            raise DataError(f"{file}: expected rows [user, item, ...], found shape {rows.shape}")
        rows = _as_ids(rows, file)
        return np.repeat(rows[:, 0], rows.shape[1] - 1), rows[:, 1:].ravel()
    try:
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    except (TypeError, ValueError) as error:
        raise DataError(
            f"{file}: rows must be [user, item, ...] integer lists ({error})"
        ) from error
    starts = (np.cumsum(lengths) - lengths)[lengths > 0]  # where each non-empty row begins
    is_item = np.ones(len(flat), dtype=bool)
    is_item[starts] = False
    return np.repeat(flat[starts], lengths[lengths > 0] - 1), flat[is_item]


def _read_interactions(path: Path, trust_pickle: bool) -> dict[str, Pairs]:
    """Every interaction file present, by file name; the training file is listed first."""
    pairs: dict[str, Pairs] = {}
    if (path / "train.npy").is_file():
        array = _read_npy(path / "train.npy", trust_pickle)
        if array.ndim != 2 or array.shape[1] != 2:
            raise DataError(f"{path / 'train.npy'}: expected [n, 2] pairs, found {array.shape}")
        array = _as_ids(array, path / "train.npy")
        pairs["train.npy"] = (array[:, 0], array[:, 1])
    elif (path / "user_item_train_dict.npy").is_file():
        file = path / "user_item_train_dict.npy"
        pairs[file.name] = _pairs_from_dict(_read_npy(file, trust_pickle), file)
    else:
        raise DataError(f"{path}: no training file ({' or '.join(TRAIN_FILES)})")
    for name in KNOWN_FILES:
        if (path / name).is_file():
            pairs[name] = _pairs_from_dict(_read_npy(path / name, trust_pickle), path / name)
            break
    for split in SPLITS:
        for suffix in SPLIT_GROUPS:
            file = path / f"{split}_{suffix}.npy"
            if file.is_file():
                pairs[file.name] = _pairs_from_rows(_read_npy(file, trust_pickle), file)
    return pairs


# ---------------------------------------------------------------------------- assembling
def _count(
    path: Path, pairs: dict[str, Pairs], item_sets: dict[str, np.ndarray]
) -> tuple[int, int]:
    """(num_users, num_items) from the largest ids; item ids must start at num_users."""
    for name, (users, _) in pairs.items():
        if len(users) and users.min() < 0:
            raise DataError(f"{path / name}: negative user id {int(users.min())}")
    num_users = 1 + max((int(users.max()) for users, _ in pairs.values() if len(users)), default=-1)
    item_arrays = {name: items for name, (_, items) in pairs.items()} | item_sets
    for name, items in item_arrays.items():
        if len(items) and items.min() < num_users:
            raise DataError(
                f"{path / name}: item id {int(items.min())} is below {num_users}, the number of "
                "users (CLCRec item ids start at num_users)"
            )
    last_item = max((int(items.max()) for items in item_arrays.values() if len(items)), default=-1)
    return num_users, max(0, last_item + 1 - num_users)


def _cold_items(
    path: Path, item_sets: dict[str, np.ndarray], train: sp.csr_matrix, offset: int
) -> np.ndarray:
    """Internal ids of the cold set, or of every item without training interactions."""
    warm, cold = item_sets.get("warm_set.npy"), item_sets.get("cold_set.npy")
    if warm is not None and cold is not None:
        both = np.intersect1d(warm, cold)
        if len(both):
            raise DataError(
                f"{path}: {len(both)} item(s) are in both warm_set.npy and cold_set.npy "
                f"(e.g. item id {int(both[0])})"
            )
    if cold is not None:
        return cold - offset
    trained = np.zeros(train.shape[1], dtype=bool)
    trained[train.indices] = True
    return np.flatnonzero(~trained)


def _load_clcrec(path: Path, trust_pickle: bool, wanted: Sequence[str] | None) -> Dataset:
    pairs = _read_interactions(path, trust_pickle)
    item_sets = {
        name: _as_ids(_read_npy(path / name, trust_pickle).ravel(), path / name)
        for name in ("warm_set.npy", "cold_set.npy")
        if (path / name).is_file()
    }
    num_users, num_items = _count(path, pairs, item_sets)
    if num_users == 0 or num_items == 0:
        raise DataError(f"{path}: no interactions ({num_users} users, {num_items} items)")

    def matrix(name: str) -> sp.csr_matrix:
        users, items = pairs[name]
        return interactions_to_csr(users, items - num_users, (num_users, num_items))

    train = matrix(next(iter(pairs)))
    known_file = next((name for name in KNOWN_FILES if name in pairs), None)
    known = None
    if known_file is not None:  # train is included so negatives can never be training items
        known = matrix(known_file).maximum(train).tocsr()
        known.sort_indices()
    splits: dict[str, dict[str, sp.csr_matrix]] = {}
    for split in SPLITS:
        for suffix, group in SPLIT_GROUPS.items():
            name = f"{split}_{suffix}.npy"
            if name in pairs and len(pairs[name][1]):  # an empty group is left out
                splits.setdefault(split, {})[group] = matrix(name)
    notes: list[str] = []
    features = _read_features(path, trust_pickle, wanted, (num_users, num_items), notes)
    notes.append(_exclusion_note(path, known_file))
    return Dataset(
        name=path.resolve().name,
        num_users=num_users,
        num_items=num_items,
        train=train,
        cold_items=_cold_items(path, item_sets, train, num_users),
        splits=splits,
        features=features,
        user_ids=np.arange(num_users, dtype=np.int64),
        item_ids=np.arange(num_items, dtype=np.int64) + num_users,
        known=known,
        notes=notes,
    )


def _exclusion_note(path: Path, known_file: str | None) -> str:
    """Which file the negatives avoid, for ``dataset.notes``."""
    if known_file is None:
        return f"negatives avoid the training interactions only (no {' or '.join(KNOWN_FILES)})"
    note = f"negatives avoid {known_file} and the training interactions"
    unused = [name for name in KNOWN_FILES if name != known_file and (path / name).is_file()]
    if unused:
        note += f" ({unused[0]} is present too and not read: {known_file} comes first)"
    return note


# ---------------------------------------------------------------------------- features
def _read_features(
    path: Path,
    trust_pickle: bool,
    wanted: Sequence[str] | None,
    counts: tuple[int, int],
    notes: list[str],
) -> dict[str, Feature]:
    """The selected modalities (all present ones when ``wanted`` is None)."""
    files: dict[str, Path] = {}
    for stem, modality in MODALITIES.items():
        present = [
            path / f"{stem}{ext}" for ext in (".npy", ".pt") if (path / f"{stem}{ext}").is_file()
        ]
        if present:
            files[modality] = present[0]
    if wanted is None:
        missing = [
            f"{modality} ({stem})" for stem, modality in MODALITIES.items() if modality not in files
        ]
        if missing:
            message = f"{path.name}: no feature file for {', '.join(missing)}; loading without"
            warnings.warn(message, stacklevel=4)
            notes.append(message)
        wanted = list(files)
    for modality in wanted:
        if modality not in files:
            stem = {name: stem for stem, name in MODALITIES.items()}.get(modality)
            if stem is None:
                known = ", ".join(MODALITIES.values())
                raise DataError(f"{path}: unknown feature {modality!r}; this layout has {known}")
            raise DataError(
                f"{path}: feature {modality!r} asked for, but {stem}.npy/.pt is missing"
            )
    return {modality: _read_feature(files[modality], trust_pickle, counts) for modality in wanted}


def _read_feature(file: Path, trust_pickle: bool, counts: tuple[int, int]) -> Feature:
    """A dense float32 ``(num_items, d)`` tensor, or ``WordIds`` for ``[2, nnz]`` integers."""
    num_users, num_items = counts
    if file.suffix == ".pt":
        try:
            value = torch.load(file, map_location="cpu", weights_only=True)
        except Exception as error:  # torch raises many types for bad or unsafe files
            raise DataError(f"{file}: cannot read as a tensor file ({error})") from error
    else:
        array = _read_npy(file, trust_pickle)
        value = array.item() if array.dtype == object and array.ndim == 0 else array
    try:
        value = torch.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value)
    except (TypeError, ValueError, RuntimeError) as error:
        raise DataError(f"{file}: expected a numeric matrix ({error})") from error
    is_integer = not value.is_floating_point() and value.dtype != torch.bool
    if is_integer and value.dim() == 2 and value.shape[0] == 2 and num_items != 2:
        return _word_ids(value.long(), file, num_users, num_items)
    if value.dim() != 2 or value.shape[0] != num_items:
        raise DataError(
            f"{file}: shape {tuple(value.shape)}, but the interaction files name {num_items} "
            f"items; expected ({num_items}, d)"
        )
    value = value.to(torch.float32).contiguous()
    if not torch.isfinite(value).all():
        raise DataError(f"{file}: contains NaN or inf values")
    return value


def _word_ids(pairs: torch.Tensor, file: Path, num_users: int, num_items: int) -> WordIds:
    """Rows (item, word); item ids are offset by num_users when every one is >= num_users."""
    items, words = pairs[0].contiguous(), pairs[1].contiguous()  # (nnz,), (nnz,)
    if items.numel() and (int(items.min()) >= num_users or int(items.max()) >= num_items):
        items = items - num_users
    if items.numel() and (int(items.min()) < 0 or int(items.max()) >= num_items):
        raise DataError(f"{file}: word-id item index out of range for {num_items} items")
    if words.numel() and int(words.min()) < 0:
        raise DataError(f"{file}: negative word id {int(words.min())}")
    num_words = int(words.max()) + 1 if words.numel() else 0
    return WordIds(item_index=items, word_index=words, num_words=num_words)
