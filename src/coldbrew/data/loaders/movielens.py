"""Raw MovieLens-100K (``u.data``, ``u.item``) with a seeded item cold-start split.

Every rating is one implicit interaction (duplicate user-item pairs count once). Users are those
of ``u.user`` when it exists (ratings by anyone else are dropped, with a line in ``notes``),
otherwise those of ``u.data``; items are those of ``u.item``. ``user_ids``/``item_ids`` keep the
source ids.

Split protocol, all draws from ``rng = np.random.default_rng(seed)`` in this order:

1. ``order = rng.permutation(num_items)``; the first ``round(cold_fraction * num_items)``
   items (default 20%: 336 of 1,682) are *cold*. The first ``num_cold // 2`` of them are the
   validation cold items, the rest the test cold items. Every interaction on a validation cold
   item goes to ``val/cold``, on a test cold item to ``test/cold``; none is trained on.
2. The remaining (warm) interactions are shuffled with ``rng.permutation`` and split per user:
   a user with ``c`` warm interactions gives ``floor(0.1 c + 0.5)`` to ``val/warm``, as many to
   ``test/warm`` and the rest to ``train`` (users with fewer than 5 keep all of them in train).
3. ``val/all`` and ``test/all`` are the union of that split's warm and cold groups.

``cold_items`` is exactly the chosen cold items, even one without any rating; a warm item whose
few ratings all landed in val/test stays warm. Features: ``genre`` (the 19 flags of ``u.item``,
as columns sorted by name: Action ... Western, then ``unknown``; ``Dataset.feature_columns``
names them) and ``text`` (title and genres through the sentence encoder). With ``u.user``, ``user_text``
holds one sentence per user from its age, gender, occupation and zip code.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
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
    select_features,
    text_embeddings,
)
from coldbrew.data.tables.csv_files import integer_columns
from coldbrew.errors import DataError

GENRES = (
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime", "Documentary",
    "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi",
    "Thriller", "War", "Western",
)  # fmt: skip
LOADER_OPTIONS = ("cold_fraction", *TEXT_OPTIONS)


def detect(path: Path) -> bool:
    return (path / "u.data").is_file() and (path / "u.item").is_file()


def load(
    path: Path,
    *,
    features: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    **options,
) -> Dataset:
    """Read ``u.data``/``u.item`` at ``path`` and split them as the module docstring describes.

    ``options``: ``cold_fraction`` (0.2), ``progress`` and ``text_batch_size`` (text encoder).
    """
    check_options(path.name, options, LOADER_OPTIONS)
    encoding = TextEncoding.of(options)
    notes: list[str] = []
    genre_names = read_genre_names(path / "u.genre")
    item_ids, titles, genres = read_items(path / "u.item", genre_names)
    users, items = read_ratings(path / "u.data")
    user_ids = user_catalogue(path, users, notes)
    known_user = np.isin(users, user_ids)
    users, items = users[known_user], items[known_user]
    positions = item_positions(item_ids, items, path / "u.data")
    pairs = np.unique(np.searchsorted(user_ids, users) * len(item_ids) + positions)
    shape = (len(user_ids), len(item_ids))
    split = split_cold_start(
        pairs // shape[1], pairs % shape[1], shape, seed, options.get("cold_fraction", 0.2)
    )
    train, splits, cold_items = split
    texts = item_texts([display_title(title) for title in titles], genres)
    user_text = None
    if (path / "u.user").is_file():
        by_user = read_user_texts(path / "u.user")
        user_text = [by_user[int(user)] for user in user_ids]
    available = {
        "genre": lambda: genre_multi_hot(genres, genre_names)[0],
        "text": lambda: text_embeddings(texts, encoding),
    }
    return Dataset(
        name=path.name,
        num_users=shape[0],
        num_items=shape[1],
        train=train,
        cold_items=cold_items,
        splits=splits,
        features=select_features(available, features, notes=notes),
        user_ids=user_ids,
        item_ids=item_ids,
        known=interactions_to_csr(pairs // shape[1], pairs % shape[1], shape),
        notes=notes,
        item_text=texts,
        user_text=user_text,
        feature_columns={"genre": genre_columns(genres, genre_names)},
    )


def split_cold_start(
    users: np.ndarray,
    items: np.ndarray,
    shape: tuple[int, int],
    seed: int,
    cold_fraction: float = 0.2,
) -> tuple[sp.csr_matrix, dict[str, dict[str, sp.csr_matrix]], np.ndarray]:
    """``(train, {split: {group: csr}}, cold_items)`` for unique internal pairs; see module docstring."""
    if not 0.0 < cold_fraction < 1.0:
        raise DataError(f"cold_fraction must be between 0 and 1, got {cold_fraction}")
    rng = np.random.default_rng(check_seed(seed))
    num_items = shape[1]
    order = rng.permutation(num_items)
    num_cold = int(round(cold_fraction * num_items))
    cold_halves = {"val": order[: num_cold // 2], "test": order[num_cold // 2 : num_cold]}
    warm = ~np.isin(items, order[:num_cold])
    warm_part = _split_warm_per_user(users[warm], rng)  # 0 train, 1 val, 2 test
    warm_users, warm_items = users[warm], items[warm]
    train = interactions_to_csr(warm_users[warm_part == 0], warm_items[warm_part == 0], shape)
    splits: dict[str, dict[str, sp.csr_matrix]] = {}
    for code, split in ((1, "val"), (2, "test")):
        in_half = np.isin(items, cold_halves[split])
        chosen = {
            "warm": (warm_users[warm_part == code], warm_items[warm_part == code]),
            "cold": (users[in_half], items[in_half]),
        }
        chosen["all"] = tuple(np.concatenate(pair) for pair in zip(*chosen.values(), strict=True))
        splits[split] = {
            group: interactions_to_csr(group_users, group_items, shape)
            for group, (group_users, group_items) in chosen.items()
            if len(group_users)
        }
    return (
        train,
        {split: groups for split, groups in splits.items() if groups},
        np.sort(order[:num_cold]),
    )


def _split_warm_per_user(users: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """0/1/2 (train/val/test) per interaction: ``floor(0.1 c + 0.5)`` each to val and test per user."""
    shuffled = rng.permutation(len(users))
    by_user = shuffled[np.argsort(users[shuffled], kind="stable")]  # shuffled within each user
    counts = np.bincount(users, minlength=int(users.max(initial=0)) + 1)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(users), dtype=np.int64)
    rank[by_user] = np.arange(len(users)) - starts[users[by_user]]
    held_out = np.floor(0.1 * counts + 0.5).astype(np.int64)[users]
    count = counts[users]
    part = np.zeros(len(users), dtype=np.int8)
    part[rank >= count - 2 * held_out] = 1
    part[rank >= count - held_out] = 2
    return part


def item_positions(item_ids: np.ndarray, items: np.ndarray, source: Path) -> np.ndarray:
    """Internal indices of source ``items`` in the sorted ``item_ids``; an unknown item is an error."""
    positions = np.searchsorted(item_ids, items).clip(max=len(item_ids) - 1)
    if (item_ids[positions] != items).any():
        raise DataError(
            f"{source}: item {int(items[item_ids[positions] != items][0])} is not in u.item"
        )
    return positions


def user_catalogue(path: Path, users: np.ndarray, notes: list[str]) -> np.ndarray:
    """Users of ``u.user`` when present (noting ratings by anyone else), else of ``u.data``."""
    if not (path / "u.user").is_file():
        return np.unique(users)
    user_ids = np.unique(_read_ids(path / "u.user"))
    stray = ~np.isin(users, user_ids)
    if stray.any():
        notes.append(
            f"u.data: {int(stray.sum())} rating(s) by {len(np.unique(users[stray]))} user(s) not in "
            f"u.user (e.g. user {int(users[stray][0])}) dropped"
        )
    return user_ids


# ---------------------------------------------------------------------------------- reading
def _read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    return path.read_text(encoding="latin-1").splitlines()


def _read_ids(path: Path) -> np.ndarray:
    ids = []
    for number, line in enumerate(_read_lines(path), start=1):
        if line.strip():
            try:
                ids.append(int(line.split("|", 1)[0]))
            except ValueError:
                raise DataError(
                    f"{path}, line {number}: id must be an integer, got {line!r}"
                ) from None
    return np.asarray(ids, dtype=np.int64)


def read_user_texts(path: Path) -> dict[int, str]:
    """``user id -> "User: 24 years old, male, technician, zip code 85711."`` from ``u.user``
    (``id|age|gender|occupation|zip``)."""
    genders = {"M": "male", "F": "female"}
    texts = {}
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split("|")]
        if len(fields) != 5 or not fields[0].isdigit() or not fields[1].isdigit():
            raise DataError(
                f"{path}, line {number}: expected 'id|age|gender|occupation|zip', got {line!r}"
            )
        gender = genders.get(fields[2].upper(), fields[2])
        texts[int(fields[0])] = (
            f"User: {fields[1]} years old, {gender}, {fields[3]}, zip code {fields[4]}."
        )
    return texts


def read_ratings(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(users, items)`` of ``u.data`` (``user item rating timestamp``, whitespace-separated)."""
    rows = read_rating_rows(path)
    return rows[:, 0].copy(), rows[:, 1].copy()


def read_timestamped_ratings(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, timestamps)`` of ``u.data``; timestamps are Unix seconds (UTC)."""
    rows = read_rating_rows(path)
    return rows[:, 0].copy(), rows[:, 1].copy(), rows[:, 3].copy()


def read_rating_rows(path: Path) -> np.ndarray:
    """Every ``u.data`` line as ``(ratings, 4)`` int64 ``user, item, rating, timestamp``."""
    text = "\n".join(_read_lines(path)).strip()
    if not text:
        raise DataError(f"{path}: empty file")
    values = integer_columns(text, 4, [0, 1, 2, 3], separator=r"\s+")
    if values is not None:
        return values
    for number, line in enumerate(text.split("\n"), start=1):  # find the line to blame
        fields = line.split()
        if fields and (
            len(fields) != 4 or not all(field.lstrip("-").isdigit() for field in fields)
        ):
            raise DataError(
                f"{path}, line {number}: expected 4 integers 'user item rating timestamp', got {line!r}"
            )
    return np.array(text.split(), dtype=np.int64).reshape(-1, 4)  # (ratings, 4)


def read_items(item_path: Path, names: list[str]) -> tuple[np.ndarray, list[str], list[list[str]]]:
    """Sorted item ids with titles and genre lists from ``u.item`` (one trailing flag per name)."""
    by_id: dict[int, tuple[str, list[str]]] = {}
    for number, line in enumerate(_read_lines(item_path), start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        try:
            if len(fields) < 5 + len(names):
                raise ValueError
            item_id = int(fields[0])
            flags = [int(flag) for flag in fields[-len(names) :]]
        except ValueError:
            raise DataError(
                f"{item_path}, line {number}: expected 'id|title|release|video release|url' and "
                f"{len(names)} 0/1 genre flags"
            ) from None
        if item_id in by_id:
            raise DataError(f"{item_path}, line {number}: item {item_id} listed twice")
        by_id[item_id] = (
            fields[1].strip(),
            [name for name, flag in zip(names, flags, strict=True) if flag],
        )
    if not by_id:
        raise DataError(f"{item_path}: no items")
    item_ids = np.array(sorted(by_id), dtype=np.int64)
    return item_ids, [by_id[i][0] for i in item_ids], [by_id[i][1] for i in item_ids]


def read_genre_names(path: Path) -> list[str]:
    """Genre names in flag order from ``u.genre`` (``name|index``), else the published 19."""
    if not path.is_file():
        return list(GENRES)
    pairs = [line.split("|") for line in _read_lines(path) if line.strip()]
    try:
        return [name for name, _ in sorted(pairs, key=lambda pair: int(pair[1]))]
    except (ValueError, IndexError):
        raise DataError(f"{path}: expected lines 'genre|index'") from None
