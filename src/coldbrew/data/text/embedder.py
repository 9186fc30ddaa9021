"""Text embeddings from any text backbone (all-MiniLM-L6-v2 by default), cached on disk.

``encode_texts`` embeds a list of texts with a backbone of ``coldbrew.data.text.backbones`` (see
there for names, pooling and identity): pooled token states, by default L2-normalised, which
for MiniLM is exactly what sentence-transformers does (cosine similarity is a dot product).
``transformers`` is imported only when a text really needs encoding.

Results are cached per call: one ``.npy`` file named by the SHA-256 of the encoder id (backbone
identity, pooling, normalisation, maximum length) and every text, so loading the same dataset
again costs a file read and never loads the model.

On CPU a backbone such as mpnet runs through ONNX Runtime where it is installed
(``coldbrew.data.text.onnx_encoder``; ``COLDBREW_TEXT_RUNTIME=torch`` keeps torch): the same vectors to ~1e-6, so the
cache key is the same for both runtimes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from coldbrew.data.text import backbones
from coldbrew.data.text.backbones import (
    DEFAULT_BACKBONE,
    EMBEDDING_DIM,
    PACKAGED_IDENTITY,
    PACKAGED_NAMES,
    LoadedBackbone,
    backbone_identity,
    hidden_size,
    pool,
    resolve_pooling,
)
from coldbrew.data.text.sentence_folders import SentenceModel

ENCODER_ID = f"{PACKAGED_IDENTITY}|mean-pool|l2-normalise|max-length-256"  # the default's key
MAX_LENGTH = 256
LOGGER = logging.getLogger(__name__)  # "coldbrew.data.text.embedder": silenced with "coldbrew"


def encode_texts(
    texts: list[str],
    *,
    backbone: str = DEFAULT_BACKBONE,
    pooling: str = "auto",
    max_length: int = MAX_LENGTH,
    normalize: bool = True,
    batch_size: int = 64,
    cache: Path | Literal["default"] | None = "default",
    progress: bool = True,
    device: torch.device | str | None = None,
    loaded: Callable[[], LoadedBackbone] | None = None,
    runtime: str | None = None,
) -> torch.Tensor:
    """Embed ``texts`` into a float32 ``(len(texts), width)`` tensor.

    ``cache="default"`` stores results under ``cache_dir()/"text"``; a path stores them there;
    ``None`` turns caching off; a process that finds another encoding the same texts into the
    cache waits for its vectors (``cache_lock``) rather than encoding them too. ``device``
    defaults to CUDA when available, else CPU. ``loaded`` supplies an already loaded backbone
    (called only on a cache miss); by default the backbone is loaded here and released after.
    ``runtime`` (``auto``, ``torch``, ``onnx``; default ``$COLDBREW_TEXT_RUNTIME``, else
    ``auto``) runs a backbone loaded here on CPU with ONNX Runtime (``auto``: when installed and
    faster, see ``onnx_encoder``); a supplied one (perhaps tuned) always runs with torch.
    """
    if not texts:
        width = EMBEDDING_DIM if backbone in PACKAGED_NAMES else hidden_size(backbone)
        return torch.zeros(0, width, dtype=torch.float32)
    settings = SentenceModel(backbone, resolve_pooling(pooling, backbone), normalize, max_length)
    encoder_id = encoder_key(backbone, settings.pooling, normalize, max_length)
    cache_file = _cache_file(texts, cache, encoder_id)
    encode = partial(
        _encode_missing,
        texts,
        settings=settings,
        batch_size=batch_size,
        progress=progress,
        device=device,
        loaded=loaded,
        runtime=runtime,
    )
    if cache_file is None:
        return encode()
    return computed_once(cache_file, (len(texts), None), encode, "text embeddings")


def _encode_missing(
    texts: list[str],
    *,
    settings: SentenceModel,
    batch_size: int,
    progress: bool,
    device: torch.device | str | None,
    loaded: Callable[[], LoadedBackbone] | None,
    runtime: str | None,
) -> torch.Tensor:
    """``encode_texts``'s work on a cache miss: load the backbone (or call ``loaded``), pick
    the runtime, encode."""
    from coldbrew.data.text.onnx_encoder import resolve_runtime, takes_onnx

    runtime = resolve_runtime(runtime)
    if loaded is None:
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        backbone_loaded = backbones.load_backbone(settings.backbone, device, progress=progress)
    else:
        backbone_loaded = loaded()
    forward = None
    if loaded is None and _on_cpu(backbone_loaded) and takes_onnx(runtime, backbone_loaded):
        from coldbrew.data.paths import cache_dir
        from coldbrew.data.text.onnx_encoder import onnx_forward

        forward = onnx_forward(backbone_loaded, cache_dir())
    return _encode(
        texts, backbone_loaded, settings, batch_size=batch_size, progress=progress, forward=forward
    )


def _on_cpu(loaded: LoadedBackbone) -> bool:
    return next(loaded.model.parameters()).device.type == "cpu"


def encoder_key(backbone: str, pooling: str, normalize: bool, max_length: int) -> str:
    """Everything that changes the numbers (``ENCODER_ID`` for the default backbone)."""
    scale = "l2-normalise" if normalize else "raw"
    return f"{backbone_identity(backbone)}|{pooling}-pool|{scale}|max-length-{max_length}"


def _encode(
    texts: list[str],
    loaded: LoadedBackbone,
    settings: SentenceModel,
    *,
    batch_size: int,
    progress: bool,
    forward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Batches of texts of equal or similar token counts (little padding: the same vectors as
    one text at a time, to float rounding), longest first, written back in the caller's order;
    ``settings`` says how they are cut, pooled and scaled (its backbone is ``loaded``).
    ``forward`` (token ids, mask -> token states) replaces the torch model's call."""
    model, max_length = loaded.model, settings.max_length
    device = next(model.parameters()).device
    lengths = [
        len(ids)
        for ids in loaded.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]
    ]
    order = sorted(range(len(texts)), key=lambda index: lengths[index], reverse=True)
    batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]
    work = [len(batch) * lengths[batch[0]] for batch in batches]  # padded tokens per batch
    embeddings: torch.Tensor | None = None
    with torch.no_grad(), EncodeProgress(len(texts), sum(work), progress) as bar:
        # not inference_mode: the result may feed a trained head
        for indices, tokens in zip(batches, work, strict=True):
            batch = loaded.tokenizer(
                [texts[index] for index in indices],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            ).to(device)
            if forward is not None:
                states = forward(batch["input_ids"], batch["attention_mask"])  # (B, T, width)
            else:
                states = model(
                    input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
                ).last_hidden_state  # (B, T, width)
            pooled = pool(states, batch["attention_mask"], settings.pooling).float()  # (B, width)
            if settings.normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            if embeddings is None:
                embeddings = torch.empty(len(texts), pooled.shape[1], dtype=torch.float32)
            embeddings[torch.tensor(indices)] = pooled.cpu()
            bar.update(len(indices), tokens)
    assert embeddings is not None  # texts is not empty
    return embeddings


class EncodeProgress:
    """Texts done, texts/s and the time left of an encode: a bar on a terminal, a line every
    ``every`` seconds in a log. The time left is the padded tokens still to encode at the rate
    so far: the longest texts come first, so a count of texts would promise too much early."""

    def __init__(self, texts: int, tokens: int, show: bool, every: float = 30.0):
        from tqdm.auto import tqdm

        self.texts, self.tokens, self.every = texts, tokens, every
        self.done_texts = self.done_tokens = 0
        self.started = self.last_line = time.perf_counter()
        self.lines = show and not sys.stderr.isatty()  # a log: lines instead of frames
        self.bar = tqdm(
            total=texts,
            desc="encoding texts",
            unit="text",
            disable=not (show and sys.stderr.isatty()),
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
            "[{elapsed}, {rate_fmt}{postfix}]",
        )

    def __enter__(self) -> EncodeProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()

    def status(self) -> tuple[float, float | None]:
        """(texts per second, seconds left; None before any work is done)."""
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        left = None
        if self.done_tokens:
            left = (self.tokens - self.done_tokens) * elapsed / self.done_tokens
        return self.done_texts / elapsed, left

    def update(self, texts: int, tokens: int) -> None:
        self.done_texts += texts
        self.done_tokens += tokens
        rate, left = self.status()
        self.bar.set_postfix_str(f"about {clock(left)} left", refresh=False)
        self.bar.update(texts)
        now = time.perf_counter()
        if self.lines and (now - self.last_line >= self.every or self.done_texts == self.texts):
            self.last_line = now
            print(
                f"encoding texts: {self.done_texts:,}/{self.texts:,}, {rate:.1f} texts/s, "
                f"about {clock(left)} left",
                file=sys.stderr,
                flush=True,
            )


def clock(seconds: float | None) -> str:
    """``"2 min 05 s"``, ``"12 s"``; ``"?"`` when unknown."""
    if seconds is None:
        return "?"
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


# ---------------------------------------------------------------------------------- cache
def _cache_file(
    texts: list[str], cache: Path | Literal["default"] | None, encoder_id: str = ENCODER_ID
) -> Path | None:
    if cache is None:
        return None
    if cache == "default":
        from coldbrew.data.paths import cache_dir

        cache = cache_dir() / "text"
    digest = hashlib.sha256(encoder_id.encode())
    for text in texts:  # length-prefixed, so no two lists of texts share a key
        encoded = text.encode("utf-8", errors="surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return Path(cache) / f"{digest.hexdigest()}.npy"


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
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npy")
        with os.fdopen(handle, "wb") as file:
            np.save(file, array.numpy())
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a cache is plain data
        os.replace(temporary, path)
        temporary = None
    except OSError as error:  # a read-only cache must not stop the load
        LOGGER.warning("could not cache %s in %s: %s", what, path.parent, error)
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
