"""The collaborative backbone the cold-start zoo learns from, trained once and cached.

``collaborative_teacher(dataset, options, seed)`` (the registry's ``COLLABORATIVE`` provider)
trains user and item vectors on the warm training interactions only and returns them as a
``Teacher``; cold items' rows are zero. ``options`` is any ``TeacherOptions`` (each zoo model's
options inherit it): ``backbone`` picks

* ``als`` (the default): the ``implicit`` package's alternating least squares (the ``zoo``
  extra), ``backbone_epochs`` sweeps on the user x warm-item matrix, so cold items take no part.
  Every user-item cell counts, an observed one with weight ``backbone_alpha`` and target 1, an
  unobserved one with weight 1 and target 0 (``implicit`` reads a cell's value times alpha as its
  weight, and the training matrix holds ones); ``backbone_reg`` is one constant for every
  vector, however many interactions it has;
* ``bpr``: the registered ``bpr`` model (``coldbrew.models.zoo.bpr``), trained on the CPU by the one
  loop (``Trainer.train_epoch``) for ``backbone_epochs`` epochs, without evaluation.

Both train on the CPU whatever device the zoo model then uses. Which is faster at equal warm
accuracy (ALS, by about 12x in CPU seconds): BENCHMARKS.md, "The zoo's collaborative backbone".

A trained backbone is cached under ``<cache>/backbones/`` (``coldbrew.data.paths.cache_dir``),
filed under the dataset's identity (a digest of its training interactions and cold items), the
seed and ``options.teacher_key()``; the file is written atomically and checked on load.

Training here leaves the caller's global torch RNG as it found it, so a zoo model's initial
weights are the same whether its backbone came from the cache or was just trained.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from coldbrew.data.dataset import Dataset
from coldbrew.data.paths import cache_dir
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Teacher
from coldbrew.training.checkpoint import atomic_write

CACHE_FORMAT = 1  # bump when a backbone's training changes what a key's vectors are
# the bpr backbone's run: large steps (cheap on a CPU) and the learning rate that suits them
BPR_RUN = {"batch_size": 8192, "lr": 0.01, "device": "cpu"}


def dataset_identity(dataset: Dataset) -> str:
    """A digest of what a backbone learns from: shape, training interactions and cold items."""
    digest = hashlib.sha256()
    digest.update(f"{dataset.num_users}x{dataset.num_items}".encode())
    train = dataset.train
    for array in (train.indptr, train.indices, dataset.cold_items):
        digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    return digest.hexdigest()


def cache_key(dataset: Dataset, options, seed: int) -> dict:
    return {
        "format": CACHE_FORMAT,
        "dataset": dataset_identity(dataset),
        "seed": int(seed),
        **options.teacher_key(),
    }


def cache_path(key: dict, name: str) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]
    return cache_dir() / "backbones" / f"{readable}-{key['backbone']}-{digest}.pt"


def collaborative_teacher(dataset: Dataset, options, seed: int, *, progress: bool) -> Teacher:
    """The backbone ``options`` names for ``dataset`` and ``seed``: from the cache, or trained
    on the warm training interactions (and cached)."""
    key = cache_key(dataset, options, seed)
    path = cache_path(key, dataset.name)
    cached = load_cached(path, key)
    if cached is not None:
        return cached
    started = time.perf_counter()
    trainers = {"bpr": train_bpr, "als": train_als}
    if options.backbone not in trainers:
        raise ColdbrewError(
            f"option backbone: {options.backbone!r} is not a backbone; accepted: bpr, als"
        )
    with torch.random.fork_rng(devices=[]):
        users, items = trainers[options.backbone](dataset, options, seed)
    items[torch.from_numpy(np.asarray(dataset.cold_items, dtype=np.int64))] = 0.0
    seconds = time.perf_counter() - started
    teacher = Teacher(users.float().contiguous(), items.float().contiguous(), seconds)
    save_cached(path, key, teacher)
    if progress:
        print(
            f"backbone: {options.backbone} ({options.backbone_dim} dims, "
            f"{options.backbone_epochs} epochs) on {dataset.name} in {seconds:.1f} s; "
            f"cached at {path}",
            flush=True,
        )
    return teacher


def load_cached(path: Path, key: dict) -> Teacher | None:
    """The cached teacher at ``path`` when it exists and was filed under ``key``."""
    if not path.exists():
        return None
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError):
        return None  # damaged: trained again and rewritten
    if not isinstance(payload, dict) or payload.get("key") != key:
        return None
    return Teacher(payload["users"], payload["items"], float(payload.get("seconds", 0.0)))


def save_cached(path: Path, key: dict, teacher: Teacher) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"key": key, "users": teacher.users, "items": teacher.items}
    payload["seconds"] = teacher.seconds
    atomic_write(path, lambda handle: torch.save(payload, handle))


def train_bpr(dataset: Dataset, options, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The registered ``bpr`` model trained by the one loop for ``backbone_epochs`` epochs."""
    from coldbrew.config import make_config
    from coldbrew.training.run import build_trainer

    section = {"dim": options.backbone_dim, "reg": options.backbone_reg}
    config = make_config(
        {
            **BPR_RUN,
            "model": "bpr",
            "data": dataset.name,
            "seed": seed,
            "epochs": options.backbone_epochs,
            "quiet": True,
            "bpr": section,
        }
    )
    if not dataset.groups("val"):  # the task names a monitored metric; this loop never evaluates
        dataset = dataclasses.replace(dataset, splits={"val": {"all": dataset.train}})
    trainer = build_trainer(config, dataset, log=lambda line: None)
    for _ in range(config.epochs):
        trainer.train_epoch()
    with torch.no_grad():
        model = trainer.model
        return model.user_embeddings().detach().cpu(), model.item_embeddings().detach().cpu()


def warm_columns(dataset: Dataset) -> tuple[sp.csr_matrix, np.ndarray]:
    """The training matrix restricted to the warm items, ``(num_users, num_warm)`` float32, and
    the warm items' ids (column ``j`` is item ``warm[j]``)."""
    warm = dataset.warm_items
    matrix = dataset.train[:, warm].astype(np.float32).tocsr()
    return matrix, warm


def train_als(dataset: Dataset, options, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``implicit``'s ALS on the user x warm-item matrix; the items' vectors scattered back."""
    try:
        from implicit.cpu.als import AlternatingLeastSquares
        from threadpoolctl import threadpool_limits
    except ImportError as error:
        raise ColdbrewError(
            "option backbone: als needs the implicit package; pip install 'coldbrew[zoo]'"
        ) from error
    matrix, warm = warm_columns(dataset)
    with threadpool_limits(1, "blas"):  # implicit's advice: its own threads, one BLAS thread
        model = AlternatingLeastSquares(
            factors=options.backbone_dim,
            regularization=options.backbone_reg,
            alpha=options.backbone_alpha,
            iterations=options.backbone_epochs,
            random_state=seed,
            calculate_training_loss=False,
        )
        model.fit(matrix, show_progress=False)
    users = torch.from_numpy(np.asarray(model.user_factors, dtype=np.float32))
    items = torch.zeros(dataset.num_items, users.shape[1])
    items[torch.from_numpy(warm)] = torch.from_numpy(np.asarray(model.item_factors, np.float32))
    return users, items
