"""The text-vector cache: one store per encoder, looked up text by text, and the old whole-list files.

A **store** is a folder ``<root>/<store key>/`` (``store_folder``) of shards, each two files
written once: ``<name>.vectors.npy`` (``(n, width)`` float32) and then ``<name>.digests.npy``
(``(n, 32)`` uint8, the SHA-256 of each text's UTF-8), so a shard whose digests are on disk is
whole. A lookup (``lookup``) reads every shard's digests and only the rows it needs of their
vectors (memory-mapped); texts not found are encoded and appended as one new shard
(``append_shard``), so a second run encodes nothing and a catalogue that gains 10 items encodes
10 texts. Two processes may append at once (each shard has its own name); one that wants the
same texts waits for the other (``cache_lock``) and reads them.

A store's key is the encoder id (backbone identity, pooling, scale, maximum length) and the
precision of the numbers: ``fp32`` or ``bf16`` (encoded under bfloat16 autocast, cosine
>= 0.9995 to fp32's). fp32 is the reference: a ``bf16`` lookup takes a text's fp32 vector where
the fp32 store has it, an ``fp32`` lookup never takes bf16 vectors (``stores_read``).

**Whole-list files** (``whole_list_file``: one ``.npy`` named by the SHA-256 of the encoder id
and every text, as coldbrew wrote them before the stores) are still read first, as fp32: the
shared ml-1m cache keeps skipping the encode. New vectors go to the stores only.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

PRECISIONS = ("fp32", "bf16")
DIGEST_BYTES = 32
LOGGER = logging.getLogger(__name__)


def text_digest(text: str) -> bytes:
    """The SHA-256 of ``text``'s UTF-8 (lone surrogates kept), a store's key of one text."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()


def whole_list_file(texts: Sequence[str], root: Path, encoder_id: str) -> Path:
    """The whole-list file of ``texts`` under ``root``: the SHA-256 of the encoder id and every
    text, length-prefixed (so no two lists of texts share a key)."""
    digest = hashlib.sha256(encoder_id.encode())
    for text in texts:
        encoded = text.encode("utf-8", errors="surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return Path(root) / f"{digest.hexdigest()}.npy"


def store_folder(root: Path, encoder_id: str, precision: str) -> Path:
    """The store of ``encoder_id``'s vectors at ``precision`` under ``root``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    key = hashlib.sha256(f"{encoder_id}|{precision}".encode()).hexdigest()[:32]
    return Path(root) / f"store-{key}"


def stores_read(root: Path, encoder_id: str, precision: str) -> list[Path]:
    """The stores a lookup at ``precision`` reads, first found first: fp32's, then bf16's for
    a bf16 lookup (fp32 is the reference, so a bf16 run may take its vectors; not the reverse)."""
    stores = [store_folder(root, encoder_id, "fp32")]
    if precision == "bf16":
        stores.append(store_folder(root, encoder_id, "bf16"))
    return stores


def _shards(store: Path) -> list[Path]:
    """The whole shards of ``store`` (their digests written), oldest name first."""
    if not store.is_dir():
        return []
    return sorted(store.glob("*.digests.npy"))


def lookup(texts: Sequence[str], stores: Sequence[Path]) -> tuple[dict[int, np.ndarray], list[int]]:
    """``({position: vector} of the texts found, positions not found)``: each text's vector from
    the first store and shard that has it. A shard that cannot be read counts as absent."""
    wanted: dict[bytes, list[int]] = {}
    for position, text in enumerate(texts):
        wanted.setdefault(text_digest(text), []).append(position)
    found: dict[int, np.ndarray] = {}
    for store in stores:
        for digests_file in _shards(store):
            if not wanted:
                break
            _take_from_shard(digests_file, wanted, found)
    missing = sorted(position for positions in wanted.values() for position in positions)
    return found, missing


def _take_from_shard(
    digests_file: Path, wanted: dict[bytes, list[int]], found: dict[int, np.ndarray]
) -> None:
    """Move the texts of ``wanted`` that this shard holds into ``found``."""
    vectors_file = digests_file.with_name(
        digests_file.name.removesuffix(".digests.npy") + ".vectors.npy"
    )
    try:
        digests = np.load(digests_file, allow_pickle=False)
        vectors = np.load(vectors_file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return
    if (
        digests.ndim != 2
        or digests.shape[1] != DIGEST_BYTES
        or vectors.ndim != 2
        or vectors.dtype != np.float32
        or len(vectors) != len(digests)
    ):
        return
    for row, digest in enumerate(map(bytes, digests)):
        positions = wanted.pop(digest, None)
        if positions is not None:
            vector = np.array(vectors[row])
            for position in positions:
                found[position] = vector


def count_found(texts: Sequence[str], stores: Sequence[Path]) -> int:
    """How many of ``texts`` the stores hold, reading their digests only (no vectors)."""
    wanted = {text_digest(text) for text in texts}
    held: set[bytes] = set()
    for store in stores:
        for digests_file in _shards(store):
            try:
                digests = np.load(digests_file, allow_pickle=False)
            except (OSError, ValueError):
                continue
            if digests.ndim == 2 and digests.shape[1] == DIGEST_BYTES:
                held.update(map(bytes, digests))
    return len(wanted & held)


def append_shard(store: Path, texts: Sequence[str], vectors: torch.Tensor) -> None:
    """``texts``' ``vectors`` as a new shard of ``store``: the vectors, then the digests, each
    written beside and renamed, so a reader sees the whole shard or none of it; a failure
    (read-only or full disk) is logged, not raised."""
    name = f"{time.time_ns():020d}-{os.getpid()}"
    digests = np.frombuffer(b"".join(map(text_digest, texts)), dtype=np.uint8)
    digests = digests.reshape(len(texts), DIGEST_BYTES)
    vectors_file = store / f"{name}.vectors.npy"
    if _write_atomically(vectors_file, vectors.numpy().astype(np.float32, copy=False)):
        if not _write_atomically(store / f"{name}.digests.npy", digests):
            vectors_file.unlink(missing_ok=True)


def _write_atomically(path: Path, array: np.ndarray, what: str = "text embeddings") -> bool:
    """``array`` saved beside ``path`` and renamed (True), or a logged failure (False)."""
    return _written(path, lambda file: np.save(file, array), what)


def _write_text(path: Path, text: str) -> bool:
    """``text`` written beside ``path`` and renamed (True), or a logged failure (False)."""
    return _written(path, lambda file: file.write(text.encode()), "encode rates")


def _written(path: Path, write: Callable[[BinaryIO], object], what: str) -> bool:
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a cache is plain data
        os.replace(temporary, path)
        temporary = None
        return True
    except OSError as error:  # a read-only cache must not stop the load
        LOGGER.warning("could not cache %s in %s: %s", what, path.parent, error)
        return False
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)


# --------------------------------------------------------------- one file, computed once
def read_cached(path: Path, shape: tuple[int | None, ...]) -> torch.Tensor | None:
    """A float32 array cached at ``path`` whose shape matches ``shape`` (None: any size there),
    or ``None`` when absent, unreadable or of another shape (the caller recomputes it)."""
    if not path.is_file():
        return None
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if array.dtype != np.float32 or array.ndim != len(shape):
        return None
    pairs = zip(array.shape, shape, strict=True)  # as many dimensions: checked above
    if any(want is not None and have != want for have, want in pairs):
        return None
    return torch.from_numpy(np.ascontiguousarray(array))


def computed_once(
    path: Path, shape: tuple[int | None, ...], compute: Callable[[], torch.Tensor], what: str
) -> torch.Tensor:
    """The array cached at ``path`` (``read_cached``), else ``compute()``'s, written there; one
    process computes it at a time (``cache_lock``), and one that waited reads the other's."""
    cached = read_cached(path, shape)
    if cached is not None:
        return cached
    with cache_lock(path, what):
        cached = read_cached(path, shape)
        if cached is not None:
            return cached
        array = compute()
        write_cached(path, array, what)
    return array


@contextmanager
def cache_lock(path: Path, what: str) -> Iterator[None]:
    """Held while this process computes the cache entry ``path``, so that a second process
    after the same entry (another job of a leaderboard, a search beside it) waits and then
    reads it, instead of computing it again beside the first. The lock is an ``flock`` on
    ``path`` + ``.lock`` (``filelock``), released by the system if its holder dies; the file
    is removed on the way out (one left by a killed holder is reused). A cache where no lock
    file can be made (read-only) is computed without one, as ``write_cached`` goes on without
    writing."""
    from filelock import FileLock, Timeout

    lock = FileLock(f"{path}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            print(
                f"waiting for another process that is computing the same {what} "
                f"({path.parent / path.stem}); its result is read once it is written",
                file=sys.stderr,
                flush=True,
            )
            lock.acquire()
    except OSError as error:
        LOGGER.warning("could not lock %s in %s: %s", what, path.parent, error)
    try:
        yield
    finally:
        if lock.is_locked:  # removed while held, as RunLock's: a waiter takes the lock anew
            Path(lock.lock_file).unlink(missing_ok=True)
            lock.release()


def write_cached(path: Path, array: torch.Tensor, what: str = "text embeddings") -> None:
    """``array`` (``what`` it holds) into the cache at ``path``: written beside it and renamed,
    so readers never see half a file; a failure (read-only or full disk) is logged, not raised."""
    _write_atomically(path, array.numpy(), what)
