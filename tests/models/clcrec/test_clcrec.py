"""CLCRec loss against a plain transcription of the original's math, on tiny tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coldbrew.data.dataset import WordIds
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch
from coldbrew.models.clcrec.model import CLCRec
from coldbrew.models.content import distinct_items


def make_model(mix_mode="original", words=False, scoring="auto") -> CLCRec:
    torch.manual_seed(0)
    features = {"visual": torch.rand(12, 5), "text": torch.rand(12, 3)}
    if words:
        features["words"] = WordIds(
            torch.tensor([0, 0, 1, 2, 5, 11]), torch.tensor([1, 2, 2, 0, 3, 1]), num_words=4
        )
    return CLCRec(
        4,
        12,
        features,
        torch.tensor([10, 11]),
        dim=6,
        hidden=7,
        temp_value=2.0,
        lr_lambda=0.3,
        reg_weight=0.1,
        mix_mode=mix_mode,
        scoring=scoring,
    )


def reference_loss(model: CLCRec, users, items, use_content):
    """The original model_CLCRec.py forward, written plainly: encode every item, exp/sum/log."""
    num_neg = items.shape[1] - 1
    feature = model.encoder()  # every item, as the original does
    flat_items = items.reshape(-1)
    flat_users = users.repeat_interleave(1 + num_neg)
    positives = items[:, :1].expand(-1, 1 + num_neg).reshape(-1)
    all_item_feat = feature[flat_items]
    user_embedding = model.user_embedding[flat_users]
    pos_item_embedding = model.item_embedding[positives]
    all_item_embedding = model.item_embedding[flat_items]
    head_feat = F.normalize(all_item_feat, dim=1)
    head_embed = F.normalize(pos_item_embedding, dim=1)
    all_item_input = torch.where(use_content.reshape(-1, 1), all_item_feat, all_item_embedding)

    def contrastive(anchor, candidates):
        score = torch.exp((anchor * candidates).sum(1) / model.temp_value).view(-1, 1 + num_neg)
        return (-torch.log(score[:, 0] / score.sum(1))).mean()

    loss1 = contrastive(head_embed, head_feat)
    loss2 = contrastive(user_embedding, all_item_input)
    reg = (user_embedding.norm(dim=1).mean() + all_item_embedding.norm(dim=1).mean()) / 2
    return model.lr_lambda * loss1 + (1 - model.lr_lambda) * loss2 + model.reg_weight * reg


@pytest.mark.parametrize("scoring", ["fused", "dense", "gather"])
@pytest.mark.parametrize("words", [False, True])
def test_loss_matches_plain_reference_value_and_gradients(scoring, words):
    model = make_model(words=words, scoring=scoring)
    users = torch.tensor([0, 1, 3, 1])
    items = torch.tensor(
        [[0, 3, 4], [2, 0, 9], [5, 5, 1], [7, 8, 0]]
    )  # (B=4, 1+K=3), repeats included
    use_content = torch.rand(items.shape, generator=torch.Generator().manual_seed(3)) < 0.5
    model.content_mix_mask = lambda shape, device, mask=use_content: mask
    fast = model(Batch(users, items)).total
    fast_grads = torch.autograd.grad(fast, list(model.parameters()))
    slow = reference_loss(model, users, items, use_content)
    slow_grads = torch.autograd.grad(slow, list(model.parameters()), allow_unused=True)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)
    for a, b in zip(fast_grads, slow_grads, strict=True):
        torch.testing.assert_close(a, torch.zeros_like(a) if b is None else b, rtol=1e-4, atol=1e-6)


def test_original_mix_mask_uses_about_39_percent_content():
    # int(0.5 * n) draws with replacement cover 1 - (1 - 1/n)^(n/2) ≈ 1 - e^-0.5 = 0.3935 of rows
    model = make_model()
    torch.manual_seed(1)
    fraction = (
        model.content_mix_mask(torch.Size([400, 129]), torch.device("cpu")).float().mean().item()
    )
    assert abs(fraction - 0.3935) < 0.01
    bernoulli = make_model(mix_mode="bernoulli").content_mix_mask(
        torch.Size([400, 129]), torch.device("cpu")
    )
    assert abs(bernoulli.float().mean().item() - 0.5) < 0.01


def test_distinct_items_inverse_reconstructs_input_with_and_without_trim():
    items = torch.tensor([[5, 1, 5], [9, 1, 0]])
    for trim in (True, False):
        distinct, inverse = distinct_items(items, 12, trim=trim)
        assert torch.equal(distinct[inverse], items)
        assert len(distinct) == (4 if trim else 6)
        assert torch.equal(distinct[:4], torch.tensor([0, 1, 5, 9]))


def test_cold_items_scored_from_content_warm_from_ids():
    model = make_model()
    embeddings = model.item_embeddings()
    content = model.encoder()
    torch.testing.assert_close(embeddings[10:], content[10:])
    torch.testing.assert_close(embeddings[:10], model.item_embedding[:10])


def test_loss_is_finite_and_decreases_with_training():
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    users = torch.tensor([0, 1, 2, 3])
    items = torch.tensor([[0, 3, 4], [2, 0, 9], [5, 6, 1], [7, 8, 0]])
    first = None
    for _ in range(60):
        optimizer.zero_grad()
        loss = model(Batch(users, items)).total
        first = loss.item() if first is None else first
        loss.backward()
        optimizer.step()
    assert loss.item() < first - 0.1


def test_fused_scoring_is_the_cpu_default_and_refused_elsewhere():
    cpu = torch.device("cpu")
    assert make_model().score_path(5, 3, cpu, cpu_path=True) == CLCRec.scores_fused
    # the GPU's choice: dense products while distinct items are few, else gathers
    assert make_model().score_path(5, 3, cpu, cpu_path=False) == CLCRec.scores_dense
    assert make_model().score_path(97, 3, cpu, cpu_path=False) == CLCRec.scores_gathered
    assert (
        make_model().score_path(5, 3, torch.device("meta"), cpu_path=False) == CLCRec.scores_dense
    )
    with pytest.raises(ColdbrewError, match="CPU only"):
        make_model(scoring="fused").score_path(5, 3, torch.device("meta"), cpu_path=False)
