"""Strict item cold-start splits stored as CSV (e.g. ``ml-1m-coldstart``).

Files (``uid,iid`` headers unless noted; names and values may be double-quoted, and every row
must have as many fields as its header, see ``coldbrew.data.tables.csv_files``):

- ``train.csv``: training interactions; an item in it is *warm*.
- ``cold_val.csv`` and, when present, ``cold_test.csv``: interactions on cold items only.
- ``items.csv`` (``iid,title,genres``, genres ``|``-separated): the whole catalogue.
- ``movies_extrainfos.dat`` (optional, ``::``-separated, keyed by MovieLens id): director, cast
  and plot, joined to ``items.csv`` by normalised title and year (see ``match_extra_info``).

Ids are integers, or text (``item1``, a SKU), one type per kind in every file: ``uid`` and
``iid`` are integers when every one parses as an integer (``007`` is 7), text when none does,
and a mix is refused naming its file and line (``coldbrew.data.tables.csv_files.id_values``);
``Dataset.user_ids`` / ``item_ids`` give them back (int64, or an object array of ``str``).
Internal item ids follow the sorted ``iid`` of ``items.csv``; internal user ids the sorted ``uid``
over every interaction file. Cold items are all items without a training interaction, so with
``cold_test.csv`` absent its items still count as cold candidates (the CLCRec protocol ranks
validation cold items against every cold item). Validation and test hold one group, ``cold``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from coldbrew.data.dataset import DEFAULT_SEED, Dataset, check_seed, interactions_to_csr
from coldbrew.data.features import (
    TEXT_OPTIONS,
    TextEncoding,
    check_options,
    display_title,
    genre_columns,
    genre_multi_hot,
    item_texts,
    normalise_title,
    select_features,
    text_embeddings,
    title_keys,
)
from coldbrew.data.tables.content import shown
from coldbrew.data.tables.csv_files import (
    data_line,
    header_positions,
    id_values,
    read_pairs,
    read_text,
)
from coldbrew.errors import DataError

EXTRA_INFO_FILE = "movies_extrainfos.dat"
EXTRA_INFO_FIELDS = (
    11  # id::title::year::rated::released::genres::director::writers::actors::plot::poster
)
LOADER_OPTIONS = TEXT_OPTIONS


def detect(path: Path) -> bool:
    return (path / "train.csv").is_file() and (path / "cold_val.csv").is_file()


def load(
    path: Path,
    *,
    features: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    **options,
) -> Dataset:
    """Read the CSV split at ``path``; ``options``: ``progress`` and ``text_batch_size`` (text encoder).

    ``seed`` is checked like everywhere else but draws nothing: the files fix every split.
    """
    check_seed(seed)
    check_options(path.name, options, LOADER_OPTIONS)
    encoding = TextEncoding.of(options)
    notes: list[str] = []
    item_ids, titles, genres = read_items(path / "items.csv")
    user_ids, matrices = _read_interactions(path, item_ids, notes)
    shape = (len(user_ids), len(item_ids))
    warm = np.unique(matrices["train"].indices)
    extra = {}
    if (path / EXTRA_INFO_FILE).is_file():
        extra, note = match_extra_info(titles, read_extra_info(path / EXTRA_INFO_FILE))
        notes.append(note)
    texts = item_texts([display_title(title) for title in titles], genres, extra)
    empty = [iid for iid, text in zip(item_ids, texts, strict=True) if text == "."]
    if empty:
        notes.append(
            f"items.csv: {len(empty)} item(s) have no title and no genres (e.g. iid "
            f"{shown(empty[0])}): "
            "their text is '.', which says nothing"
        )
    available = {
        "genre": lambda: genre_multi_hot(genres)[0],
        "text": lambda: text_embeddings(texts, encoding),
    }
    return Dataset(
        name=path.name,
        num_users=shape[0],
        num_items=shape[1],
        train=matrices["train"],
        cold_items=np.setdiff1d(np.arange(shape[1]), warm),
        splits={split: {"cold": matrices[split]} for split in ("val", "test") if split in matrices},
        features=select_features(available, features, notes=notes),
        user_ids=user_ids,
        item_ids=item_ids,
        known=_union(list(matrices.values())),
        notes=notes,
        item_text=texts,
        feature_columns={"genre": genre_columns(genres)},
    )


def _read_interactions(
    path: Path, item_ids: np.ndarray, notes: list[str]
) -> tuple[np.ndarray, dict[str, sp.csr_matrix]]:
    """Sorted source user ids and ``{"train"|"val"|"test": csr}`` of the files present."""
    pair_files = {
        "train": path / "train.csv",
        "val": path / "cold_val.csv",
        "test": path / "cold_test.csv",
    }
    pairs = {name: read_pairs(file) for name, file in pair_files.items() if file.is_file()}
    if "test" not in pairs:
        notes.append("no cold_test.csv: test metrics skipped")
    _check_one_kind([(path / "items.csv", item_ids)], pairs, pair_files, 1, "iid")
    _check_one_kind([], pairs, pair_files, 0, "uid")
    user_ids = _sorted_unique(np.concatenate([users for users, _ in pairs.values()]))
    shape = (len(user_ids), len(item_ids))
    matrices = {}
    for name, (users, items) in pairs.items():
        internal_items = _internal_item_ids(items, item_ids, pair_files[name])
        matrices[name] = interactions_to_csr(_positions(user_ids, users), internal_items, shape)
    _check_cold_files(matrices, item_ids, pair_files, notes)
    return user_ids, matrices


def _check_one_kind(
    columns: list[tuple[Path, np.ndarray]],
    pairs: dict[str, tuple[np.ndarray, np.ndarray]],
    pair_files: dict[str, Path],
    at: int,
    what: str,
) -> None:
    """The ids ``what`` (column ``at`` of each pair file, after ``columns``) of one type in every
    file: integers everywhere or text everywhere."""
    columns = columns + [(pair_files[name], ids[at]) for name, ids in pairs.items()]
    columns = [(file, ids) for file, ids in columns if len(ids)]
    if not columns:
        return
    first_file, first = columns[0]
    integer = first.dtype.kind == "i"
    for file, ids in columns[1:]:
        if (ids.dtype.kind == "i") != integer:
            kinds = ("text", "integers") if integer else ("an integer", "text")
            raise DataError(
                f"{file}, line {data_line(file, 0)}: uid and iid must be integers, or every "
                f"{what} text: {what} {shown(ids[0])} is {kinds[0]} but {first_file.name}'s "
                f"{what}s are {kinds[1]}"
            )


def _internal_item_ids(items: np.ndarray, item_ids: np.ndarray, file: Path) -> np.ndarray:
    positions = _positions(item_ids, items).clip(0, len(item_ids) - 1)
    unknown = item_ids[positions] != items
    if unknown.any():
        first = int(np.argmax(unknown))
        raise DataError(
            f"{file}: {len(np.unique(items[unknown]))} iid(s) not in items.csv "
            f"(e.g. {shown(items[first])}) from line {data_line(file, first)}; items.csv must "
            "list every item"
        )
    return positions


def _sorted_unique(ids: np.ndarray) -> np.ndarray:
    """``np.unique``; text ids through pandas' hash table, sorting each distinct id once."""
    return np.unique(ids) if ids.dtype.kind == "i" else np.sort(pd.unique(ids))


def _positions(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Where each of ``ids`` sits in ``sorted_ids`` (text ids by hash: -1 where absent)."""
    if sorted_ids.dtype.kind == "i":
        return np.searchsorted(sorted_ids, ids)
    return pd.Index(sorted_ids).get_indexer(ids)


def _check_cold_files(
    matrices: dict[str, sp.csr_matrix],
    item_ids: np.ndarray,
    pair_files: dict[str, Path],
    notes: list[str],
) -> None:
    """Cold files may only name items that never occur in training."""
    warm = np.unique(matrices["train"].indices)
    cold_sets = {}
    for split in ("val", "test"):
        if split not in matrices:
            continue
        cold_sets[split] = np.unique(matrices[split].indices)
        both = np.intersect1d(cold_sets[split], warm)
        if len(both):
            raise DataError(
                f"{pair_files[split]}: {len(both)} item(s) both warm and cold, i.e. also in "
                f"train.csv (e.g. iid {shown(item_ids[both[0]])})"
            )
    if len(cold_sets) == 2:
        shared = np.intersect1d(cold_sets["val"], cold_sets["test"])
        if len(shared):
            notes.append(f"{len(shared)} cold item(s) occur in both cold_val.csv and cold_test.csv")


def _union(matrices: list[sp.csr_matrix]) -> sp.csr_matrix:
    total = matrices[0]
    for matrix in matrices[1:]:
        total = total + matrix
    total = sp.csr_matrix(total)
    total.data[:] = 1.0
    total.sort_indices()
    return total


# ---------------------------------------------------------------------------------- reading
def read_items(path: Path) -> tuple[np.ndarray, list[str], list[list[str]]]:
    """Sorted ``iid`` array (int64 or text, ``id_values``) with the matching titles and genre
    lists from ``items.csv``."""
    rows = list(csv.reader(read_text(path).splitlines()))
    if not rows:
        raise DataError(f"{path}: empty file; expected a header line 'iid,title,genres'")
    iid_at, title_at, genres_at = header_positions(path, rows[0], ("iid", "title", "genres"))
    iids, lines, titles, genres = [], [], [], []
    for number, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(rows[0]):
            raise DataError(
                f"{path}, line {number}: expected {len(rows[0])} fields, got {len(row)}"
            )
        iids.append(row[iid_at])
        lines.append(number)
        titles.append(row[title_at].strip())
        genres.append(
            [
                g.strip()
                for g in row[genres_at].split("|")
                if g.strip() and g.strip() != "(no genres listed)"
            ]
        )
    if not iids:
        raise DataError(f"{path}: no items after the header")
    ids = id_values(path, iids, lines.__getitem__, "iid", "iid must be an integer")
    repeated = pd.Series(ids).duplicated().to_numpy()
    if repeated.any():
        first = int(np.argmax(repeated))
        raise DataError(f"{path}, line {lines[first]}: iid {shown(ids[first])} listed twice")
    order = np.argsort(ids, kind="stable")
    return ids[order], [titles[i] for i in order], [genres[i] for i in order]


# ---------------------------------------------------------------------------------- titles
def read_extra_info(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """``(normalised title, year) -> {director, cast, plot}`` from ``movies_extrainfos.dat``."""
    info: dict[tuple[str, str], dict[str, str]] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("::")
        if len(fields) != EXTRA_INFO_FIELDS:
            raise DataError(
                f"{path}, line {number}: expected {EXTRA_INFO_FIELDS} '::'-separated fields, got {len(fields)}"
            )
        known = {key: fields[at].strip() for key, at in (("director", 6), ("cast", 8), ("plot", 9))}
        known = {key: value for key, value in known.items() if value and value != "N/A"}
        info.setdefault((normalise_title(fields[1]), fields[2].strip()), known)
    return info


def match_extra_info(
    titles: list[str], info: dict[tuple[str, str], dict[str, str]]
) -> tuple[dict[int, dict[str, str]], str]:
    """Per item position, the extra fields whose title and year match, and a note with counts.

    Each catalogue title ``"Postman, The (Postino, Il) (1994)"`` is tried as its main title and
    every parenthesised alternative (articles moved to the front, accents, case and punctuation
    ignored) with its year, then with the year off by one (release years differ between sources).
    """
    matched: dict[int, dict[str, str]] = {}
    off_by_one = 0
    for position, title in enumerate(titles):
        candidates, year = title_keys(title)
        if year is None:
            continue
        for shift in (0, -1, 1):
            shifted = str(int(year) + shift)
            found = next(
                (info[(key, shifted)] for key in candidates if (key, shifted) in info), None
            )
            if found is not None:
                matched[position] = found
                off_by_one += shift != 0
                break
    note = (
        f"{EXTRA_INFO_FILE}: {len(matched):,} of {len(titles):,} items matched by title and year "
        f"({off_by_one} with the year off by one); the rest have title and genres only"
    )
    return matched, note
