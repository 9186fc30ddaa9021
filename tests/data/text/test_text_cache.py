"""The text-vector cache text by text, bf16 where the CPU has it, the note of texts cut, rates.

A tiny sentence-transformers folder (sentence_support) stands for the backbone: no hub, no
packaged weights; each test has its own cache folder.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest
import torch

from coldbrew.data.text import backbones, embedder, encode_speed, text_cache
from coldbrew.data.text.sentence_models import sentence_model
from coldbrew.errors import DataError
from lm_support import ITEM_TEXTS
from sentence_support import tiny_sentence_folder

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> dict:
    """``encode_texts``'s options for a tiny folder."""
    folder = tiny_sentence_folder(tmp_path_factory.mktemp("tiny"))
    return asdict(sentence_model(str(folder), progress=False))


def encode(texts, model, cache, **options):
    return embedder.encode_texts(texts, **model, cache=cache, progress=False, **options)


@pytest.fixture
def encoded(monkeypatch) -> list[list[str]]:
    """The lists of texts ``_encode`` is asked to encode, call by call."""
    calls: list[list[str]] = []
    real = embedder._encode

    def spy(texts, *args, **kwargs):
        calls.append(list(texts))
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(embedder, "_encode", spy)
    return calls


def refuse_loading(*args, **kwargs):
    raise AssertionError("the model must not be loaded")


# ------------------------------------------------------------------------- the same numbers
def test_fresh_per_text_and_whole_list_vectors_are_identical(model, tmp_path, monkeypatch):
    texts = ITEM_TEXTS[:6]
    fresh = encode(texts, model, None)
    stored = encode(texts, model, tmp_path / "store")  # encoded into a store
    monkeypatch.setattr(backbones, "load_backbone", refuse_loading)
    per_text = encode(texts[::-1], model, tmp_path / "store")  # read back, text by text
    key = embedder.encoder_key(model["backbone"], model["pooling"], True, model["max_length"])
    text_cache.write_cached(text_cache.whole_list_file(texts, tmp_path / "old", key), fresh)
    whole = encode(texts, model, tmp_path / "old")  # a file of earlier versions
    assert torch.equal(stored, fresh) and torch.equal(per_text, fresh.flip(0))
    assert torch.equal(whole, fresh)
    assert not list((tmp_path / "old").glob("store-*"))  # read, nothing encoded or added


def test_a_second_run_encodes_nothing_and_a_grown_catalogue_only_its_new_texts(
    model, tmp_path, encoded
):
    first = encode(ITEM_TEXTS[:6], model, tmp_path)
    again = encode(ITEM_TEXTS[:6], model, tmp_path)
    grown = encode(ITEM_TEXTS[:8] + ITEM_TEXTS[:2], model, tmp_path)  # 2 new, 2 repeated
    assert encoded == [ITEM_TEXTS[:6], ITEM_TEXTS[6:8]]
    assert torch.equal(again, first) and torch.equal(grown[:6], first)
    assert torch.equal(grown[8:], first[:2])
    (store,) = tmp_path.glob("store-*")
    assert len(list(store.glob("*.digests.npy"))) == 2  # one shard per encode


def test_a_half_written_shard_is_not_read(tmp_path):
    store = tmp_path / "store-x"
    text_cache.append_shard(store, ["a", "b"], torch.ones(2, 3))
    (digests,) = store.glob("*.digests.npy")
    digests.unlink()  # as if its writer died between the two files
    found, missing = text_cache.lookup(["a", "b"], [store])
    assert found == {} and missing == [0, 1]
    assert text_cache.count_found(["a", "b"], [store]) == 0


def test_two_shards_of_the_same_texts_read_as_one(tmp_path):
    store = tmp_path / "store-x"
    text_cache.append_shard(store, ["a", "b"], torch.tensor([[1.0], [2.0]]))
    text_cache.append_shard(store, ["b", "c"], torch.tensor([[2.0], [3.0]]))  # a second writer
    found, missing = text_cache.lookup(["c", "a", "b", "d", "a"], [store])
    assert missing == [3]
    assert {position: float(vector[0]) for position, vector in found.items()} == {
        0: 3.0,
        1: 1.0,
        2: 2.0,
        4: 1.0,
    }
    assert text_cache.count_found(["a", "c", "d", "a"], [store]) == 2  # distinct texts held


# ------------------------------------------------------------------------------- precision
def test_a_bf16_run_takes_fp32_vectors_but_not_the_reverse(model, tmp_path, monkeypatch, encoded):
    texts = ITEM_TEXTS[:4]
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp32")
    fp32 = encode(texts, model, tmp_path / "a")
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "bf16")
    assert torch.equal(encode(texts, model, tmp_path / "a"), fp32)  # the reference, taken
    assert len(encoded) == 1
    bf16 = encode(texts, model, tmp_path / "b")
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp32")
    assert torch.equal(encode(texts, model, tmp_path / "b"), fp32)  # encoded again at fp32
    assert len(encoded) == 3
    cosine = torch.nn.functional.cosine_similarity(bf16, fp32)
    assert not torch.equal(bf16, fp32) and cosine.min() > 0.999  # measured: 0.9999+


def test_bf16_only_on_a_cpu_that_has_it_unless_told(monkeypatch):
    monkeypatch.delenv("COLDBREW_TEXT_PRECISION")
    monkeypatch.setattr(encode_speed, "cpu_has_bf16", lambda: True)
    assert encode_speed.text_precision("cpu") == "bf16"
    assert encode_speed.text_precision("cuda") == "fp32"  # CUDA keeps what it did
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp32")
    assert encode_speed.text_precision("cpu") == "fp32"
    monkeypatch.setattr(encode_speed, "cpu_has_bf16", lambda: False)
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "auto")
    assert encode_speed.text_precision("cpu") == "fp32"
    monkeypatch.setenv("COLDBREW_TEXT_PRECISION", "fp16")
    with pytest.raises(DataError, match="text precision must be auto, fp32 or bf16"):
        encode_speed.text_precision("cpu")


def test_cpu_flags_read_the_first_processor():
    amx = "processor\t: 0\nflags\t\t: fpu sse avx512f amx_bf16 amx_tile\n\nprocessor\t: 1\n"
    assert {"amx_bf16", "avx512f"} <= encode_speed.cpu_flags(amx)
    assert encode_speed.cpu_flags(amx) & set(encode_speed.BF16_FLAGS) == {"amx_bf16"}
    plain = "processor\t: 0\nflags\t\t: fpu sse avx2\n"
    assert not encode_speed.cpu_flags(plain) & set(encode_speed.BF16_FLAGS)
    assert encode_speed.cpu_flags("no flags here") == set()


# ------------------------------------------------------------------------ cut texts, rates
def test_texts_cut_by_the_budget_are_counted_once_and_cut_as_the_tokenizer_cuts(model, caplog):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model["backbone"])
    texts = [ITEM_TEXTS[0], " ".join(ITEM_TEXTS), ITEM_TEXTS[1]]
    with caplog.at_level("WARNING", logger="coldbrew"):
        ids = embedder.token_ids(texts, tokenizer, 12, "tiny (fp32)")
    reference = tokenizer(texts, truncation=True, max_length=12)["input_ids"]
    assert ids == reference and max(map(len, ids)) == 12
    assert caplog.messages == [
        "2 of 3 texts are longer than tiny's 12 tokens: their ends are not read"
    ]


def test_an_encode_of_some_batches_remembers_its_rate(model, tmp_path):
    texts = [f"{text} {n}" for n in range(3) for text in ITEM_TEXTS][:24]
    encode(texts, model, tmp_path, batch_size=4)  # 6 batches: a rate worth keeping
    key = embedder.encoder_key(model["backbone"], model["pooling"], True, model["max_length"])
    threads = torch.get_num_threads()
    rate = encode_speed.stored_rate(tmp_path, encode_speed.rate_key(key, "fp32", threads))
    assert rate is not None and rate > 0
    assert encode_speed.stored_rate(tmp_path, "another encoder") is None
    assert encode_speed.estimate(1000, 250.0) == 4.0 and encode_speed.estimate(10, None) is None


def test_the_plan_reads_the_cache_and_a_remembered_rate_without_loading_the_model(
    model, tmp_path, monkeypatch
):
    from coldbrew.data.text.sentence_models import TextEncoder
    from coldbrew.data.text.text_plan import describe_plan, text_block_plan

    encode(ITEM_TEXTS[:4], model, tmp_path)
    key = embedder.encoder_key(model["backbone"], model["pooling"], True, model["max_length"])
    threads = torch.get_num_threads()
    encode_speed.remember_rate(tmp_path, encode_speed.rate_key(key, "fp32", threads), 100.0)
    monkeypatch.setattr(backbones, "load_backbone", refuse_loading)
    texts = [*ITEM_TEXTS[:6], "", ITEM_TEXTS[0]]  # 7 items with text, 6 distinct, 4 cached
    plan = text_block_plan(texts, TextEncoder.parse(model["backbone"]), cache=tmp_path)
    (member,) = plan["members"]
    assert (plan["items_with_text"], plan["distinct_texts"]) == (7, 6)
    assert (member["cached"], member["to_encode"], member["rate"]) == (4, 2, "remembered")
    chars = sum(map(len, ITEM_TEXTS[:6])) * 2 // 6  # the share of 2 texts in 6
    assert member["estimate_s"] == chars / 100.0
    said = describe_plan(plan)
    assert said.startswith("7 items with text, 6 distinct; ")
    assert said.endswith(", 4 cached, 2 to encode: about 1 s (rate remembered on this machine)")
