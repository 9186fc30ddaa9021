"""``coldbrew memory`` for a model with nothing to train (ridge, knn, marec, popularity, a blend:
``ModelSpec.trains`` False): it has no training step, so no micro-batch to size, but a run still
builds it (the closed-form fit) and scores users with it. Both are measured here, on the CPU,
at the data's real size and with real tensors: the build, then one evaluation chunk of users
(``chunk_elements`` scores, as ``coldbrew.evaluation.engine`` takes them). Fake tensors cannot
stand in for them, as for a training step: these fits take shapes from the data (``nonzero``).

Counted (``LiveBytes``): every tensor a torch op allocates while the build or the chunk runs,
from its allocation until it is freed (a sparse tensor by its indices and values), plus the
tensors the model holds that no op allocated (what it was given: the backbone's vectors, the
interaction matrix), held throughout. Not counted: the dataset's host arrays (numpy, scipy),
which a GPU run keeps in RAM, and the collaborative backbone a model learns from, which is
trained (or read from its cache) before the build and is its own model (``--model bpr``).
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

from coldbrew.config import TrainConfig
from coldbrew.training.memory.devices import MARGIN


def storages(tensor: torch.Tensor) -> list:
    """The storages holding ``tensor``'s data: its own, or a sparse tensor's indices and values."""
    if tensor.layout == torch.strided:
        return [tensor.untyped_storage()]
    if tensor.layout == torch.sparse_coo:
        return [tensor._indices().untyped_storage(), tensor._values().untyped_storage()]
    return []  # other sparse layouts: not used by the models measured here


class LiveBytes(TorchDispatchMode):
    """Peak bytes of the storages torch ops allocate while it is on, each counted from its
    allocation until it is freed; an op returning a storage it was given (views, in-place ops)
    allocates nothing."""

    def __init__(self):
        super().__init__()
        self.live, self.peak = 0, 0
        self.allocated = WeakIdKeyDictionary()  # storage -> bytes, for those allocated here

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        given = {
            id(storage)
            for value in tree_leaves((args, kwargs))
            if isinstance(value, torch.Tensor)
            for storage in storages(value)
        }
        out = func(*args, **kwargs)
        for value in tree_leaves(out):
            if isinstance(value, torch.Tensor):
                for storage in storages(value):
                    if id(storage) not in given and storage not in self.allocated:
                        self._add(storage)
        return out

    def _add(self, storage) -> None:
        size = storage.nbytes()
        self.allocated[storage] = size
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self._free, size)

    def _free(self, size: int) -> None:
        self.live -= size


def state_storages(model: torch.nn.Module) -> dict[int, tuple]:
    """``{id: (storage, bytes)}`` of the storages of ``model``'s parameters and buffers."""
    held = {}
    for tensor in (*model.parameters(), *model.buffers()):
        for storage in storages(tensor):
            held[id(storage)] = (storage, storage.nbytes())
    return held


def score_chunk(model: torch.nn.Module, data, rows: int) -> torch.Tensor:
    """The scores of the first ``rows`` users for every item, as the evaluation computes them:
    the model's ``score_users``, else its user and item vectors' products."""
    from coldbrew.models.base import Recommender

    users = torch.arange(rows)
    if type(model).score_users is not Recommender.score_users:
        return model.score_users(users)  # (rows, num_items)
    user_vectors, item_vectors = model.user_embeddings().float(), model.item_embeddings().float()
    return user_vectors[users] @ item_vectors.T  # (rows, num_items)


def fit_memory(
    config: TrainConfig, data, *, world_size: int, device_memory: int | None, gpu: str | None
) -> dict:
    """Per-device memory of a run of ``config``'s model that has nothing to train: the build's
    peak (the fit), the model's state, one evaluation chunk's peak with that state, and whether
    the larger of the two peaks fits ``device_memory`` with a 10 % margin. Measured, once; with
    no step there is nothing to time on ``gpu``. ``estimate_memory``'s part for such a model:
    its options and their defaults are that function's."""
    from coldbrew.evaluation.engine import DEFAULT_CHUNK_ELEMENTS
    from coldbrew.registry import build_model, model_spec

    torch.manual_seed(config.seed)
    teacher = model_spec(config.model).build_teacher(data, config, progress=False)
    with torch.no_grad(), LiveBytes() as fitting:
        model = build_model(config.model, data, config, teacher)
    model.eval()
    held = state_storages(model)
    state = sum(size for _, size in held.values())
    given = sum(size for storage, size in held.values() if storage not in fitting.allocated)
    chunk = config.eval_chunk_elements or DEFAULT_CHUNK_ELEMENTS
    rows = max(1, min(data.num_users, chunk // max(1, data.num_items)))
    with torch.no_grad(), LiveBytes() as scoring:
        score_chunk(model, data, rows)  # freed on return: its bytes are in the peak only
    fit_peak, scoring_peak = fitting.peak + given, state + scoring.peak
    peak = max(fit_peak, scoring_peak)
    note = (
        f"{config.model} has no training step (nothing to train): its fit and scoring are measured"
    )
    return {
        "model": config.model,
        "data": getattr(data, "name", config.data),
        "world_size": world_size,
        "training_step": None,
        "note": note + (f"; no step to time on {gpu}" if gpu else ""),
        "model_state_bytes": state,
        "fit_peak_bytes": fit_peak,
        "scoring_users": rows,
        "scoring_peak_bytes": scoring_peak,
        "peak_bytes": peak,
        "device_memory_bytes": device_memory,
        "fits": peak <= MARGIN * device_memory if device_memory else None,
        "method": "measured (real tensors on the CPU)",
        "estimate": True,
    }
