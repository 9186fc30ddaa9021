"""Joined text encoders (``--text-encoder A+B``): the text block is each member's vectors side
by side, each read from (or written to) its own cache entry; a run records the pair, so it is
evaluated, exported and scores a new item's text with both members again."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from coldbrew.data import features, load_dataset
from coldbrew.data.text import backbones
from coldbrew.data.text.sentence_models import (
    TextEncoder,
    described_models,
    sentence_model,
    split_members,
)
from coldbrew.errors import DataError
from lm_support import ITEM_TEXTS
from sentence_support import tiny_sentence_folder

pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("private_cache")
TEXTS = ITEM_TEXTS[:5]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Two tiny encoders of the same shapes and other weights."""
    root = tmp_path_factory.mktemp("pair")
    return tiny_sentence_folder(root / "first"), tiny_sentence_folder(root / "second", seed=1)


def block(value: str) -> torch.Tensor:
    encoding = features.TextEncoding(TextEncoder.parse(value), progress=False)
    return features.text_embeddings(TEXTS, encoding)


def identity(value: str) -> str:
    return TextEncoder.parse(value).identity()


def refuse_loading(*args, **kwargs):
    raise AssertionError("the text model must not be loaded: the embeddings are cached")


# ------------------------------------------------------------------------------ the choice
def test_members_are_split_on_plus_and_checked_each(folders):
    first, second = map(str, folders)
    assert split_members("minilm+mpnet@128") == ["minilm", "mpnet@128"]
    assert split_members("mpnet@128") == ["mpnet@128"]
    joined = f"minilm+{first}@16+{second}"
    assert TextEncoder.parse(joined).spelling == joined
    assert TextEncoder.parse("mpnet+mpnet@128").spelling == "mpnet+mpnet@128"  # other vectors
    with pytest.raises(DataError, match=r"'bert' in 'minilm\+bert' is neither minilm, mpnet"):
        TextEncoder.parse("minilm+bert")
    with pytest.raises(DataError, match=r"token budget after '@' must be a positive"):
        TextEncoder.parse("minilm+mpnet@0")


@pytest.mark.parametrize("value", ["minilm+", "+mpnet", "minilm++mpnet", "minilm+ "])
def test_an_empty_member_is_refused(value):
    with pytest.raises(DataError, match=r"has an empty member; join two or more encoders"):
        TextEncoder.parse(value)


def test_a_repeated_member_is_refused(folders, monkeypatch):
    with pytest.raises(DataError, match=r"names 'minilm' twice \('minilm'\); each member"):
        TextEncoder.parse("minilm+minilm")
    with pytest.raises(DataError, match=r"names 'mpnet@64' twice"):
        TextEncoder.parse("mpnet@64+minilm+mpnet@64")
    first = folders[0]
    monkeypatch.chdir(first.parent)  # one folder spelled two ways
    with pytest.raises(DataError, match="twice"):
        TextEncoder.parse(f"{first}+{first.name}")


def test_a_folder_whose_name_holds_a_plus_is_one_member(folders, tmp_path):
    plus = tmp_path / "tiny+model"
    shutil.copytree(folders[0], plus)
    assert split_members(str(plus)) == [str(plus)]
    assert split_members(f"{plus}@8") == [f"{plus}@8"]
    assert split_members(f"{plus}+minilm") == [str(plus), "minilm"]
    assert split_members(f"minilm+{plus}@8") == ["minilm", f"{plus}@8"]
    assert TextEncoder.parse(str(plus)).spelling == str(plus)
    assert sentence_model(str(plus)).max_length == 64
    torch.testing.assert_close(block(str(plus)), block(str(folders[0])), rtol=0, atol=0)


def test_a_pair_is_resolved_member_by_member(folders):
    first, second = map(str, folders)
    models = TextEncoder.parse(f"{first}+{second}@16").models()
    assert [model.max_length for model in models] == [64, 16]
    assert models[0] == sentence_model(first)
    with pytest.raises(DataError, match="joins several encoders"):
        sentence_model(f"{first}+{second}")


def test_a_run_records_pair_folders_by_their_absolute_paths(folders, monkeypatch):
    first, second = folders
    monkeypatch.chdir(first.parent)
    value = f"mpnet@128+{first.name}+{second.name}@16"
    absolute = TextEncoder.parse(value).absolute().spelling
    assert absolute == f"mpnet@128+{first.resolve()}+{second.resolve()}@16"
    assert TextEncoder.parse("minilm+mpnet@128").absolute().spelling == "minilm+mpnet@128"


# ------------------------------------------------------------------------------ the vectors
def test_the_pair_block_is_the_members_side_by_side_and_adds_no_cache_entry(
    folders, tmp_path, monkeypatch
):
    first, second = map(str, folders)
    pair = block(f"{first}+{second}@6")  # encodes both members, each into its own entry
    cache = tmp_path / "cache" / "text"
    assert len(list(cache.glob("store-*"))) == 2  # one store per encoder
    monkeypatch.setattr(backbones, "load_backbone", refuse_loading)
    alone = [block(first), block(f"{second}@6")]  # read back: nothing encoded again
    assert pair.shape == (5, 64)
    torch.testing.assert_close(pair, torch.cat(alone, dim=1), rtol=0, atol=0)
    norms = pair.norm(dim=1)  # each member unit length, unscaled
    torch.testing.assert_close(norms, torch.full((5,), 2.0**0.5))
    again = block(f"{second}@6+{first}")  # another order: the columns swap, still no encode
    torch.testing.assert_close(again, torch.cat(alone[::-1], dim=1), rtol=0, atol=0)
    assert len(list(cache.glob("store-*"))) == 2  # one store per encoder


def test_a_pair_identity_names_both_members_in_order(folders):
    first, second = map(str, folders)
    pair = identity(f"{first}+{second}")
    assert pair == " + ".join(map(identity, (first, second)))
    assert pair != identity(f"{second}+{first}")


def test_load_dataset_joins_the_members_text_blocks(folders, tmp_path):
    first, second = map(str, folders)
    data = tmp_path
    (data / "items.csv").write_text(
        "iid,title,genres\n1,Heat,Action\n2,Babe,Comedy\n3,Balto,Drama\n"
    )
    (data / "train.csv").write_text("uid,iid\n1,1\n2,2\n")
    (data / "cold_val.csv").write_text("uid,iid\n1,3\n")
    dataset = load_dataset(data, features="genre,text", text_encoder=f"{first}+{second}")
    alone = load_dataset(data, features="text", text_encoder=second, progress=False)
    assert dataset.features["text"].shape == (3, 64)
    torch.testing.assert_close(dataset.features["text"][:, 32:], alone.features["text"])


# ------------------------------------------------------------------------------ a run
def test_a_pair_run_is_recorded_evaluated_exported_and_scores_a_text(folders, tmp_path, capsys):
    from coldbrew.cli import main
    from coldbrew.new_item import TextBlockEncoder
    from coldbrew.serving.export import export_run
    from serving_support import tiny_films, tiny_text_run

    first, second = map(str, folders)
    pair = f"{first}+{second}@16"
    run = tiny_text_run(tmp_path / "run", tiny_films(tmp_path / "data"), pair)
    results = json.loads((run / "results.json").read_text())
    assert results["config"]["text_encoder"] == pair
    assert results["dataset"]["features"]["text"][1] == 64
    assert results["text_encoder_identity"] == identity(pair)
    assert main(["evaluate", "--run", str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["val"] == results["metrics"]["val"]
    assert main(["evaluate", "--run", str(run), "--text-encoder", first]) == 2
    assert "is another model than the one" in capsys.readouterr().err

    manifest = export_run(run, tmp_path / "export")
    recorded = manifest["text_encoder"]
    assert recorded["name"] == pair and len(recorded["members"]) == 2
    text = "Film 13 (1999). Genres: Action."
    row = TextBlockEncoder(described_models(recorded)).encode(text)
    members = [
        features.text_embeddings([text], features.TextEncoding(TextEncoder.parse(m)))
        for m in (first, f"{second}@16")
    ]
    expected = torch.cat(members, dim=1).numpy()
    assert row.shape == (1, 64)
    assert abs(row - expected).max() < 1e-5
    argv = ["recommend", "--run", str(run), "--item-text", text, "--item-genres", "Action"]
    assert main([*argv, "--k", "3", "--json"]) == 0, capsys.readouterr().err
    assert len(json.loads(capsys.readouterr().out)) == 3
