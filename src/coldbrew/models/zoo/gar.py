"""GAR (Chen et al., SIGIR 2022, "Generative Adversarial Framework for Cold-Start Item
Recommendation").

A *generator* ``G`` maps an item's content to the collaborative backbone's item space; a
*recommender* (the discriminator) scores ``R(u, e) = f_U(e_u) · f_I(e)`` through a user tower and
an item tower over backbone vectors. The two play against each other on a warm positive ``i``
of user ``u`` with negatives ``j``:

* recommender: ``softplus(-(R(u, e_i) - α R(u, e_j) - (1 - α) R(u, G(x_i))))``, mean over the
  ``K`` negatives: rank the real positive over the negatives (the ranking term, weight ``α``)
  and over its generated vector (the adversarial term, ``1 - α``);
* generator: ``(1 - λ) softplus(-(R(u, G(x_i)) - R(u, e_i))) + λ ‖G(x_i) - e_i‖₁``: make the
  recommender rank the generated vector over the real one, and stay near it.

At inference the recommender scores every item: warm items by ``f_I(e_i)``, cold items by
``f_I(G(x_i))``, users by ``f_U(e_u)``; the backbone's vectors stay fixed.

The towers read the backbone *standardized*: ``e_u`` and ``e_i`` are the backbone's vectors with
each dimension shifted and scaled to mean 0, std 1 over the users and over the warm items
(``standardized_backbone``), and ``G`` generates in that space. The authors' towers open with a
batch normalisation for this; without it GAR collapsed on ml-1m-coldstart (val cold Recall@20
0.014, adversarial term 12.7): ALS item vectors have norm ~0.07 against ~6 for its users, so
every real item reached the item tower as a near-constant input and the L1 term aimed the
generator at ~0, while the generator's larger outputs were trivially told apart from real ones.

One step, two players: the trainer takes one optimizer step on one loss, so the sum of the two
losses is minimised with each player's gradient cut from the other's term: the recommender's
term sees ``G(x_i)`` detached, the generator's runs the towers with detached weights
(``TanhTower(frozen=True)``): both players move at once, at one learning rate (the authors
alternate a recommender step and a generator step).

Differences from public code, and why: the authors' code (zfnWong/GAR, ``gar_mlp.py``) puts
batch normalisation and dropout in its towers and uses separate learning rates for the two
players; here the towers are plain ``Linear → tanh → Linear`` and share the run's ``--lr`` (one
optimizer, no batch statistics: deterministic, and a rebuilt run scores identically); the input
batch normalisation is replaced by fixed statistics (above). The ``λ`` L1 term is the authors'
``sim_coe`` (``gar_mlp.py``, summed over dimensions; their later ``GAR.py`` averages it with
weight 0.05). The authors' later code also weights the negatives by 0.1 and the generated
vector by 0.9 in the recommender's margin; here ``α = 0.9`` weights the negatives: on
ml-1m-coldstart (seed 1, 3 epochs) ``α = 0.1`` reached val cold Recall@20 0.049 against 0.074,
and ``λ = 0.5`` beat ``λ = 0.1`` (0.100 against 0.078 at best). ColdRec (YuanchenBei/ColdRec)
drops the towers and scores raw backbone vectors with a BPR loss against the generated vector;
this follows the paper's recommender instead. The generator is the shared ``ContentEncoder`` (every feature
block row-normalised, ``Linear → LeakyReLU → Linear``) rather than the authors' tanh MLP, so
GAR reads the same content as every other model here.

Speed: the generator and the item tower run once per step on the distinct items of the batch
(``distinct_items``), at most the warm catalogue, however many negatives are drawn.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from coldbrew.data.dataset import Dataset
from coldbrew.models.base import Batch, Catalogue, LossOutput, Teacher
from coldbrew.models.content import ContentEncoder
from coldbrew.models.zoo.gar_config import GAROptions
from coldbrew.models.zoo.teacher import TanhTower, TeacherModel, occurrence_mean


def recommender_loss(
    positive: torch.Tensor, negatives: torch.Tensor, generated: torch.Tensor, rank_weight: float
) -> torch.Tensor:
    """Mean ``softplus(-(p - α n_k - (1 - α) g))`` over rows and negatives; ``positive`` and
    ``generated`` ``(B,)``, ``negatives`` ``(B, K)`` recommender scores."""
    margin = (
        positive[:, None] - rank_weight * negatives - (1 - rank_weight) * generated[:, None]
    )  # (B, K)
    return F.softplus(-margin).mean()


def generator_loss(
    generated_scores: torch.Tensor,
    positive_scores: torch.Tensor,
    generated: torch.Tensor,
    real: torch.Tensor,
    similarity_weight: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(adversarial, similarity)``: mean ``softplus(-(g - p))`` over rows, and the mean L1
    distance ``‖generated - real‖₁`` of ``(B, D)`` vectors; the loss is
    ``(1 - λ) adversarial + λ similarity``."""
    adversarial = F.softplus(-(generated_scores - positive_scores)).mean()
    similarity = (generated - real).abs().sum(dim=1).mean()
    return adversarial, similarity


class GAR(TeacherModel):
    def __init__(self, catalogue: Catalogue, teacher: Teacher | None, options: GAROptions):
        super().__init__(catalogue, teacher, options)
        self.rank_weight, self.similarity_weight = options.rank_weight, options.similarity_weight
        self.reg_weight = options.reg_weight
        dim, width = options.backbone_dim, options.tower_dim
        self.generator = ContentEncoder(
            catalogue.features, catalogue.num_items, dim, options.hidden
        )
        self.user_tower = TanhTower(dim, width, width)
        self.item_tower = TanhTower(dim, width, width)

    def forward(self, batch: Batch) -> LossOutput:
        users, items = batch.users, batch.items  # (B,), (B, 1 + K)
        distinct, inverse = self.step_items(items)
        user_vectors, item_vectors = self.standardized_backbone()
        user_rows = self.user_tower(user_vectors[users])  # (B, T)
        real = item_vectors[distinct]  # (n, D): each distinct item once
        item_rows = self.item_tower(real)  # (n, T)
        real_scores = self.pair_scores(user_rows, item_rows, inverse)  # (B, 1 + K)
        generated = self.generator(distinct)  # (n, D): the same items from their content
        positive = inverse[:, 0]  # (B,) rows of the positives among the distinct items
        # the recommender's turn: the generated vectors are fixed inputs
        fake_scores = (self.item_tower(generated.detach())[positive] * user_rows).sum(-1)  # (B,)
        recommender = recommender_loss(
            real_scores[:, 0], real_scores[:, 1:], fake_scores, self.rank_weight
        )
        # the generator's turn: the recommender is a fixed critic
        critic = self.item_tower(generated, frozen=True)[positive]  # (B, T)
        adversarial, similarity = generator_loss(
            (critic * user_rows.detach()).sum(-1),
            real_scores[:, 0].detach(),
            generated[positive],
            real[positive],
            self.similarity_weight,
        )
        generator = (1 - self.similarity_weight) * adversarial + self.similarity_weight * similarity
        # the towers' outputs kept small: a recommender free to grow its scores outruns the
        # generator (the authors' code puts an L2 penalty on every tower weight instead)
        item_norms = occurrence_mean(item_rows.square().sum(-1), inverse)  # over occurrences
        regularizer = (user_rows.square().sum(-1).mean() + item_norms) / 2
        terms = {
            "recommender": recommender,
            "adversarial": adversarial,
            "similarity": similarity,
            "reg": regularizer,
        }
        total = recommender + generator + self.reg_weight * regularizer
        return LossOutput(total=total, terms=terms)

    def standardized_backbone(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The backbone's users ``(U, D)`` and items ``(I, D)``, each dimension standardized by
        the mean and std of all users and of the warm items: the authors' towers open with a
        batch normalisation; fixed statistics do the same without batch noise. ALS item
        vectors are ~100 times smaller than its user vectors, so raw they reach the item tower
        as a near-constant input and the generator's L1 term as a near-zero target."""
        warm = (~self.cold_mask).float()[:, None]  # (I, 1); cold rows are not trained vectors
        item_mean = (self.teacher_items * warm).sum(0) / warm.sum()  # (D,)
        item_var = ((self.teacher_items - item_mean).square() * warm).sum(0) / warm.sum()
        items = (self.teacher_items - item_mean) / (item_var + 1e-12).sqrt()
        user_mean = self.teacher_users.mean(0)  # (D,)
        user_var = self.teacher_users.var(0, correction=0)
        users = (self.teacher_users - user_mean) / (user_var + 1e-12).sqrt()
        return users, items

    def user_embeddings(self) -> torch.Tensor:
        return self.user_tower(self.standardized_backbone()[0])

    def item_embeddings(self) -> torch.Tensor:
        """Warm items through the item tower from their (standardized) backbone vector, cold
        items from the generator's."""
        items = self.standardized_backbone()[1]
        vectors = torch.where(self.cold_mask[:, None], self.generator(), items)
        return self.item_tower(vectors)

    def new_item_vectors(self, features: torch.Tensor) -> torch.Tensor:
        return self.item_tower(self.generator.encode_raw(features))


def build(dataset: Dataset, config, teacher: Teacher | None) -> GAR:
    """The registry's builder: GAR with ``config.model_options`` (a ``GAROptions``) over the
    collaborative backbone ``teacher`` (None: a saved run rebuilt; its checkpoint fills it)."""
    return GAR.from_run(dataset, config, teacher)
