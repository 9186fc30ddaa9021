"""An LM run's export: ``coldbrew export`` writes it (its state holds a non-tensor extra state,
the backbone's identity, which goes to the manifest), the server rebuilds its model and checks
that identity, and neither loads the text block the LM never reads."""

from __future__ import annotations

import copy

import pytest
import torch

from coldbrew.config import make_config
from coldbrew.data.loaders import movielens
from coldbrew.errors import ColdbrewError


def write_ml100k(root):
    """12 users × 10 films: each user rated 6 of them (tests/data's tiny folder, where every user
    rated every film, leaves no negative to draw)."""
    root.mkdir()
    flags = "|".join(["0"] * 18 + ["1"])
    (root / "u.item").write_text(
        "".join(
            f"{item}|Film {item} (1990)|01-Jan-1990||http://x|{flags}\n" for item in range(1, 11)
        )
    )
    (root / "u.data").write_text(
        "".join(
            f"{user}\t{(user + shift) % 10 + 1}\t4\t881250949\n"
            for user in range(1, 13)
            for shift in range(6)
        )
    )
    return root


@pytest.fixture
def lm_export(tmp_path, monkeypatch):
    """``(config, export folder, manifest, encoded)``: a one-epoch LM run on a tiny GPT-2,
    exported; ``encoded`` lists each call of the (fake) sentence encoder."""
    from coldbrew.data import features
    from coldbrew.serving.export import export_run
    from coldbrew.training.run import train
    from lm_support import tiny_gpt2

    encoded: list[int] = []

    def fake_encoder(texts, options):
        encoded.append(len(texts))
        return torch.ones(len(texts), 4)

    monkeypatch.setattr(movielens, "text_embeddings", fake_encoder)
    monkeypatch.setattr(features, "text_encoder_available", lambda: True)
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    config = make_config(
        {
            "model": "lm",
            "data": str(write_ml100k(tmp_path / "ml")),
            "features": ["genre", "text"],
            "backbone": str(tiny_gpt2(tmp_path / "gpt2")),
            "dim": 8,
            "hidden": 16,
            "num_neg": 4,
            "epochs": 1,
            "batch_size": 64,
            "quiet": True,
            "device": "cpu",
        }
    )
    train(config, tmp_path / "run")
    manifest = export_run(tmp_path / "run", tmp_path / "export")
    return config, tmp_path / "export", manifest, encoded


def test_an_lm_run_and_its_export_never_encode_the_text_block(lm_export):
    from coldbrew.serving.new_items import model_from_export

    config, folder, manifest, encoded = lm_export
    assert manifest["new_items"]["reads"] == "text" and manifest["text_encoder"] is None
    model = model_from_export(folder, manifest)
    assert encoded == []
    vector = model.encode_items(texts=["Film 11 (1991). Genres: Drama."])
    assert vector.shape == (1, 8) and torch.isfinite(vector).all()


def test_an_lm_export_on_other_data_is_refused(lm_export):
    from coldbrew.serving.new_items import model_from_export

    config, folder, manifest, encoded = lm_export
    other = copy.deepcopy(manifest)
    other["data"]["digest"] = "0" * 64
    with pytest.raises(ColdbrewError, match="not the data this export was made from"):
        model_from_export(folder, other)


def test_an_lm_export_keeps_its_backbone_identity_and_refuses_another(lm_export):
    from coldbrew.serving.new_items import model_from_export

    config, folder, manifest, encoded = lm_export
    extra = manifest["model_extra_state"]
    assert list(extra) == ["_extra_state"] and extra["_extra_state"]["backbone_identity"]
    other = copy.deepcopy(manifest)
    other["model_extra_state"]["_extra_state"]["backbone_identity"] = "other files"
    with pytest.raises(ColdbrewError, match="differs from the one this checkpoint was trained on"):
        model_from_export(folder, other)


def test_model_state_parts_keeps_tensors_and_json_apart():
    from coldbrew.serving.export import model_state_parts

    weight = torch.ones(2, requires_grad=True)
    tensors, extra = model_state_parts({"w": weight, "_extra_state": {"backbone_identity": "x"}})
    assert list(tensors) == ["w"] and not tensors["w"].requires_grad
    assert extra == {"_extra_state": {"backbone_identity": "x"}}
    with pytest.raises(ColdbrewError, match="'bad' is neither a tensor nor JSON"):
        model_state_parts({"bad": object()})
