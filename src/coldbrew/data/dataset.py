"""The one in-memory form every loader produces.

Items and users are indexed ``0..n-1`` internally. Training interactions and every held-out
group are ``scipy.sparse.csr_matrix`` of shape ``(num_users, num_items)`` (row = user, column =
item, value 1); the trainer and evaluator move the index arrays to the device they need.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.matrices import interactions_to_csr  # noqa: F401 - loaders import it here
from coldbrew.errors import DataError

SPLITS = ("val", "test")  # what loaders produce
# what is evaluated: "report" is carved out of a loader's "val" (``coldbrew.data.splits.selection``):
# every choice reads "val" (the selection half), every reported figure "report" (and "test")
EVALUATION_SPLITS = ("val", "report", "test")
GROUPS = ("all", "warm", "cold")
# Loaders draw their splits with this seed unless told otherwise: the training default
# (``TrainConfig.seed``), so ``data info``, ``bench`` and ``train`` describe the same split.
DEFAULT_SEED = 1
# Every seed is in 0..2**32 - 1: the largest range that numpy's legacy ``np.random.seed`` (used
# by the trainer), ``np.random.default_rng`` and ``torch.manual_seed`` all accept.
MAX_SEED = 2**32 - 1


def check_seed(seed: object) -> int:
    """``seed`` as an ``int`` when it is a whole number in ``0..MAX_SEED``, else a ``DataError``.

    >>> check_seed(7)
    7
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise DataError(f"seed must be a whole number from 0 to 2**32 - 1, got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise DataError(f"seed must be from 0 to 2**32 - 1 ({MAX_SEED}), got {int(seed)}")
    return int(seed)


@dataclass(frozen=True)
class WordIds:
    """Text given as word ids (TikTok style): item ``item_index[j]`` contains word ``word_index[j]``.

    Models turn this into a learned word table mean-pooled per item.
    """

    item_index: torch.Tensor  # (nnz,) int64
    word_index: torch.Tensor  # (nnz,) int64
    num_words: int


Feature = torch.Tensor | WordIds


@dataclass
class Dataset:
    """Interactions, splits and item content of one dataset, in internal index order."""

    name: str
    num_users: int
    num_items: int
    train: sp.csr_matrix
    cold_items: np.ndarray  # sorted int64 internal item ids with no training interactions
    splits: dict[str, dict[str, sp.csr_matrix]] = field(default_factory=dict)
    features: dict[str, Feature] = field(default_factory=dict)
    user_ids: np.ndarray | None = None  # internal -> source id
    item_ids: np.ndarray | None = None  # internal -> source id
    known: sp.csr_matrix | None = None  # every known interaction (negatives avoid these)
    notes: list[str] = field(default_factory=list)
    item_text: list[str] | None = None  # one text per item, when the source has titles
    # each item's plain title where item_text labels its fields (coldbrew.data.titles)
    item_titles: list[str] | None = None
    # the text columns whose vectors lie side by side in the text block, when each column
    # was encoded apart (the general layout's text_mode: per_column); None: one joined text
    text_fields: list[str] | None = None
    user_text: list[str] | None = None  # one text per user, when the source describes users
    selection: dict | None = (
        None  # how val was cut into select/report (coldbrew.data.splits.selection)
    )
    cross_validation: dict | None = (
        None  # the fold this is, when it is one (coldbrew.data.splits.folds)
    )
    # the names of a dense block's columns, in column order, where the source names them
    # (genre flags); loaders may name blocks not loaded: only the loaded ones are kept
    feature_columns: dict[str, list[str]] = field(default_factory=dict)
    # each item's first interaction (seconds; NaN where unknown), where the source has times
    item_first_seen: np.ndarray | None = None
    # which items a run made cold and how (coldbrew.data.splits.cold_split); None: the source's own
    cold_split: dict | None = None
    # other cold items ranked beside a split's own under own-split candidates (sorted ids), where
    # a split has them: a fold's val drawn up to test's size (coldbrew.data.splits.folds)
    split_padding: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_frames(cls, interactions, items=None, **columns) -> Dataset:
        """A dataset from pandas frames with named columns: ``user``, ``item`` (default names),
        ``text=[...]``, ``categories=[...]``, ``numeric=[...]`` of the items table; see
        ``coldbrew.data.tables.frames.dataset_fields`` for every option.

        >>> import pandas as pd
        >>> frame = pd.DataFrame({"user": ["ann", "bob", "bob"], "item": ["sku-1", "sku-1", "sku-2"]})
        >>> data = Dataset.from_frames(frame)
        >>> data.describe(), list(data.item_ids)
        ('2 users, 2 items, 3 interactions', ['sku-1', 'sku-2'])
        """
        from coldbrew.data.tables.frames import dataset_fields

        return cls(**dataset_fields(interactions, items, **columns))

    def __post_init__(self) -> None:
        self.cold_items = np.unique(np.asarray(self.cold_items, dtype=np.int64))
        self.feature_columns = {
            name: list(columns)
            for name, columns in self.feature_columns.items()
            if name in self.features
        }
        self.validate()

    def feature_layout(self, skip: tuple[str, ...] = ()) -> list[dict]:
        """A new item's raw vector, block by block in the order models join them (the dense
        blocks, ``skip`` left out): ``[{"block", "width", "columns"?}]``, ``columns`` naming
        each column where the source names them."""
        layout = []
        for name, feature in self.features.items():
            if isinstance(feature, torch.Tensor) and name not in skip:
                entry = {"block": name, "width": int(feature.shape[1])}
                if name in self.feature_columns:
                    entry["columns"] = list(self.feature_columns[name])
                layout.append(entry)
        return layout

    # ------------------------------------------------------------------ derived views
    @property
    def cold_mask(self) -> np.ndarray:
        mask = np.zeros(self.num_items, dtype=bool)
        mask[self.cold_items] = True
        return mask

    @property
    def warm_items(self) -> np.ndarray:
        return np.flatnonzero(~self.cold_mask)

    @property
    def num_train(self) -> int:
        return int(self.train.nnz)

    def exclusion_matrix(self) -> sp.csr_matrix:
        """Items a negative may never be for each user: everything known about them."""
        return self.known if self.known is not None else self.train

    def groups(self, split: str) -> dict[str, sp.csr_matrix]:
        if split not in EVALUATION_SPLITS:
            raise DataError(
                f"unknown split {split!r}; expected one of {', '.join(EVALUATION_SPLITS)}"
            )
        return self.splits.get(split, {})

    def own_cold_items(self, split: str) -> np.ndarray:
        """The cold items among ``split``'s held-out positives (sorted ids)."""
        held_out = [matrix.indices for matrix in self.groups(split).values()]
        return np.intersect1d(self.cold_items, np.concatenate([[], *held_out]).astype(np.int64))

    def describe(self) -> str:
        return f"{self.num_users} users, {self.num_items} items, {self.num_train} interactions"

    def summary(self) -> dict:
        """Counts a person wants to see first (printed by ``coldbrew data info`` and the demo)."""
        out = {
            "name": self.name,
            "users": self.num_users,
            "items": self.num_items,
            "warm_items": int(self.num_items - len(self.cold_items)),
            "cold_items": int(len(self.cold_items)),
            "train_interactions": self.num_train,
            "density": self.num_train / max(1, self.num_users * self.num_items),
            "features": {
                name: (list(f.shape) if isinstance(f, torch.Tensor) else f"words:{f.num_words}")
                for name, f in self.features.items()
            },
        }
        if self.feature_columns:
            out["feature_columns"] = {k: list(v) for k, v in self.feature_columns.items()}
        for split in EVALUATION_SPLITS:
            for group, matrix in self.groups(split).items():
                out[f"{split}_{group}"] = {
                    "users": int(np.count_nonzero(np.diff(matrix.indptr))),
                    "items": int(len(np.unique(matrix.indices))),
                    "interactions": int(matrix.nnz),
                }
        if self.cold_split is not None:
            out["cold_split"] = dict(self.cold_split)
        if self.selection is not None:
            out["selection"] = {
                key: self.selection[key] for key in ("report_share", "selection_seed")
            }
        if self.cross_validation is not None:
            keys = "folds fold fold_seed fold_candidates val_candidates users_left_out".split()
            out["cross_validation"] = {
                key: self.cross_validation[key] for key in keys if key in self.cross_validation
            }
        return out

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise ``DataError`` with a one-line reason when anything is inconsistent."""
        if self.num_users <= 0 or self.num_items <= 0:
            raise DataError(
                f"{self.name}: empty dataset ({self.num_users} users, {self.num_items} items)"
            )
        expected = (self.num_users, self.num_items)
        _check_matrix(self.train, expected, f"{self.name}: training interactions")
        if self.train.nnz == 0:
            raise DataError(f"{self.name}: no training interactions")
        if len(self.cold_items) and (
            self.cold_items[0] < 0 or self.cold_items[-1] >= self.num_items
        ):
            raise DataError(f"{self.name}: cold item id out of range 0..{self.num_items - 1}")
        trained_cold = np.intersect1d(np.unique(self.train.indices), self.cold_items)
        if len(trained_cold):
            raise DataError(
                f"{self.name}: {len(trained_cold)} cold item(s) have training interactions "
                f"(e.g. internal item {int(trained_cold[0])}); an item cannot be both warm and cold"
            )
        if self.known is not None:
            _check_matrix(self.known, expected, f"{self.name}: known interactions")
        for split, groups in self.splits.items():
            if split not in EVALUATION_SPLITS:
                raise DataError(f"{self.name}: unknown split {split!r}")
            for group, matrix in groups.items():
                if group not in GROUPS:
                    raise DataError(f"{self.name}: unknown group {group!r} in split {split!r}")
                _check_matrix(matrix, expected, f"{self.name}: {split}/{group}")
                if matrix.nnz == 0:
                    raise DataError(f"{self.name}: split {split}/{group} is empty")
        for name, feature in self.features.items():
            _check_feature(name, feature, self.num_items, self.name)
        for name, columns in self.feature_columns.items():
            feature = self.features[name]
            if not isinstance(feature, torch.Tensor) or feature.shape[1] != len(columns):
                raise DataError(f"{self.name}: feature {name!r} has other columns than its names")
        for what, texts, count in (
            ("item_text", self.item_text, self.num_items),
            ("item_titles", self.item_titles, self.num_items),
            ("user_text", self.user_text, self.num_users),
        ):
            if texts is not None and len(texts) != count:
                raise DataError(f"{self.name}: {what} has {len(texts)} entries, expected {count}")
        if self.item_first_seen is not None and len(self.item_first_seen) != self.num_items:
            raise DataError(f"{self.name}: item_first_seen has another length than the items")


def describe_layout(layout: list[dict]) -> str:
    """``genre: 19 columns (Action, Adventure, ..., unknown), then text: 384 columns``."""
    if not layout:
        return "no dense feature blocks"
    parts = []
    for entry in layout:
        named = f" ({', '.join(entry['columns'])})" if entry.get("columns") else ""
        plural = "" if entry["width"] == 1 else "s"
        parts.append(f"{entry['block']}: {entry['width']} column{plural}{named}")
    return ", then ".join(parts)


def _check_matrix(matrix: sp.csr_matrix, shape: tuple[int, int], what: str) -> None:
    if not sp.isspmatrix_csr(matrix):
        raise DataError(f"{what}: expected a CSR matrix, got {type(matrix).__name__}")
    if matrix.shape != shape:
        raise DataError(f"{what}: shape {matrix.shape} does not match (users, items) = {shape}")


def _check_feature(name: str, feature: Feature, num_items: int, dataset: str) -> None:
    if isinstance(feature, WordIds):
        if feature.item_index.numel() and int(feature.item_index.max()) >= num_items:
            raise DataError(f"{dataset}: feature {name!r} names an item id >= {num_items}")
        return
    if feature.dim() != 2 or feature.shape[0] != num_items:
        raise DataError(
            f"{dataset}: feature {name!r} has shape {tuple(feature.shape)}; "
            f"expected ({num_items}, d), one row per item"
        )
    if not torch.isfinite(feature).all():
        raise DataError(f"{dataset}: feature {name!r} contains NaN or inf values")
