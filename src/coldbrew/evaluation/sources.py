"""Where scores come from: embedding matrices, or a model's ``score_users``.

A source turns a chunk of users into ``prepared`` rows once (``prepare``), and a part of the
catalogue (``for_part``) writes any column block of scores from them into ``out``, a buffer the
engine reuses from block to block (a fresh 64 MiB tensor per block costs its page faults: the
products ran 2x slower on a CPU) and the ranking may overwrite (masking); never the model's own.

* ``EmbeddingScores``: ``user_vectors @ item_vectors.T``; any column block is computed on its
  own, so wide catalogues are scored block by block (``column_blocks = True``);
* ``FunctionScores``: ``score_users(users) -> (B, num_items)``, called once per chunk of users
  and shared by every part; its output is checked for shape and non-finite values.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from coldbrew.errors import ColdbrewError
from coldbrew.evaluation.plan import Part

ScoreUsers = Callable[[torch.Tensor], torch.Tensor]


def score_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half precision scores tie too often for a meaningful top K; rank them in float32."""
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


class EmbeddingScores:
    """Scores as inner products; any column block can be computed on its own."""

    column_blocks = True

    def __init__(self, user_vectors: torch.Tensor, item_vectors: torch.Tensor):
        self.user_vectors = user_vectors
        self.item_vectors = item_vectors
        self.num_items = item_vectors.shape[0]

    def prepare(self, users: torch.Tensor) -> torch.Tensor:
        return self.user_vectors[users]  # (B, d)

    def for_part(self, part: Part) -> _EmbeddingPart:
        if part.first is not None:
            return _EmbeddingPart(self.item_vectors[part.first : part.first + part.size])
        return _EmbeddingPart(self.item_vectors[part.items])  # (C, d), gathered once


class _EmbeddingPart:
    def __init__(self, item_vectors: torch.Tensor):
        self.item_vectors = item_vectors  # (C, d)

    def block(
        self, prepared: torch.Tensor, start: int, stop: int, out: torch.Tensor
    ) -> torch.Tensor:
        return torch.mm(prepared, self.item_vectors[start:stop].T, out=out)  # (B, stop - start)


class FunctionScores:
    """Scores from ``score_users(users) -> (B, num_items)``; one call per chunk of users."""

    column_blocks = False

    def __init__(self, score_users: ScoreUsers, num_items: int, device: torch.device):
        if not callable(score_users):
            raise ColdbrewError("score_users must be callable: users (B,) -> scores (B, num_items)")
        self.score_users = score_users
        self.num_items = num_items
        self.nonfinite = torch.zeros((), dtype=torch.float64, device=device)

    def prepare(self, users: torch.Tensor) -> torch.Tensor:
        scores = self.score_users(users)
        if not isinstance(scores, torch.Tensor) or scores.shape != (len(users), self.num_items):
            shape = (
                tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
            )
            raise ColdbrewError(
                f"score_users returned {shape}; expected ({len(users)}, {self.num_items}): "
                "one score per item for each requested user"
            )
        scores = scores.detach().to(device=users.device, dtype=score_dtype(scores.dtype))
        self.nonfinite += (~torch.isfinite(scores)).any().to(torch.float64)
        return scores  # (B, num_items); read only: every block below is a copy

    def for_part(self, part: Part) -> _FunctionPart:
        return _FunctionPart(part)


class _FunctionPart:
    def __init__(self, part: Part):
        self.part = part

    def block(
        self, prepared: torch.Tensor, start: int, stop: int, out: torch.Tensor
    ) -> torch.Tensor:
        first = self.part.first
        if first is not None:
            return out.copy_(prepared[:, first + start : first + stop])  # masked in place later
        columns = self.part.items[start:stop]
        return torch.index_select(prepared, 1, columns, out=out)  # (B, stop - start)


def module_device(score_users: ScoreUsers) -> torch.device:
    """The device of the module owning ``score_users`` (``model.score_users``), else CPU."""
    owner = getattr(score_users, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        for tensor in (*owner.parameters(), *owner.buffers()):
            return tensor.device
    return torch.device("cpu")


def check_vectors(
    user_vectors, item_vectors, shape: tuple[int, int], device: torch.device | str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both as float tensors on ``device`` (default: the user vectors'), or a clear error.

    ``shape`` is ``(num_users, num_items)``; the vectors must be ``[num_users, d]`` and
    ``[num_items, d]`` with the same ``d`` and only finite values.
    """
    user_vectors = torch.as_tensor(user_vectors).detach()
    item_vectors = torch.as_tensor(item_vectors).detach()
    num_users, num_items = shape
    for name, vectors, rows, what in (
        ("user_vectors", user_vectors, num_users, "num_users"),
        ("item_vectors", item_vectors, num_items, "num_items"),
    ):
        if vectors.dim() != 2 or vectors.shape[0] != rows:
            raise ColdbrewError(
                f"{name} has shape {tuple(vectors.shape)}; expected ({what}={rows}, d)"
            )
        if not vectors.is_floating_point():
            raise ColdbrewError(f"{name} must hold floating point values, got {vectors.dtype}")
    if user_vectors.shape[1] != item_vectors.shape[1]:
        raise ColdbrewError(
            f"user_vectors are {user_vectors.shape[1]}-d but item_vectors are "
            f"{item_vectors.shape[1]}-d; they must share one dimension"
        )
    device = torch.device(device) if device is not None else user_vectors.device
    dtype = score_dtype(user_vectors.dtype)
    user_vectors = user_vectors.to(device=device, dtype=dtype)
    item_vectors = item_vectors.to(device=device, dtype=dtype)
    for name, vectors in (("user_vectors", user_vectors), ("item_vectors", item_vectors)):
        if not torch.isfinite(vectors).all():
            raise ColdbrewError(f"{name} contains NaN or infinite values")
    return user_vectors, item_vectors
