"""LMRecommender on a tiny GPT-2: loss against a plain loop, every mode and loss, cold items
from text, the disk cache, trainable-only checkpoints, determinism."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from coldbrew.data.text import backbones
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Batch
from coldbrew.models.lm import LMConfig, build
from coldbrew.models.lm.text import user_history
from lm_support import COLD_ITEMS, fixed_batch, tiny_dataset

pytest.importorskip("transformers")
pytest.importorskip("peft")  # the [llm] extra (make install has it)


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture
def count_loads(monkeypatch):
    """Calls of ``load_backbone`` (the only way weights are loaded), counted."""
    calls: list[str] = []
    real = backbones.load_backbone

    def counting(name, device="cpu", **options):
        calls.append(name)
        return real(name, device, **options)

    monkeypatch.setattr(backbones, "load_backbone", counting)
    return calls


def make(gpt2: str, seed: int = 0, dataset=None, **options):
    torch.manual_seed(seed)
    config = LMConfig(backbone=gpt2, dim=8, hidden=16, **options)
    return build(dataset or tiny_dataset(), config, progress=False)


def train_steps(model, steps: int, lr: float = 0.02) -> list[float]:
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    users, items = fixed_batch()
    losses = []
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(Batch(users, items)).total
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def reference_loss(model, users, items) -> torch.Tensor:
    """The loss written plainly: one (user, item) score at a time from the model's parts."""
    config, total = model.config, 0.0
    backbone = model.loaded_backbone()  # dynamic and tune: the whole forward, one item at a time
    text = model.item_text if backbone is None else None
    for row, user in enumerate(users.tolist()):
        user_vector = model.user_id.weight[user] + model.user_head(model.user_features[user])
        scores = []
        for item in items[row].tolist():
            if text is None:  # dynamic, tune: the whole backbone on this one item
                ids, lengths = backbone.tokenize([tiny_dataset().item_text[item]])
                item_text = backbone(*backbone.trim(ids, lengths))[0]
            else:
                item_text = text[item]
            item_vector = model.item_head(item_text)
            if item not in COLD_ITEMS:
                item_vector = item_vector + model.item_id.weight[item]
            if config.score == "cosine":
                cosine = user_vector @ item_vector / (user_vector.norm() * item_vector.norm())
                scores.append(cosine)
            else:
                scores.append(user_vector @ item_vector)
        scores = torch.stack(scores)
        if config.loss == "bpr":
            total = total + sum(F.softplus(s - scores[0]) for s in scores[1:]) / (len(scores) - 1)
        else:
            logits = scores / config.temperature
            total = total + torch.logsumexp(logits, 0) - logits[0]
    return total / len(users)


# tune mode with every distinct item of a step through the tuned layers: the exact loss
TUNE_ALL = {"lm_mode": "tune", "lora": "4,8", "tune_items": 100}


# ---------------------------------------------------------------------------------- the loss
@pytest.mark.parametrize("loss", ["bpr", "infonce"])
@pytest.mark.parametrize(
    "options",
    [{}, {"lm_mode": "dynamic", "freeze": True}, {"lm_mode": "dynamic", "lora": "4,8"}, TUNE_ALL],
)
@pytest.mark.parametrize("score", ["dot", "cosine"])
def test_loss_and_gradients_match_a_plain_loop(gpt2, loss, options, score):
    model = make(gpt2, loss=loss, score=score, id_dropout=0.0, **options)
    train_steps(model, 2)  # LoRA's B starts at 0; move every parameter off its init
    model.eval()  # no dropout inside the backbone, so both computations agree
    users, items = fixed_batch()
    fast = model(Batch(users, items)).total
    slow = reference_loss(model, users, items)
    parameters = [p for p in model.parameters() if p.requires_grad]
    fast_grads = torch.autograd.grad(fast, parameters)
    slow_grads = torch.autograd.grad(slow, parameters)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)
    for a, b in zip(fast_grads, slow_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("loss", ["bpr", "infonce"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"lm_mode": "dynamic", "freeze": True},
        {"lm_mode": "dynamic", "lora": "4,8"},
        {"lm_mode": "tune", "tune_items": 3},
    ],
    ids=["cache", "dynamic-frozen", "dynamic-lora", "tune"],
)
def test_loss_falls_over_a_few_adam_steps(gpt2, loss, options):
    losses = train_steps(make(gpt2, loss=loss, **options), 20, lr=0.03)
    assert np.isfinite(losses).all()
    assert np.mean(losses[-5:]) < 0.6 * losses[0]


def test_cache_and_frozen_dynamic_are_one_model(gpt2):
    cached = make(gpt2)
    dynamic = make(gpt2, seed=1, lm_mode="dynamic", freeze=True)
    assert sorted(cached.state_dict()) == sorted(dynamic.state_dict())  # no backbone weight
    dynamic.load_state_dict(cached.state_dict())  # strict: frozen weights come from the rebuild
    cached.eval(), dynamic.eval()
    torch.testing.assert_close(
        dynamic.item_embeddings(), cached.item_embeddings(), atol=1e-5, rtol=0
    )
    users, items = fixed_batch()
    torch.testing.assert_close(
        dynamic(Batch(users, items)).total, cached(Batch(users, items)).total
    )


def test_dynamic_mode_runs_the_backbone_on_distinct_items_only(gpt2):
    model = make(gpt2, lm_mode="dynamic", lora="4,8")
    rows: list[int] = []
    model.backbone.model.register_forward_pre_hook(
        lambda _module, args, kwargs: rows.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    users, items = fixed_batch()
    model(Batch(users, items))
    assert rows == [len(torch.unique(items))]  # 9 distinct of 21 entries


def test_a_batch_without_negatives_is_refused(gpt2):
    with pytest.raises(ColdbrewError, match="at least one negative"):
        make(gpt2)(Batch(torch.tensor([0]), torch.tensor([[1]])))


# ---------------------------------------------------------------------------------- scoring
@pytest.mark.parametrize(
    "options", [{}, {"lm_mode": "dynamic", "lora": "4,8"}, {"lm_mode": "tune", "tune_items": 3}]
)
def test_cold_items_are_scored_from_their_text_alone(gpt2, options):
    model = make(gpt2, score="dot", **options)  # dot: an ID row adds to the vector as it is
    train_steps(model, 3)
    model.eval()
    before = model.item_embeddings().detach()
    with torch.no_grad():
        model.item_id.weight.add_(1.0)  # the ID table moves; cold rows must not
    after = model.item_embeddings().detach()
    cold = torch.tensor(COLD_ITEMS)
    warm = torch.tensor([i for i in range(12) if i not in COLD_ITEMS])
    torch.testing.assert_close(after[cold], before[cold])
    torch.testing.assert_close(after[warm], before[warm] + 1.0)
    assert model.score_users(torch.tensor([0, 5])).shape == (2, 12)


def test_id_dropout_drops_warm_ids_in_training_only(gpt2):
    model = make(gpt2, id_dropout=0.5, score="dot")
    items = torch.arange(9).repeat(500)  # warm items only
    text = torch.zeros(len(items), model.item_text.shape[1])
    model.train()
    with torch.no_grad():
        head = model.item_head(text)
        kept = (model.item_vectors(items, text) - head).abs().sum(dim=1) > 0
        assert abs(kept.float().mean().item() - 0.5) < 0.03  # 4,500 draws: std 0.0075
        model.eval()
        assert (model.item_vectors(items, text) - head).abs().sum(dim=1).gt(0).all()


def test_user_features_hold_history_and_user_text(gpt2):
    with_text, without = make(gpt2), make(gpt2, dataset=tiny_dataset(user_text=False))
    width = with_text.item_text.shape[1]
    assert with_text.user_features.shape == (6, 2 * width)
    assert without.user_features.shape == (6, width)
    torch.testing.assert_close(with_text.user_features[:, :width], without.user_features)


def test_user_history_is_the_mean_of_training_item_vectors():
    dataset = tiny_dataset()
    vectors = torch.randn(12, 5)
    history = user_history(dataset.train, vectors)
    for user in range(6):
        liked = dataset.train[user].indices
        torch.testing.assert_close(history[user], vectors[liked].mean(dim=0))


def test_a_dataset_without_item_texts_is_a_clear_error(gpt2):
    dataset = tiny_dataset()
    dataset.item_text = None
    with pytest.raises(ColdbrewError, match="needs item texts.*CLCRec"):
        make(gpt2, dataset=dataset)


# ---------------------------------------------------------------------------------- the cache
def test_second_build_reads_the_cache_and_loads_no_backbone(gpt2, count_loads):
    first = make(gpt2)
    assert count_loads == [gpt2]  # one load embeds both the item and the user texts
    second = make(gpt2)
    assert count_loads == [gpt2]  # nothing loaded: both read from the disk cache
    torch.testing.assert_close(second.item_text, first.item_text)
    make(gpt2, max_length=8)  # another key: texts are embedded again
    assert count_loads == [gpt2, gpt2]
    make(gpt2, lm_mode="dynamic", freeze=True)  # the graph needs the model; the cache is warm
    assert count_loads == [gpt2, gpt2, gpt2]


def test_build_prints_the_trainable_parameter_count(gpt2, capsys):
    torch.manual_seed(0)
    build(tiny_dataset(), LMConfig(backbone=gpt2, dim=8, hidden=16, lm_mode="dynamic", lora="4,8"))
    printed = capsys.readouterr().err
    # heads: item 32x16+16 + 16x8+8 = 664; user 64x16+16 + 16x8+8 = 1,176 -> 1,840
    # ID tables (6 + 12) x 8 = 144; LoRA 1,024 -> 3,008 trainable
    assert "3,008 trainable parameters" in printed and "LoRA adapters 1,024" in printed


# ---------------------------------------------------------------------------------- checkpoints
def round_trip(payload: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize(
    ("options", "backbone_keys"),
    [
        ({}, 0),
        ({"lm_mode": "dynamic", "freeze": True}, 0),
        ({"lm_mode": "dynamic", "lora": "4,8"}, 4),  # lora_A and lora_B of 2 c_attn layers
        ({"lm_mode": "dynamic"}, None),  # full fine-tuning: every backbone weight
        ({"lm_mode": "tune", "lora": "4,8", "tune_items": 3}, 2),  # the top c_attn's A and B
    ],
    ids=["cache", "dynamic-frozen", "dynamic-lora", "dynamic-full", "tune"],
)
def test_state_holds_trainable_weights_and_restores(gpt2, options, backbone_keys):
    model = make(gpt2, **options)
    train_steps(model, 3)
    state = round_trip(model.state_dict())  # what best.pt holds under "model"
    keys = [key for key in state if key.startswith(("backbone.", "tuned.backbone."))]
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert set(state) == trainable | {"_extra_state"}  # no frozen weight, no data buffer
    if backbone_keys is not None:
        assert len(keys) == backbone_keys and all(".lora_" in key for key in keys)
    restored = make(gpt2, seed=9, **options)
    restored.load_state_dict(state)
    model.eval(), restored.eval()
    torch.testing.assert_close(restored.item_embeddings(), model.item_embeddings())
    torch.testing.assert_close(restored.user_embeddings(), model.user_embeddings())


def test_a_state_refuses_a_backbone_that_changed(gpt2, tmp_path):
    import shutil

    folder = shutil.copytree(gpt2, tmp_path / "gpt2")
    state = make(str(folder)).state_dict()
    (folder / "config.json").write_text((folder / "config.json").read_text() + "\n")
    with pytest.raises(ColdbrewError, match="differs from the one this checkpoint"):
        make(str(folder)).load_state_dict(state)


def test_a_state_saved_before_the_identity_loads_unchecked(gpt2):
    model = make(gpt2)
    state = {key: value for key, value in model.state_dict().items() if key != "_extra_state"}
    restored = make(gpt2, seed=4)
    restored.load_state_dict(state)
    model.eval(), restored.eval()
    torch.testing.assert_close(restored.item_embeddings(), model.item_embeddings())


def test_the_retired_standalone_lm_format_is_a_clear_error(tmp_path):
    from coldbrew.training.checkpoint import load_checkpoint

    torch.save({"format": "coldbrew-lm", "version": 1, "state_dict": {}}, tmp_path / "old.pt")
    with pytest.raises(ColdbrewError, match="standalone LM checkpoint.*no longer reads"):
        load_checkpoint(tmp_path / "old.pt")


def test_same_seed_same_result(gpt2):
    runs = []
    for _ in range(2):
        model = make(gpt2, seed=3, lm_mode="dynamic", lora="4,8")
        losses = train_steps(model, 3)  # dropout and ID dropout draw from the seeded generator
        model.eval()
        runs.append((losses, model.item_embeddings().detach()))
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1])
    other = make(gpt2, seed=4, lm_mode="dynamic", lora="4,8")
    assert train_steps(other, 3) != runs[0][0]


# ---------------------------------------------------------------------------------- real data
def test_ml100k_items_and_users_are_described_by_text(gpt2):
    import warnings

    from coldbrew.data.loaders import movielens
    from conftest import shared_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = movielens.load(shared_path("ml-100k"), features=[])
    model = make(gpt2, dataset=dataset, max_length=32)
    width = model.item_text.shape[1]
    assert model.user_features.shape == (943, 2 * width)  # history + u.user text
    model.eval()
    assert model.item_embeddings().shape == (1682, 8)
    assert torch.isfinite(model.score_users(torch.arange(4))).all()


def test_clcrec_layout_is_refused_with_a_clear_error(gpt2):
    from coldbrew.data.loaders import clcrec_layout
    from conftest import shared_path

    with pytest.warns(UserWarning):  # the unpublished feature files are missing
        dataset = clcrec_layout.load(shared_path("clcrec-movielens"), trust_pickle=True)
    with pytest.raises(ColdbrewError, match="needs item texts"):
        make(gpt2, dataset=dataset)


def with_features(genre: torch.Tensor | None = None):
    """The tiny data with a 3-wide genre block and a precomputed text block."""
    import dataclasses

    generator = torch.Generator().manual_seed(3)
    genre = torch.rand(12, 3, generator=generator) if genre is None else genre
    features = {"genre": genre, "text": torch.rand(12, 5, generator=generator)}
    return dataclasses.replace(tiny_dataset(), features=features)


def test_item_features_join_the_text_and_the_precomputed_text_is_left_out(gpt2):
    data = with_features()
    model = make(gpt2, dataset=data)
    text_width = model.item_text.shape[1]
    assert model.item_head[0].in_features == text_width + 3  # genre only, not the text block
    torch.testing.assert_close(model.item_features, F.normalize(data.features["genre"], dim=1))
    assert make(gpt2, dataset=data, item_features=False).item_head[0].in_features == text_width
    # a cold item's vector follows its feature row: change it, and only that item moves
    moved = data.features["genre"].clone()
    moved[COLD_ITEMS[0]] = torch.tensor([5.0, 0.0, 0.0])
    other = make(gpt2, dataset=with_features(moved))
    model.eval(), other.eval()
    before, after = model.item_embeddings(), other.item_embeddings()
    changed = (before - after).abs().sum(dim=1) > 1e-6
    assert changed.tolist() == [item == COLD_ITEMS[0] for item in range(12)]


def test_cosine_scores_unit_vectors(gpt2):
    model = make(gpt2, score="cosine", loss="infonce", num_neg=2, temperature=0.1)
    model.eval()
    users, items = model.user_embeddings(), model.item_embeddings()
    torch.testing.assert_close(users.norm(dim=1), torch.ones(len(users)))
    torch.testing.assert_close(items.norm(dim=1), torch.ones(len(items)))
    new = model.encode_items(texts=["a new film"])
    torch.testing.assert_close(new.norm(dim=1), torch.ones(1))


def test_a_new_item_is_encoded_from_its_text_and_raw_feature_blocks(gpt2):
    from lm_support import ITEM_TEXTS

    data = with_features()
    model = make(gpt2, dataset=data).eval()
    assert model.feature_widths == {"genre": 3}
    cold = COLD_ITEMS[0]
    raw = data.features["genre"][cold : cold + 1] * 7.0  # raw scale: normalised as the data's
    vector = model.encode_items(texts=[ITEM_TEXTS[cold]], features=raw)
    # as the cold item itself is scored: its text and its feature row
    torch.testing.assert_close(vector[0], model.item_embeddings()[cold], rtol=1e-4, atol=1e-5)
    with pytest.warns(UserWarning, match=r"feature blocks \(genre\) are not given"):
        alone = model.encode_items(texts=[ITEM_TEXTS[cold]])
    assert not torch.allclose(alone, vector, atol=1e-4)
    with pytest.raises(ColdbrewError, match=r"expected \(n, 3\)"):
        model.encode_items(texts=[ITEM_TEXTS[cold]], features=torch.ones(1, 5))
    with pytest.raises(ColdbrewError, match="1 item texts but 2 feature rows"):
        model.encode_items(texts=[ITEM_TEXTS[cold]], features=torch.ones(2, 3))
    plain = make(gpt2, dataset=data, item_features=False).eval()
    with pytest.raises(ColdbrewError, match="reads no item feature blocks"):
        plain.encode_items(texts=[ITEM_TEXTS[cold]], features=raw)
