"""A blend of trained recommenders: per-user standardised scores, summed with weights.

Run ``k`` scores user ``u`` and item ``i`` by ``s_k(u, i) = u_k · v_ki``. Standardised per user
over every item, ``z_k(u, i) = (s_k(u, i) - μ_k(u)) / σ_k(u)`` with ``μ_k(u) = u_k · mean(v_k)``
and ``σ_k(u)² = u_kᵀ C_k u_k`` (``C_k`` the items' covariance), so the blend's score
``Σ_k w_k z_k(u, i)`` is itself one inner product: the user's vector is every
``w_k u_k / σ_k(u)`` and one last entry ``-Σ_k w_k μ_k(u) / σ_k(u)``; the item's is every
``v_ki`` and a 1. The blend is therefore an ordinary ``Recommender`` (the evaluator, ``recommend``
and ``compare`` see nothing new); ``coldbrew.training.blend`` builds the two matrices from the
runs' best checkpoints, and they are the blend's checkpoint.
"""

from __future__ import annotations

import torch

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Recommender, Teacher


def standardised(users: torch.Tensor, items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(users / σ(u), -μ(u) / σ(u))``: the per-user z-score of ``users @ items.T`` as a
    scaled user vector and a per-user offset (σ over all items; at least 1e-12)."""
    mean = items.mean(0)
    centred = items - mean
    covariance = centred.T @ centred / items.shape[0]
    sigma = ((users @ covariance) * users).sum(1).clamp_min(1e-24).sqrt()
    return users / sigma[:, None], -(users @ mean) / sigma


def blended(components: list[tuple[torch.Tensor, torch.Tensor]], weights: list[float]) -> Teacher:
    """The blend's user and item matrices (see the module's docstring)."""
    users, items, offset = [], [], 0.0
    for (user_vectors, item_vectors), weight in zip(components, weights, strict=True):
        scaled, shift = standardised(user_vectors.float(), item_vectors.float())
        users.append(weight * scaled)
        items.append(item_vectors.float())
        offset = offset + weight * shift
    ones = torch.ones(items[0].shape[0], 1)
    return Teacher(torch.cat([*users, offset[:, None]], 1), torch.cat([*items, ones], 1))


class Blend(Recommender):
    """Scores from fixed user and item matrices (persistent: they are what a checkpoint holds)."""

    def __init__(self, num_users: int, num_items: int, vectors: Teacher | None = None):
        super().__init__()
        if vectors is None:  # rebuilt from a checkpoint, which gives the widths
            vectors = Teacher(torch.zeros(num_users, 0), torch.zeros(num_items, 0))
        self.register_buffer("users", vectors.users)
        self.register_buffer("items", vectors.items)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for name in ("users", "items"):  # the width is the checkpoint's, the rows the data's
            saved = state_dict.get(prefix + name)
            if saved is not None and saved.shape[0] == getattr(self, name).shape[0]:
                setattr(self, name, torch.empty_like(saved))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, batch):
        raise ColdbrewError("a blend has nothing to train (ModelSpec.trains is False)")

    def user_embeddings(self) -> torch.Tensor:
        return self.users

    def item_embeddings(self) -> torch.Tensor:
        return self.items


def build(dataset, config, vectors: Teacher | None) -> Blend:
    """The registry's builder; ``vectors`` come from ``coldbrew.training.blend.blend_vectors``
    (None when a saved blend is rebuilt: its checkpoint holds them)."""
    return Blend(dataset.num_users, dataset.num_items, vectors)
