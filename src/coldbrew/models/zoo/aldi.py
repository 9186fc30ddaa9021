"""ALDI (Huang et al., SIGIR 2023, "Aligning Distillation For Warm-up Cold-start
Recommendation").

The teacher is the collaborative backbone (fixed); the student reads item content: an item
encoder ``g(x_i)`` and a user mapper ``h(e_u)`` of the backbone's user vector. With teacher
scores ``t_ui = e_u · e_i`` and student scores ``s_ui = h(e_u) · g(x_i)`` on a warm positive
``i`` and negatives ``j_1 .. j_K``, the loss is

* supervised: BPR of the student, mean ``softplus(-(s_ui - s_uj))``;
* rating distribution alignment (``γ``): ``|t_ui - s_ui| + mean_k |t_uj - s_uj|``, so the
  student's scores sit on the teacher's scale (warm and cold items ranked together);
* ranking alignment (``α``): ``w_i · BCE(s_ui - s_uj, σ(t_ui - t_uj))``: the student's pairwise
  margins follow the teacher's;
* identification alignment (``β``): ``w_i · BCE(d_S, σ(d_T))`` with
  ``d = v_i · v_i - mean_k v_i · v_jk`` of the student's vectors (``d_S``) and the teacher's
  (``d_T``): how far an item stands out from others;
* ``w_i = tanh(min(a · n_i, M))`` with ``n_i`` the item's warm interactions: the teacher is
  trusted more on items it saw often (the paper's item-wise weighting; ``item_weighting``
  off: every ``w_i = 1``).

Scoring: warm items by the teacher, cold items by the student, in one inner product: a user is
``[e_u, h(e_u)]``, a warm item ``[e_i, 0]``, a cold item ``[0, g(x_i)]`` (rating alignment is
what makes the two halves comparable).

Differences from public code: the authors' code (zfnWong/ALDI) compares each positive with
every negative of the batch in the identification term; here with its own ``K`` negatives
(the same quantity on a smaller sample, ``O(B K D)`` not ``O(B² D)``). It caps
``tanh(a n_i)`` at ``tanh(M)``, which is ``tanh(min(a n_i, M))``. ColdRec (YuanchenBei/ColdRec)
leaves out the item weights; this keeps them, as the paper does. The item encoder is the
shared ``ContentEncoder`` (``Linear → LeakyReLU → Linear``) rather than the authors' tanh MLP;
it runs once per step on the distinct items of the batch (``distinct_items``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Batch, Catalogue, LossOutput, Teacher
from coldbrew.models.content import ContentEncoder
from coldbrew.models.zoo.aldi_config import ALDIOptions
from coldbrew.models.zoo.teacher import TanhTower, TeacherModel


def item_weights(interactions: torch.Tensor, slope: float, cap: float) -> torch.Tensor:
    """``tanh(min(slope · n, cap))`` per item: how far the teacher is trusted on it."""
    return torch.tanh((slope * interactions.float()).clamp(max=cap))


def bpr(scores: torch.Tensor) -> torch.Tensor:
    """Mean ``softplus(-(s_pos - s_neg_k))`` of ``(B, 1 + K)`` scores, positive first."""
    return F.softplus(-(scores[:, :1] - scores[:, 1:])).mean()


def rating_alignment(teacher: torch.Tensor, student: torch.Tensor) -> torch.Tensor:
    """Mean over rows of ``|Δ_pos| + mean_k |Δ_neg_k|`` of ``(B, 1 + K)`` scores."""
    gap = (teacher - student).abs()
    return (gap[:, 0] + gap[:, 1:].mean(dim=1)).mean()


def ranking_alignment(
    teacher: torch.Tensor, student: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """Mean of ``w_b · BCE(s_pos - s_neg_k, σ(t_pos - t_neg_k))``; ``weights`` ``(B,)``."""
    target = torch.sigmoid(teacher[:, :1] - teacher[:, 1:])  # (B, K)
    logits = student[:, :1] - student[:, 1:]
    loss = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    return (weights[:, None] * loss).mean()


def distinctness(vectors: torch.Tensor) -> torch.Tensor:
    """``v_0 · v_0 - mean_k v_0 · v_k`` per row of ``(B, 1 + K, D)`` vectors -> ``(B,)``."""
    products = (vectors[:, :1] * vectors).sum(-1)  # (B, 1 + K)
    return products[:, 0] - products[:, 1:].mean(dim=1)


def identification_alignment(
    teacher: torch.Tensor, student: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """Mean of ``w_b · BCE(d_S, σ(d_T))`` over rows of ``(B, 1 + K, D)`` item vectors."""
    target = torch.sigmoid(distinctness(teacher))
    loss = F.binary_cross_entropy_with_logits(distinctness(student), target, reduction="none")
    return (weights * loss).mean()


class ALDI(TeacherModel):
    def __init__(
        self,
        catalogue: Catalogue,
        teacher: Teacher | None,
        options: ALDIOptions,
        interactions: torch.Tensor,
    ):
        super().__init__(catalogue, teacher, options)
        self.rating_weight, self.ranking_weight = options.rating_weight, options.ranking_weight
        self.identity_weight = options.identity_weight
        num_items, dim = catalogue.num_items, options.backbone_dim
        self.item_student = ContentEncoder(catalogue.features, num_items, dim, options.hidden)
        self.user_student = TanhTower(dim, options.hidden, dim)
        weights = item_weights(interactions, options.weight_slope, options.weight_cap)
        if not options.item_weighting:
            weights = torch.ones(num_items)
        self.register_buffer("item_weights", weights, persistent=False)  # data: warm counts

    def forward(self, batch: Batch) -> LossOutput:
        users, items = batch.users, batch.items  # (B,), (B, 1 + K)
        teacher_users = self.teacher_users[users]  # (B, D)
        teacher_items = self.teacher_items[items]  # (B, 1 + K, D)
        student_users = self.user_student(teacher_users)  # (B, D)
        distinct, inverse = self.step_items(items)
        student_items = self.item_student(distinct)[inverse]  # (B, 1 + K, D): encoded once each
        teacher_scores = (teacher_items * teacher_users[:, None]).sum(-1)  # (B, 1 + K)
        student_scores = (student_items * student_users[:, None]).sum(-1)
        weights = self.item_weights[items[:, 0]]  # (B,)
        terms = {
            "bpr": bpr(student_scores),
            "rating": rating_alignment(teacher_scores, student_scores),
            "ranking": ranking_alignment(teacher_scores, student_scores, weights),
            "identity": identification_alignment(teacher_items, student_items, weights),
        }
        total = (
            terms["bpr"]
            + self.rating_weight * terms["rating"]
            + self.ranking_weight * terms["ranking"]
            + self.identity_weight * terms["identity"]
        )
        return LossOutput(total=total, terms=terms)

    def user_embeddings(self) -> torch.Tensor:
        """``[e_u, h(e_u)]`` ``(num_users, 2D)``: the teacher's half scores warm items, the
        student's cold ones."""
        return torch.cat([self.teacher_users, self.user_student(self.teacher_users)], dim=1)

    def item_embeddings(self) -> torch.Tensor:
        """Warm items ``[e_i, 0]``, cold items ``[0, g(x_i)]``, ``(num_items, 2D)``."""
        cold = self.cold_mask[:, None]
        zeros = torch.zeros_like(self.teacher_items)
        teacher_half = torch.where(cold, zeros, self.teacher_items)
        student_half = torch.where(cold, self.item_student(), zeros)
        return torch.cat([teacher_half, student_half], dim=1)

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        """New items ``[0, g(x)]``, as cold items."""
        student = self.item_student.encode_raw(features)
        return torch.cat([torch.zeros_like(student), student], dim=1)


def build(dataset: Dataset, config, teacher: Teacher | None) -> ALDI:
    """The registry's builder: ALDI with ``config.model_options`` (an ``ALDIOptions``) over the
    collaborative backbone ``teacher`` (None: a saved run rebuilt; its checkpoint fills it)."""
    interactions = torch.from_numpy(dataset.train.getnnz(axis=0).astype("int64"))
    return ALDI.from_run(dataset, config, teacher, interactions)
