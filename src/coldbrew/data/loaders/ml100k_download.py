"""The ml-100k archive: downloaded once into the cache (pooch: a temporary file renamed into
place once its SHA-256 is the published one), then unpacked safely beside it.

Kept apart from ``coldbrew.data.loaders.movielens`` (the format's reader), so that resolving a dataset
path (``coldbrew.data.paths``) does not import the readers and the text encoder they use.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from coldbrew.errors import DataError

ML100K_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
# Published digests of ml-100k.zip (GroupLens lists the MD5 0e33842e24a9c977be4e0107933c0723).
ML100K_SHA256 = "50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229"
DOWNLOAD_TIMEOUT_S = 60


def unpacked(folder: Path) -> bool:
    """Whether ``folder`` holds ml-100k's ``u.data`` and ``u.item`` (``movielens.detect``)."""
    return (folder / "u.data").is_file() and (folder / "u.item").is_file()


def download_ml100k(target: Path) -> Path:
    """Download, verify (SHA-256) and unpack ml-100k into ``target``, once; returns ``target``.

    The archive is kept beside ``target`` (``ml-100k.zip``) so a broken unpack never downloads
    twice; pooch writes it, by a rename, only once its digest matches (and fetches it again when
    a kept one does not). Unpacking goes to a temporary folder renamed into place, so ``target``
    is complete or absent. Every failure (offline, a cut or wrong download, a cache that cannot
    be written) is one ``DataError`` and leaves no partial file behind.
    """
    target = Path(target)
    if unpacked(target):
        return target
    archive = target.parent / "ml-100k.zip"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _download(ML100K_URL, archive)
        _unpack(archive, target)
    except OSError as error:  # the network's errors are DataErrors already: this is the disk
        raise DataError(
            f"cannot write ml-100k into {target.parent}: {error}; set COLDBREW_CACHE to a "
            "writable folder, or COLDBREW_DATA to a folder that holds ml-100k/"
        ) from error
    return target


def _unpack(archive: Path, target: Path) -> None:
    """Extract the verified ``archive`` beside ``target``, then rename the folder into place."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".ml-100k-"))
    try:
        _extract(archive, staging)
        found = next(
            (folder for folder in (staging / "ml-100k", staging) if unpacked(folder)), None
        )
        if found is None:
            raise DataError(f"{archive}: no ml-100k/u.data and u.item inside the archive")
        if not unpacked(target):
            os.replace(found, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _download(url: str, archive: Path) -> None:
    """``archive`` from ``url`` through pooch (a temporary file, renamed once its SHA-256 is the
    published one); a network failure or a wrong digest is a ``DataError``."""
    import pooch
    import requests

    http = pooch.HTTPDownloader(timeout=DOWNLOAD_TIMEOUT_S, progressbar=False)
    digests: list[str] = []

    def download(source: str, output: str, instance) -> None:
        http(source, output, instance)
        digests.append(pooch.file_hash(output))  # for the message when it is not the published

    try:
        pooch.retrieve(
            url,
            known_hash=f"sha256:{ML100K_SHA256}",
            fname=archive.name,
            path=archive.parent,
            downloader=download,
        )
    except requests.RequestException as error:  # refused, timed out, HTTP error, a cut transfer
        detail = str(error) or type(error).__name__
        raise DataError(
            f"ml-100k not found in $COLDBREW_DATA or the cache, and the download failed: "
            f"{detail}; set COLDBREW_DATA to a folder that holds ml-100k/"
        ) from error
    except ValueError as error:  # pooch: the downloaded file's digest is not the known one
        if not digests:
            raise
        raise DataError(
            f"{url}: SHA-256 {digests[-1]} does not match the published {ML100K_SHA256}; "
            "not using it"
        ) from error


def _extract(archive: Path, destination: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            for name in bundle.namelist():
                if name.startswith(("/", "\\")) or ".." in Path(name).parts:
                    raise DataError(f"{archive}: unsafe path {name!r} inside the archive")
            bundle.extractall(destination)
    except zipfile.BadZipFile as error:
        archive.unlink(missing_ok=True)
        raise DataError(
            f"{archive}: not a valid zip archive ({error}); removed, try again"
        ) from error
