"""``coldbrew export``: the files hold the model's own vectors, pickle-free, and refuse what
cannot be exported."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import coldbrew
from coldbrew.cli import main
from coldbrew.errors import ColdbrewError
from coldbrew.models.base import Recommender
from coldbrew.serving.export import run_vectors
from coldbrew.serving.export_format import read_manifest, read_vectors
from serving_support import tiny_clcrec_run

pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_clcrec_run(tmp_path_factory.mktemp("runs") / "clcrec")


def test_export_writes_the_models_vectors_and_a_manifest(run, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", "--run", str(run), "--out", str(out)]) == 0
    assert "exported clcrec: 500 users, 300 items, dim 64" in capsys.readouterr().out
    loaded = coldbrew.load_run(run)
    vectors = read_vectors(out)
    with torch.no_grad():
        assert np.array_equal(vectors.users, loaded.model.user_embeddings().numpy())
        assert np.array_equal(vectors.items, loaded.model.item_embeddings().numpy())
    train = loaded.dataset.train
    assert np.array_equal(vectors.train_indptr, train.indptr)
    assert np.array_equal(vectors.train_indices, train.indices)
    assert np.array_equal(vectors.cold_items, loaded.dataset.cold_items)
    manifest = read_manifest(out)
    assert manifest["model"] == "clcrec" and manifest["dim"] == 64
    assert manifest["new_items"] == {
        "reads": "features",
        "feature_blocks": [{"name": "content", "width": 32}],
        "text_block": None,
    }
    assert manifest["metrics"]["val"]["cold"]["recall@20"] == pytest.approx(
        json.loads((run / "results.json").read_text())["metrics"]["val"]["cold"]["recall@20"]
    )
    assert {"coldbrew", "torch", "safetensors"} <= set(manifest["versions"])
    assert len(manifest["data"]["digest"]) == 64
    assert sorted(p.name for p in out.iterdir()) == sorted(manifest["files"])


def test_an_export_is_never_written_over_or_left_half_written(run, tmp_path, capsys):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["export", "--run", str(run), "--out", str(out)]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert main(["export", "--run", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".x.")]


class OwnScores(Recommender):
    """Scores that are not the product of its vectors (a cosine, say)."""

    def user_embeddings(self):
        return torch.ones(3, 2)

    def item_embeddings(self):
        return torch.ones(4, 2)

    def score_users(self, users):
        return torch.zeros(len(users), 4)


class LyingVectors(OwnScores):
    score_users = Recommender.score_users

    def item_embeddings(self):  # a different matrix on every call: scores never match
        return torch.randn(4, 2)


@pytest.mark.parametrize(
    "model, message",
    [(OwnScores(), "not as a dot product"), (LyingVectors(), "differ from its user · item")],
)
def test_a_model_not_ranking_by_a_dot_product_is_refused(model, message):
    loaded = SimpleNamespace(model=model, dataset=None)
    with pytest.raises(ColdbrewError, match=message):
        run_vectors(loaded)


def test_an_index_is_exported_and_searches_the_item_vectors(run, tmp_path):
    pytest.importorskip("faiss")
    from coldbrew.serving.export_format import INDEX
    from coldbrew.serving.index import read_index

    out = tmp_path / "flat"
    assert main(["export", "--run", str(run), "--out", str(out), "--index", "flat"]) == 0
    vectors = read_vectors(out)
    index = read_index(out / INDEX, len(vectors.items), vectors.items.shape[1])
    scores, rows = index.search(vectors.users[:5], 10)
    exact = vectors.users[:5] @ vectors.items.T  # (5, 300)
    assert np.allclose(scores, np.sort(exact, axis=1)[:, ::-1][:, :10], atol=1e-5)
    assert np.allclose(np.take_along_axis(exact, rows, 1), scores, atol=1e-5)


def test_an_indexed_export_caches_each_users_list_from_its_index(run, tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    from coldbrew.serving import catalogue as served_module

    out = tmp_path / "hnsw"
    assert main(["export", "--run", str(run), "--out", str(out), "--index", "hnsw"]) == 0
    searched = []
    search = served_module.search
    monkeypatch.setattr(served_module, "search", lambda *a: searched.append(1) or search(*a))
    served = served_module.load_catalogue(out)
    assert served.index is not None and served.top is not None
    assert len(searched) == len(served.users)  # one search a user, at load
    served.items_json(int(served.vectors.user_ids[0]), 20)
    assert len(searched) == len(served.users)  # ... and none for a request of k <= 100
    monkeypatch.setattr(served_module, "CACHE_INDEXED_USERS", len(served.users) - 1)
    assert served_module.load_catalogue(out).top is None  # too many users: searched live


def test_search_depth_sets_the_served_indexs_depth_and_needs_an_approximate_index(run, tmp_path):
    pytest.importorskip("faiss")
    from coldbrew.serving.catalogue import load_catalogue

    out = tmp_path / "hnsw"
    assert main(["export", "--run", str(run), "--out", str(out), "--index", "hnsw"]) == 0
    assert load_catalogue(out).summary()["search_depth"] == 128  # as it was written
    served = load_catalogue(out, search_depth=300)
    assert served.index.hnsw.efSearch == 300 and served.summary()["search_depth"] == 300
    assert load_catalogue(run).summary()["search_depth"] is None  # scored exactly
    with pytest.raises(ColdbrewError, match="needs an approximate index"):
        load_catalogue(run, search_depth=64)
    with pytest.raises(ColdbrewError, match="searches exactly"):
        load_catalogue(run, index="flat", search_depth=64)
    with pytest.raises(ColdbrewError, match="positive"):
        load_catalogue(out, search_depth=0)
