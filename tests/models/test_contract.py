"""One contract every registered model keeps, on synthetic data with a known structure.

For each model in the registry: ``forward(batch)`` is the loss (a scalar and named scalar
terms); training lowers it; the same seed gives the same parameters (one thread); a checkpoint
round trip predicts identically. Recommenders also: cold items are scored from their content
(moving content between cold items moves their scores with it). A model registered without an
entry in ``SMALL`` fails here until it gets one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from coldbrew.config import make_config
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import LossOutput, Recommender
from coldbrew.registry import MODELS
from coldbrew.training.run import build_trainer, load_run_dataset

# small, fast settings per registered model, data included ("lm" adds a tiny GPT-2 below)
SMALL = {
    "clcrec": {"data": "synthetic:small", "dim": 16, "hidden": 32, "num_neg": 8},
    "lstm": {"data": "synthetic:series=3,days=100", "window": 14, "hidden": 16, "layers": 1},
    "lm": {"data": "tiny-text", "dim": 8, "hidden": 16, "loss": "infonce", "num_neg": 4},
    "bpr": {"data": "synthetic:small", "dim": 16},
    "deepmusic": {"data": "synthetic:small", "backbone_dim": 8, "hidden": 32},
    "dropoutnet": {"data": "synthetic:small", "backbone_dim": 8, "dim": 8, "hidden": 32},
    "heater": {"data": "synthetic:small", "backbone_dim": 8, "dim": 8, "hidden": 32},
    # GAR's loss is a game's (each player lowers its own term and raises the other's): its
    # sum falls steadily once the similarity term carries half the generator's loss
    "gar": {
        "data": "synthetic:small",
        "backbone_dim": 8,
        "backbone_epochs": 3,
        "hidden": 16,
        "tower_dim": 8,
        "similarity_weight": 0.5,
    },
    "aldi": {"data": "synthetic:small", "backbone_dim": 8, "backbone_epochs": 3, "hidden": 16},
    "knn": {"data": "synthetic:small", "backbone_dim": 8, "backbone_epochs": 3},
    "ridge": {"data": "synthetic:small", "backbone_dim": 8, "backbone_epochs": 3},
    "marec": {"data": "synthetic:small", "ease_lambda": 10.0},
    "popularity": {"data": "synthetic:small", "ridge_lambda": 1.0},
}
RUN = {"batch_size": 256, "lr": 0.01, "quiet": True, "device": "cpu", "seed": 4}
# modes of a model that take another path through it, checked as models of their own
VARIANTS = {"lm+tune": {"lm_mode": "tune", "lora": "4,8", "tune_items": 4}}
# models built from other runs, not from data: their own tests cover what applies to them
COMPOSITES = {"blend": "tests/research/test_blend_runs.py"}
CONTRACT_MODELS = sorted(set(MODELS) - set(COMPOSITES))
RECOMMENDERS = [name for name in CONTRACT_MODELS if MODELS[name].task == "recommendation"]
# warm baselines that read no content: their cold items score exactly zero instead
WITHOUT_CONTENT = {"bpr"}
WITHOUT_MATMUL = {"bpr"}
# recommenders that score a new item from its feature vector (coldbrew recommend --item-vector);
# the LM recommender reads text instead (tests/models/test_lm_model.py)
FROM_VECTORS = sorted(set(RECOMMENDERS) - WITHOUT_CONTENT - {"lm"})


@pytest.fixture(scope="module", autouse=True)
def collaborative_teacher():
    """Models built from the collaborative backbone learn from a test SVD teacher instead."""
    from teacher_support import PROVIDER

    patch = pytest.MonkeyPatch()
    patch.setattr("coldbrew.registry.COLLABORATIVE", PROVIDER)
    yield
    patch.undo()


# models with something to train (content KNN has none: its own tests cover its vectors)
TRAINED = [name for name in CONTRACT_MODELS if MODELS[name].trains]
TRAINED_AND_VARIANTS = [*TRAINED, *VARIANTS]


@pytest.fixture(scope="module", autouse=True)
def tiny_gpt2_backbone(tmp_path_factory):
    """The LM recommender's backbone: a tiny random GPT-2 folder, and a private text cache."""
    from lm_support import tiny_gpt2

    folder = tiny_gpt2(tmp_path_factory.mktemp("gpt2"))
    SMALL["lm"]["backbone"] = str(folder)
    patch = pytest.MonkeyPatch()
    patch.setenv("COLDBREW_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    patch.undo()


def settings(name: str, seed: int = 1):
    model = name.split("+")[0]
    return make_config(
        {**RUN, "model": model, **SMALL[model], **VARIANTS.get(name, {}), "seed": seed}
    )


@pytest.fixture(scope="module")
def data(tiny_gpt2_backbone):
    """Each model's data, loaded once (the seed of its split stays 4); the LM's has texts."""
    from lm_support import tiny_dataset

    loaded = {"lm": tiny_dataset()}
    for name in SMALL:
        if name not in loaded:
            loaded[name] = load_run_dataset(make_config({**RUN, "model": name, **SMALL[name]}))
    return loaded


def trainer_for(name: str, data, seed: int = 1):
    dataset = data[name.split("+")[0]] if isinstance(data, dict) else data
    return build_trainer(settings(name, seed), dataset)


def samples(trainer, count: int, start: int = 0) -> torch.Tensor:
    """``count`` sample indices from ``start``, wrapping around the task's samples."""
    return torch.arange(start, start + count) % trainer.task.num_samples()


def predictions(trainer, rows: int = 20) -> torch.Tensor:
    """What the model outputs for evaluation (in eval mode, as the evaluator runs it): scores
    of users, or forecasts of windows."""
    model, was_training = trainer.model, trainer.model.training
    model.eval()
    try:
        if MODELS[trainer.config.model].task == "recommendation":
            return model.score_users(torch.arange(rows) % model.user_embeddings().shape[0])
        with torch.no_grad():
            return model.predict(trainer.task.make_batch(samples(trainer, rows)).inputs)
    finally:
        model.train(was_training)


def test_every_registered_model_has_small_settings():
    assert set(CONTRACT_MODELS) == set(SMALL)


@pytest.mark.parametrize("name", TRAINED_AND_VARIANTS)
def test_forward_is_the_loss_with_named_terms(name, data):
    trainer = trainer_for(name, data)
    batch = trainer.task.make_batch(samples(trainer, 32))
    output = trainer.model(batch)
    assert isinstance(output, LossOutput)
    assert output.total.shape == () and output.total.requires_grad
    assert output.terms and all(value.shape == () for value in output.terms.values())
    assert predictions(trainer, 5).shape[0] == 5


@pytest.mark.parametrize("name", [*RECOMMENDERS, *VARIANTS])
def test_recommenders_score_every_item(name, data):
    trainer = trainer_for(name, data)
    dataset = data[name.split("+")[0]]
    assert trainer.model.score_users(torch.arange(5)).shape == (5, dataset.num_items)
    assert trainer.model.item_embeddings().shape[0] == dataset.num_items


@pytest.mark.parametrize("name", TRAINED_AND_VARIANTS)
def test_training_lowers_the_loss(name, data):
    trainer = trainer_for(name, data)
    first = trainer.train_epoch()["loss"]
    for _ in range(2):
        last = trainer.train_epoch()["loss"]
    assert last < first


@pytest.mark.parametrize("name", TRAINED_AND_VARIANTS)
def test_same_seed_same_parameters_on_one_thread(name, data, one_thread):
    runs = []
    for seed in (1, 1, 2):
        trainer = trainer_for(name, data, seed)
        for step in range(2):
            trainer.train_step(
                torch.arange(step * 64, (step + 1) * 64) % trainer.task.num_samples()
            )
        runs.append(torch.cat([p.detach().reshape(-1) for p in trainer.model.parameters()]))
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


@pytest.mark.parametrize("name", TRAINED_AND_VARIANTS)
def test_checkpoint_round_trip_predicts_identically(name, data):
    trained = trainer_for(name, data)
    trained.train_step(samples(trained, 256))
    fresh = trainer_for(name, data, seed=9)
    assert not torch.equal(predictions(fresh), predictions(trained))
    fresh.model.load_state_dict(trained.model.state_dict())
    torch.testing.assert_close(predictions(fresh), predictions(trained))


def permuted_cold_content(dataset, permutation: np.ndarray):
    """The dataset with cold item ``cold[i]`` given the content of ``cold[permutation[i]]``."""
    cold = dataset.cold_items
    source = np.arange(dataset.num_items)
    source[cold] = cold[permutation]
    features = {
        name: feature[torch.from_numpy(source)] for name, feature in dataset.features.items()
    }
    texts = None if dataset.item_text is None else [dataset.item_text[i] for i in source]
    import dataclasses

    return dataclasses.replace(dataset, features=features, item_text=texts)


@pytest.mark.parametrize("name", [*sorted(set(RECOMMENDERS) - WITHOUT_CONTENT), *VARIANTS])
def test_cold_items_are_scored_from_their_content(name, data):
    dataset = data[name.split("+")[0]]
    trainer = trainer_for(name, dataset)
    if MODELS[name.split("+")[0]].trains:
        trainer.train_step(samples(trainer, 256))
    permutation = np.random.default_rng(0).permutation(len(dataset.cold_items))
    moved = trainer_for(name, permuted_cold_content(dataset, permutation))
    moved.model.load_state_dict(trainer.model.state_dict())
    users, cold = torch.arange(min(30, dataset.num_users)), torch.from_numpy(dataset.cold_items)
    before = trainer.model.score_users(users)[:, cold]
    after = moved.model.score_users(users)[:, cold]
    # cold item i now carries item permutation[i]'s content, so it gets that item's scores
    torch.testing.assert_close(after, before[:, torch.from_numpy(permutation)])


def raw_features(dataset, items: np.ndarray) -> torch.Tensor:
    """The raw dense feature blocks of ``items``, concatenated in the dataset's order, as
    ``coldbrew recommend --item-vector`` takes a new item's."""
    blocks = [block for block in dataset.features.values() if isinstance(block, torch.Tensor)]
    return torch.cat([block[torch.from_numpy(items)].float() for block in blocks], dim=1)


@pytest.mark.parametrize("name", FROM_VECTORS)
def test_a_new_item_scores_as_the_cold_item_with_its_content(name, data):
    dataset = data[name]
    trainer = trainer_for(name, dataset)
    if MODELS[name].trains:
        trainer.train_step(samples(trainer, 256))
    model, cold = trainer.model.eval(), dataset.cold_items[:4]
    # twice the content: every block is row-normalised, so the scale is no information
    new = model.encode_items(features=2 * raw_features(dataset, cold))
    users = torch.arange(min(30, dataset.num_users))
    with torch.no_grad():
        torch.testing.assert_close(new, model.item_embeddings()[torch.from_numpy(cold)])
        scores = model.user_embeddings()[users] @ new.T
    torch.testing.assert_close(scores, model.score_users(users)[:, torch.from_numpy(cold)])


@pytest.mark.parametrize("name", FROM_VECTORS)
def test_a_new_item_of_another_width_or_as_text_is_refused(name, data):
    dataset = data[name]
    model = trainer_for(name, dataset).model
    width = raw_features(dataset, dataset.cold_items[:1]).shape[1]
    with pytest.raises(
        ColdbrewError, match=rf"of shape \(1, {width + 1}\); expected \(n, {width}\)"
    ):
        model.encode_items(features=torch.ones(1, width + 1))
    with pytest.raises(ColdbrewError, match="from its feature vector .*, not from text"):
        model.encode_items(texts=["a film"])


def test_the_refusal_of_a_new_item_names_the_models_that_can_score_one():
    refusal = str(pytest.raises(ColdbrewError, Recommender().encode_items, features=None).value)
    named = re.search(r"models that can: (.+) \(--item-vector\)", refusal).group(1)
    # popularity scores a new item too, but one score for every user: it finds no users
    assert sorted(named.split(", ")) == [name for name in FROM_VECTORS if MODELS[name].personalised]


@pytest.mark.parametrize("name", sorted(WITHOUT_CONTENT))
def test_models_without_content_score_cold_items_zero_after_training(name, data):
    dataset = data[name]
    trainer = trainer_for(name, dataset)
    trainer.train_step(samples(trainer, 256))
    scores = trainer.model.score_users(torch.arange(min(30, dataset.num_users)))
    cold = torch.from_numpy(dataset.cold_items)
    assert torch.equal(scores[:, cold], torch.zeros(len(scores), len(cold)))
    warm = torch.from_numpy(dataset.warm_items)
    assert scores[:, warm].abs().sum() > 0


@pytest.mark.parametrize("name", [*sorted(TRAINED), "clcrec+neighbor"])
def test_the_step_traces_on_fake_tensors_for_coldbrew_memory(name, data):
    from coldbrew.training.memory.estimate import trace_step

    config = settings(name.split("+")[0])
    config.model_options.neighbor_loss = name.endswith("+neighbor")  # lists built for real
    trace = trace_step(config, data[name.split("+")[0]], 32)
    assert trace.peak_bytes["total"] > 0 and trace.bytes_moved > 0
    # FlopCounterMode counts matrix products; BPR's step is gathers and element-wise products
    assert trace.flops > 0 or name in WITHOUT_MATMUL


def test_a_step_that_cannot_be_traced_says_why():
    from coldbrew.errors import ColdbrewError
    from coldbrew.training.memory.estimate import trace_step

    config = make_config({**RUN, "model": "lm", **SMALL["lm"], "lm_mode": "dynamic"})
    with pytest.raises(ColdbrewError, match="dynamic mode loads pretrained backbone weights"):
        trace_step(config, None, 32)
