"""What the models that learn from a collaborative backbone share (DeepMusic, DropoutNet, Heater,
GAR, ALDI, content KNN, ridge): ``TeacherModel``, built from the dataset's ``Catalogue``, the
backbone and the model's options dataclass (``from_run``, every builder), holding the
backbone's vectors as checkpointed buffers and the cold mask, the distinct items of a step and
new items from their feature vector; the tanh tower of their papers; ``ContentMapper``, the
frame of the two that train nothing (ridge, content KNN); and ``TowerStudent``, the content
branch and two towers DropoutNet and Heater train to reproduce the backbone's scores.

The backbone (``coldbrew.training.backbone``) is trained on warm interactions only, so its cold
item rows are zero. A teacher model is built with the backbone's ``Teacher`` on a fresh run and
with ``None`` when a saved run is rebuilt (``ModelSpec.build(..., teacher=None)``): the vectors
are then zeros of the options' width until the checkpoint fills them, so they are persistent
buffers (learned state, not data). The training task draws negatives among warm items only, so
every item of a batch has a backbone row.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Catalogue, NothingToTrain, Recommender, Teacher
from coldbrew.models.content import (
    ContentEncoder,
    content_matrix,
    distinct_items,
    host_syncs_are_free,
    new_item_features,
)
from coldbrew.models.gather_dot import sampled_scores
from coldbrew.models.zoo.teacher_options import TeacherOptions, TowerOptions


class TeacherModel(Recommender):
    """A ``Recommender`` holding its backbone's ``teacher_users`` ``(num_users, dim)`` and
    ``teacher_items`` ``(num_items, dim)`` (``teacher`` None: zeros a checkpoint will fill) and
    the ``cold_mask``. ``encode_items`` scores new items through ``new_item_vectors``, which a
    model defines to treat them as it treats its cold items."""

    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: TeacherOptions):
        super().__init__()
        num_users, num_items = catalogue.num_users, catalogue.num_items
        self.num_users, self.num_items = num_users, num_items
        width = options.backbone_dim
        if teacher is None:
            teacher = Teacher(torch.zeros(num_users, width), torch.zeros(num_items, width))
        for side, shape in {"users": (num_users, width), "items": (num_items, width)}.items():
            found = tuple(getattr(teacher, side).shape)
            if found != shape:
                raise ColdbrewError(
                    f"the backbone's {side} are {found}; expected {shape} (option backbone_dim={width})"
                )
        # the backbone's training seconds belong to this run's time, cached backbone or not
        self.backbone_seconds = teacher.seconds
        self.register_buffer("teacher_users", teacher.users.float().clone())
        self.register_buffer("teacher_items", teacher.items.float().clone())
        self.register_cold_mask(num_items, catalogue.cold_items)

    @classmethod
    def from_run(cls, dataset, config, teacher: Teacher | None, *data):
        """What a registry builder returns: the model over ``dataset``'s catalogue and the
        backbone ``teacher`` (None: a saved run rebuilt; its checkpoint fills it) with the
        run's options ``config.model_options``, and any further ``data`` it reads."""
        return cls(Catalogue.of(dataset), teacher, config.model_options, *data)

    def step_items(self, items: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The distinct items ``(n,)`` of ``items`` ``(B, 1 + K)`` and each entry's row among
        them ``(B, 1 + K)`` (padded to a fixed ``n`` on the GPU path)."""
        trim = host_syncs_are_free(items, self.fixed_shapes)
        distinct, inverse = distinct_items(items.reshape(-1), self.num_items, trim=trim)
        return distinct, inverse.view(items.shape)

    def teacher_scores(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """The backbone's scores ``(B, 1 + K)`` of ``users`` ``(B,)`` for ``items``."""
        return self.pair_scores(self.teacher_users[users], self.teacher_items, items)

    def pair_scores(
        self, user_vectors: torch.Tensor, item_vectors: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:
        """``user_vectors[b] · item_vectors[rows[b, k]]`` ``(B, 1 + K)``: users ``(B, D)``,
        items ``(n, D)``, ``rows`` ``(B, 1 + K)`` into the items. On the CPU the fused gather
        and product (``gather_dot``; with ``occurrence_mean``, Heater's step 1.3×, GAR's 3.5×:
        BENCHMARKS.md), else gathered rows and a batched product."""
        fused = host_syncs_are_free(rows, self.fixed_shapes)
        return sampled_scores(user_vectors, item_vectors, rows, fused=fused)

    def content_only(self, distinct: torch.Tensor, probability: float) -> torch.Tensor:
        """Which of a step's distinct items ``(n,)`` are read from their content alone,
        ``(n, 1)`` bool: each with ``probability``, cold items always (their backbone rows are
        zero)."""
        drawn = torch.rand(len(distinct), 1, device=distinct.device) < probability
        return drawn | self.cold_mask[distinct, None]

    @torch.no_grad()
    def encode_items(
        self, *, texts: list[str] | None = None, features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """New items from their raw feature vector (the dataset's dense blocks, concatenated),
        scored as the model scores a cold item with that content."""
        features = new_item_features(type(self).__name__, texts, features)
        return self.new_item_vectors(features.to(self.teacher_items.device))

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        """``(n, dim)`` item vectors of new items' raw dense blocks ``(n, sum of widths)``."""
        raise NotImplementedError


class ContentMapper(NothingToTrain, TeacherModel):
    """Ridge's and content KNN's frame: nothing trained; users are the backbone's, and items
    are read from ``content`` ``(items, F)``, every dense feature block row-normalised and
    joined (``content_matrix``; ``block_widths`` their widths, for new items' raw blocks)."""

    reads = "reads"  # how the error for a dataset without dense blocks says the model uses them

    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: TeacherOptions):
        super().__init__(catalogue, teacher, options)
        content, self.block_widths = content_matrix(
            catalogue.features, f"{self.label} {self.reads}"
        )
        self.register_buffer("content", content, persistent=False)  # data, not model state

    def user_embeddings(self) -> torch.Tensor:
        return self.teacher_users


class TowerStudent(TeacherModel):
    """DropoutNet's and Heater's frame: a user tower ``f_U`` over the backbone's user vector and
    an item tower ``f_V`` (a model sets both), trained so that ``f_U(u) · f_V(i)`` reproduces
    the backbone's score ``U_u · V_i``."""

    user_tower: nn.Module
    item_tower: nn.Module

    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: TowerOptions):
        super().__init__(catalogue, teacher, options)
        # the content branch of both papers' item towers: every block row-normalised,
        # Linear(hidden) -> LeakyReLU -> Linear(hidden), as CLCRec's encoder
        hidden = options.hidden
        self.content = ContentEncoder(catalogue.features, catalogue.num_items, hidden, hidden)

    def add_towers(self, item_width: int, hidden: int, dim: int) -> None:
        """The towers ``Linear(hidden) → tanh → Linear(dim)``: the user's over the backbone's
        user vector, the item's over ``item_width`` inputs. A model adds them after its own
        parts, so a seed initialises every parameter as before the towers were shared."""
        self.user_tower = TanhTower(self.teacher_users.shape[1], hidden, dim)
        self.item_tower = TanhTower(item_width, hidden, dim)

    def score_regression(
        self,
        users: torch.Tensor,
        items: torch.Tensor,
        item_vectors: torch.Tensor,
        inverse: torch.Tensor,
    ) -> torch.Tensor:
        """Mean over the step's sampled pairs of ``(f_U(u) · f_V(i) − U_u · V_i)²``: ``users``
        ``(B,)``, ``items`` ``(B, 1 + K)``, the item tower's ``item_vectors`` ``(n, dim)`` of
        the step's distinct items and each entry's row among them, ``inverse`` ``(B, 1 + K)``."""
        user_vectors = self.user_tower(self.teacher_users[users])  # (B, dim)
        predicted = self.pair_scores(user_vectors, item_vectors, inverse)  # (B, 1 + K)
        return (predicted - self.teacher_scores(users, items)).square().mean()

    def user_embeddings(self) -> torch.Tensor:
        return self.user_tower(self.teacher_users)


def occurrence_mean(values: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
    """Mean over a step's item occurrences of per-row ``values`` ``(n,)`` of its distinct items,
    ``inverse`` ``(B, 1 + K)`` each occurrence's row: each row's value once, weighted by its
    occurrences (rows that occur nowhere, such as the GPU path's padding, weigh 0), which is
    ``values[inverse].mean()`` without the gather in front of a ``(B, 1 + K, D)`` quantity."""
    flat = inverse.reshape(-1)
    ones = torch.ones(flat.shape, dtype=values.dtype, device=values.device)
    counts = torch.zeros(len(values), dtype=values.dtype, device=values.device)
    counts.index_add_(0, flat, ones)  # (n,) occurrences of each row
    return (counts * values).sum() / flat.numel()


class TanhTower(nn.Module):
    """``Linear(hidden) → tanh → Linear(out)``; ``frozen=True`` runs it with its weights
    detached, so a loss sees the tower's output without moving the tower (an adversary's
    turn)."""

    def __init__(self, width: int, hidden: int, out: int):
        super().__init__()
        self.layer1 = nn.Linear(width, hidden)
        self.layer2 = nn.Linear(hidden, out)

    def forward(self, inputs: torch.Tensor, frozen: bool = False) -> torch.Tensor:
        layers = [self.layer1, self.layer2]
        weights = [(layer.weight, layer.bias) for layer in layers]
        if frozen:
            weights = [(weight.detach(), bias.detach()) for weight, bias in weights]
        hidden = torch.tanh(F.linear(inputs, *weights[0]))
        return F.linear(hidden, *weights[1])

    def _load_from_state_dict(self, state_dict, prefix, *args) -> None:
        # DropoutNet's and Heater's runs saved before they shared this tower hold an
        # nn.Sequential's layers, named 0 and 2
        for old, new in (("0.", "layer1."), ("2.", "layer2.")):
            for key in [key for key in state_dict if key.startswith(prefix + old)]:
                state_dict[prefix + new + key[len(prefix + old) :]] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args)
