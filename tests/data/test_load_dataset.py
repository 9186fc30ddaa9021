"""``load_dataset`` across sources: one seed rule and one default seed for every loader."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

from coldbrew.config import TrainConfig
from coldbrew.data import DEFAULT_SEED, check_seed, load_dataset
from coldbrew.data.dataset import MAX_SEED
from coldbrew.data.loaders import csv_coldstart, movielens, synthetic
from coldbrew.errors import DataError


def write_tiny_ml100k(root: Path) -> Path:
    """10 users each rating all 10 items: enough for a seeded cold split of 2 items."""
    root.mkdir()
    flags = "|".join(["0"] * 18 + ["1"])
    items = "".join(
        f"{item}|Film {item} (1990)|01-Jan-1990||http://x|{flags}\n" for item in range(1, 11)
    )
    (root / "u.item").write_text(items)
    ratings = "".join(
        f"{user}\t{item}\t4\t881250949\n" for user in range(1, 11) for item in range(1, 11)
    )
    (root / "u.data").write_text(ratings)
    return root


def write_tiny_csv_split(root: Path) -> Path:
    root.mkdir()
    (root / "items.csv").write_text("iid,title,genres\n1,A (1990),Drama\n2,B (1991),Comedy\n")
    (root / "train.csv").write_text("uid,iid\n1,1\n2,1\n")
    (root / "cold_val.csv").write_text("uid,iid\n1,2\n")
    return root


@pytest.fixture
def sources(tmp_path) -> dict[str, str]:
    """One dataset of each kind whose loader receives the seed."""
    return {
        "ml-100k": str(write_tiny_ml100k(tmp_path / "ml")),
        "csv": str(write_tiny_csv_split(tmp_path / "csv")),
        "synthetic": "synthetic:users=30,items=20,interactions=5",
    }


@pytest.mark.parametrize("kind", ["ml-100k", "csv", "synthetic"])
@pytest.mark.parametrize("seed", [-1, 2**32, 99_999_999_999, 1.5, "3", True])
def test_a_bad_seed_is_a_one_line_data_error_for_every_source(sources, kind, seed):
    with pytest.raises(DataError, match=r"seed must be .*0 to 2\*\*32 - 1") as caught:
        load_dataset(sources[kind], features="genre" if kind != "synthetic" else None, seed=seed)
    assert "\n" not in str(caught.value)


def test_a_seed_in_the_synthetic_name_is_checked_too():
    with pytest.raises(DataError, match="seed must be"):
        load_dataset("synthetic:users=30,items=20,interactions=5,seed=-2")


def test_the_largest_seed_works_everywhere_it_is_used(sources):
    assert check_seed(MAX_SEED) == 2**32 - 1 and check_seed(np.int64(5)) == 5
    np.random.RandomState(MAX_SEED)  # the trainer's legacy numpy seeding takes it as well
    dataset = load_dataset(sources["ml-100k"], features="genre", seed=MAX_SEED)
    assert len(dataset.cold_items) == 2
    assert load_dataset(sources["synthetic"], seed=MAX_SEED).num_users == 30


def test_every_loader_defaults_to_the_training_seed():
    from coldbrew.data import dataset

    assert DEFAULT_SEED == dataset.DEFAULT_SEED == TrainConfig().seed == 1
    for loader in (load_dataset, movielens.load, csv_coldstart.load, synthetic.load):
        assert inspect.signature(loader).parameters["seed"].default == TrainConfig().seed, loader


def test_a_plain_load_gives_the_split_train_uses(sources):
    plain = load_dataset(sources["ml-100k"], features="genre")
    as_trained = load_dataset(sources["ml-100k"], features="genre", seed=TrainConfig().seed)
    np.testing.assert_array_equal(plain.cold_items, as_trained.cold_items)
    assert (plain.train != as_trained.train).nnz == 0
    # and the seed matters here, so the comparison above is not vacuous
    seeds = range(2, 12)
    others = [load_dataset(sources["ml-100k"], features="genre", seed=s) for s in seeds]
    assert any(not np.array_equal(o.cold_items, plain.cold_items) for o in others)


def test_data_notes_are_notes_not_warnings(sources, monkeypatch):
    """What a person should know about the data is in ``notes``; nothing goes to ``warnings``."""
    from coldbrew.data import features

    monkeypatch.setattr(features, "text_encoder_available", lambda: False)
    ml100k = Path(sources["ml-100k"])
    (ml100k / "u.user").write_text("".join(f"{user}|30|M|other|0\n" for user in range(1, 10)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = {kind: load_dataset(source) for kind, source in sources.items()}
    assert "u.data: 10 rating(s) by 1 user(s) not in u.user (e.g. user 10) dropped" in (
        loaded["ml-100k"].notes
    )
    assert "no cold_test.csv: test metrics skipped" in loaded["csv"].notes
    for kind in ("ml-100k", "csv"):
        assert any(note.startswith("text features skipped") for note in loaded[kind].notes)


def no_encoder(texts, options):
    raise AssertionError("the text encoder ran")


def patch_encoder(monkeypatch, encoder) -> None:
    """Both text loaders call ``encoder`` for their text block, as if the [text] extra were
    installed."""
    from coldbrew.data import features

    for module in (movielens, csv_coldstart):
        monkeypatch.setattr(module, "text_embeddings", encoder)
    monkeypatch.setattr(features, "text_encoder_available", lambda: True)


@pytest.mark.parametrize("kind", ["ml-100k", "csv"])
@pytest.mark.parametrize("features", [None, ["genre", "text"], ["text"]])
def test_without_text_vectors_no_encoder_runs_and_the_texts_stay(
    sources, kind, features, monkeypatch
):
    """``text_vectors=False`` (a model that reads the texts itself) leaves the text block out
    whatever ``features`` asks, keeps the other blocks asked for and the item texts."""
    patch_encoder(monkeypatch, no_encoder)
    dataset = load_dataset(sources[kind], features=features, text_vectors=False)
    assert "text" not in dataset.features
    assert ("genre" in dataset.features) == (features != ["text"])
    assert dataset.item_text is not None and len(dataset.item_text) == dataset.num_items


def test_the_lm_loads_its_data_without_the_text_block_and_others_with_it(sources, monkeypatch):
    """The run's data for the LM (``ModelSpec.reads_text_vectors`` False) runs no encoder; a
    model that reads the text block gets it; a search's cache keeps the two loads apart."""
    import torch

    from coldbrew.config import make_config
    from coldbrew.research.search.study import DataCache
    from coldbrew.training.build import load_run_dataset

    encoded: list[int] = []

    def counting_encoder(texts, options):
        encoded.append(len(texts))
        return torch.ones(len(texts), 4)

    patch_encoder(monkeypatch, counting_encoder)
    data = {"data": sources["ml-100k"], "features": ["genre", "text"], "quiet": True}
    lm, clcrec = make_config({**data, "model": "lm"}), make_config({**data, "model": "clcrec"})
    assert "text" not in load_run_dataset(lm).features and encoded == []
    assert "text" in load_run_dataset(clcrec).features and encoded == [10]
    cache = DataCache()
    assert "text" not in cache(lm).features and "text" in cache(clcrec).features
    assert cache(lm) is cache(lm) and len(cache.loaded) == 2 and encoded == [10, 10]
