"""Seeded synthetic cold-start data with a known structure, for tests, benchmarks and the demo.

Users and items get Gaussian latent factors. Each user draws ``interactions_per_user``
distinct items with probability proportional to
``softmax(user . item / (sqrt(dim) * temperature))``, by the Gumbel-top-k trick. A
``cold_fraction`` of the items is cold: cold items never reach training; half of them are
validation items and the other half test items, so validation and test cold items are
disjoint. Each user's warm interactions split 80/10/10 into train/val/test. Item content is
``factors @ random projection + noise``, a noisy linear map of the very factors that decide who
interacts with an item, so a model that reads content can place cold items.

The default (``"synthetic"``, what ``make demo`` falls back to without real data) is sized for
CLCRec's default training to show that it learns within two epochs: 1,000 users x 1,000 items
(200 cold, so a random ranking's cold Recall@20 is about 20 / 200 = 0.1) and 30 interactions
per user (about 19,000 training rows: ~10 optimizer steps per epoch at batch 2,048), with users
sticking close to their best-matching items (temperature 0.3). Two epochs of ``coldbrew train
--data synthetic`` reach about 4x random on val cold Recall@20 in seconds on 2 CPU cores
(BENCHMARKS.md, "Demo data"). The earlier default (500 x 300, 20 per user) gave 4
optimizer steps per epoch and only 60 cold items, where random ranking already finds a third;
it stays available as the preset ``"synthetic:small"`` for tests of mechanics. Larger sets
learn more (2,000 users: about 5x) but slow every test that trains on the default.

Large catalogues: scoring every user against every item costs ``users x items``. When
``num_items`` exceeds ``candidates``, users go in blocks of 64 and each block samples from the
softmax restricted to ``candidates`` items drawn uniformly at random for that block (every
item is equally likely to be a candidate); below that size sampling is exact. No score chunk
holds more than ``CHUNK_SCORES`` floats, so memory stays bounded at any size.

Options come as keywords or in the name: ``"synthetic:users=1000,items=500,feature_dims=32+64"``,
after an optional preset: ``"synthetic:small,feature_dims=8"``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import torch

from coldbrew.data.dataset import DEFAULT_SEED, Dataset, check_seed, interactions_to_csr
from coldbrew.errors import DataError

CHUNK_SCORES = 1 << 26  # 64M float32 scores (256 MB) per chunk, plus as much Gumbel noise
BLOCK_USERS = 64  # users that share one candidate set on large catalogues
HELD_OUT_FRACTION = 0.1  # of each user's warm interactions, for val and for test each


@dataclasses.dataclass(frozen=True)
class SyntheticOptions:
    """Sizes and knobs; the one source of defaults (see the module docstring for the sizes)."""

    num_users: int = 1000
    num_items: int = 1000
    dim: int = 16  # latent factor width
    interactions_per_user: int = 30
    cold_fraction: float = 0.2
    feature_dims: tuple[int, ...] = (32,)  # one modality per width
    noise: float = 0.1  # std of the Gaussian noise added to the content
    temperature: float = 0.3  # lower: users stick closer to their best-matching items
    candidates: int = 4096  # items per user block beyond which sampling uses candidates


# Named starting points, one per name ("synthetic:small,users=100"); options given by key
# override them. "small" is the default before the demo sizing: fast, but too little data for
# CLCRec to learn in a couple of epochs (for tests of mechanics, not of learning).
PRESETS = {
    "small": {"num_users": 500, "num_items": 300, "interactions_per_user": 20, "temperature": 0.5},
}

ALIASES = {
    "users": "num_users",
    "items": "num_items",
    "interactions": "interactions_per_user",
    "cold": "cold_fraction",
}


def load(
    name: str = "synthetic",
    *,
    features: Sequence[str] | None = None,
    seed: int = DEFAULT_SEED,
    **options,
) -> Dataset:
    """Generate the dataset ``name`` (``"synthetic[:key=value,...]"``) for ``seed``."""
    settings, seed = parse_options(name, seed, options)
    if isinstance(features, str):
        features = [modality.strip() for modality in features.split(",") if modality.strip()]
    # one generator per stage, so changing one stage's draws leaves the others as they were
    factors, cold, sampling, content_draws = (
        torch.Generator().manual_seed(int(state))
        for state in np.random.SeedSequence(seed).generate_state(4)
    )
    user_factors = torch.randn(settings.num_users, settings.dim, generator=factors)
    item_factors = torch.randn(settings.num_items, settings.dim, generator=factors)
    item_kind = _choose_cold(settings, cold)
    chosen = _sample_items(user_factors, item_factors, settings, sampling)  # (U, k)
    dataset_parts = _split(chosen, item_kind, sampling)
    content = _make_features(item_factors, settings, content_draws)
    if features is not None:
        unknown = [modality for modality in features if modality not in content]
        if unknown:
            raise DataError(f"{name}: unknown feature {unknown[0]!r}; it has {', '.join(content)}")
        content = {modality: content[modality] for modality in features}
    exact = settings.num_items <= max(settings.candidates, 4 * settings.interactions_per_user)
    how = "exact softmax sampling" if exact else f"blocks of {BLOCK_USERS} users share candidates"
    return Dataset(
        name=name,
        num_users=settings.num_users,
        num_items=settings.num_items,
        cold_items=np.flatnonzero(item_kind > 0),
        features=content,
        notes=[f"synthetic data, seed {seed}, {how}: {settings}"],
        **dataset_parts,
    )


def parse_options(name: str, seed: int, options: dict) -> tuple[SyntheticOptions, int]:
    """Merge ``key=value`` pairs from ``name`` with keyword options; the seed may be in the name."""
    prefix, _, text = str(name).partition(":")
    if prefix != "synthetic":
        raise DataError(
            f"{name!r} is not a synthetic dataset name (expected 'synthetic[:k=v,...]')"
        )
    merged = {ALIASES.get(key, key): value for key, value in options.items()}
    preset: dict = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = pair.partition("=")
        key = ALIASES.get(key.strip(), key.strip())
        if not equals and key in PRESETS and not preset:
            preset = PRESETS[key]
        elif not equals:
            raise DataError(
                f"{name}: expected key=value or one preset ({', '.join(PRESETS)}), got {pair!r}"
            )
        elif key == "seed":
            seed = int(_convert(name, key, value, int))
        elif key in merged and str(merged[key]) != value.strip():
            raise DataError(f"{name}: option {key!r} given both in the name and as a keyword")
        else:
            merged[key] = value.strip()
    merged = {**preset, **merged}
    fields = {field.name: field for field in dataclasses.fields(SyntheticOptions)}
    unknown = [key for key in merged if key not in fields]
    if unknown:
        raise DataError(f"{name}: unknown option {unknown[0]!r}; options are {', '.join(fields)}")
    values = {
        key: _convert(name, key, value, type(getattr(SyntheticOptions, key)))
        for key, value in merged.items()
    }
    settings = SyntheticOptions(**values)
    _check(name, settings)
    return settings, check_seed(seed)


def _convert(name: str, key: str, value: object, kind: type) -> object:
    """A string or number as the option's type; feature widths as ``32+64`` or a sequence."""
    try:
        if kind is tuple:
            parts = value.replace("x", "+").split("+") if isinstance(value, str) else value
            return tuple(int(part) for part in ([parts] if isinstance(parts, int) else parts))
        if kind is int and isinstance(value, str | float):
            number = float(value)
            if number != int(number):
                raise ValueError(f"{value} is not a whole number")
            return int(number)
        return kind(value)
    except (TypeError, ValueError) as error:
        raise DataError(f"{name}: option {key}={value!r} is not a valid {kind.__name__}") from error


def _check(name: str, settings: SyntheticOptions) -> None:
    problems = []
    if min(settings.num_users, settings.num_items, settings.dim, settings.candidates) < 1:
        problems.append("num_users, num_items, dim and candidates must be positive")
    if not 1 <= settings.interactions_per_user <= settings.num_items:
        problems.append("interactions_per_user must be between 1 and num_items")
    if not 0 <= settings.cold_fraction < 1:
        problems.append("cold_fraction must be in [0, 1)")
    if any(width < 1 for width in settings.feature_dims):
        problems.append("feature_dims must be positive")
    if settings.noise < 0 or settings.temperature <= 0:
        problems.append("noise must be >= 0 and temperature > 0")
    if problems:
        raise DataError(f"{name}: {'; '.join(problems)}")


def _choose_cold(settings: SyntheticOptions, generator: torch.Generator) -> np.ndarray:
    """Per item: 0 warm, 1 validation-cold, 2 test-cold."""
    order = torch.randperm(settings.num_items, generator=generator).numpy()
    num_cold = round(settings.cold_fraction * settings.num_items)
    item_kind = np.zeros(settings.num_items, dtype=np.int8)
    item_kind[order[: (num_cold + 1) // 2]] = 1
    item_kind[order[(num_cold + 1) // 2 : num_cold]] = 2
    return item_kind


def _gumbel_top_k(logits: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """Indices of ``count`` distinct draws from softmax(logits) along the last dimension."""
    # Gumbel noise is -log(-log(U)); uniform draws are several times faster than exponential_
    noise = torch.empty_like(logits).uniform_(generator=generator).log_().neg_().log_()
    return logits.sub_(noise).topk(count, dim=-1, sorted=False).indices


def _sample_items(
    user_factors: torch.Tensor,
    item_factors: torch.Tensor,
    settings: SyntheticOptions,
    generator: torch.Generator,
) -> np.ndarray:
    """(num_users, interactions_per_user) distinct item ids per user."""
    num_users, dim = user_factors.shape
    num_items, count = item_factors.shape[0], settings.interactions_per_user
    scale = 1.0 / (math.sqrt(dim) * settings.temperature)
    candidates = max(settings.candidates, 4 * count)  # enough distinct candidates for top-k
    chosen = torch.empty(num_users, count, dtype=torch.int64)
    if num_items <= candidates:
        rows = max(1, CHUNK_SCORES // num_items)
        for start in range(0, num_users, rows):
            logits = user_factors[start : start + rows] @ item_factors.T * scale  # (B, N)
            chosen[start : start + rows] = _gumbel_top_k(logits, count, generator)
        return chosen.numpy()
    rows = max(1, CHUNK_SCORES // (BLOCK_USERS * candidates)) * BLOCK_USERS
    for start in range(0, num_users, rows):
        users = user_factors[start : start + rows]
        blocks = -(-len(users) // BLOCK_USERS)
        padded = users.new_zeros(blocks * BLOCK_USERS, dim)
        padded[: len(users)] = users
        pool = torch.randint(num_items, (blocks, candidates), generator=generator)
        pool = pool.sort(dim=1).values  # (G, C); drawn with replacement, repeats masked below
        repeated = torch.zeros_like(pool, dtype=torch.bool)
        repeated[:, 1:] = pool[:, 1:] == pool[:, :-1]
        pool_factors = item_factors[pool]  # (G, C, dim)
        logits = torch.bmm(padded.view(blocks, BLOCK_USERS, dim), pool_factors.transpose(1, 2))
        logits = logits.mul_(scale).masked_fill_(repeated[:, None, :], -math.inf)  # (G, 64, C)
        picks = _gumbel_top_k(logits, count, generator).reshape(blocks, BLOCK_USERS * count)
        chosen[start : start + rows] = pool.gather(1, picks).reshape(-1, count)[: len(users)]
    return chosen.numpy()


def _split(chosen: np.ndarray, item_kind: np.ndarray, generator: torch.Generator) -> dict:
    """Train, known and val/test groups: cold items by their kind, warm ones 80/10/10 per user."""
    num_users, count = chosen.shape
    shuffle = torch.rand(num_users, count, generator=generator).argsort(dim=1).numpy()
    chosen = np.take_along_axis(chosen, shuffle, axis=1)  # random order within each user
    kind = item_kind[chosen]  # (U, k)
    warm = kind == 0
    rank = np.cumsum(warm, axis=1) - 1  # position among the user's warm interactions
    held = np.floor(HELD_OUT_FRACTION * warm.sum(axis=1, keepdims=True) + 0.5)  # (U, 1)
    train_end = warm.sum(axis=1, keepdims=True) - 2 * held
    masks = {
        "train": warm & (rank < train_end),
        "val_warm": warm & (rank >= train_end) & (rank < train_end + held),
        "test_warm": warm & (rank >= train_end + held),
        "val_cold": kind == 1,
        "test_cold": kind == 2,
    }
    users = np.broadcast_to(np.arange(num_users)[:, None], chosen.shape)
    shape = (num_users, len(item_kind))

    def matrix(mask: np.ndarray):
        return interactions_to_csr(users[mask], chosen[mask], shape)

    splits: dict[str, dict] = {}
    for split in ("val", "test"):
        union = masks[f"{split}_warm"] | masks[f"{split}_cold"]
        parts = {"all": union, "warm": masks[f"{split}_warm"], "cold": masks[f"{split}_cold"]}
        groups = {group: matrix(mask) for group, mask in parts.items() if mask.any()}
        if groups:
            splits[split] = groups
    return {"train": matrix(masks["train"]), "known": matrix(np.ones_like(warm)), "splits": splits}


def _make_features(
    item_factors: torch.Tensor, settings: SyntheticOptions, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """One modality per width: factors through a random projection, plus Gaussian noise."""
    num_items, dim = item_factors.shape
    names = (
        ["content"]
        if len(settings.feature_dims) == 1
        else [f"f{index}" for index in range(len(settings.feature_dims))]
    )
    content = {}
    for name, width in zip(names, settings.feature_dims, strict=True):
        projection = torch.randn(dim, width, generator=generator) / math.sqrt(dim)  # (dim, width)
        noise = torch.randn(num_items, width, generator=generator) * settings.noise
        content[name] = (item_factors @ projection).add_(noise)  # (N, width) float32
    return content
