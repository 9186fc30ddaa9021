"""Text embeddings from any text backbone (all-MiniLM-L6-v2 by default), cached on disk.

``encode_texts`` embeds a list of texts with a backbone of ``coldbrew.data.text.backbones`` (see
there for names, pooling and identity): pooled token states, by default L2-normalised, which
for MiniLM is exactly what sentence-transformers does (cosine similarity is a dot product).
``transformers`` is imported only when a text really needs encoding.

Results are cached text by text (``text_cache``): a store per encoder id (backbone identity,
pooling, normalisation, maximum length) and precision, so loading the same dataset again costs
a lookup and never loads the model, and a catalogue that gains 10 items encodes 10 texts. The
whole-list files of earlier versions are still read.

On a CPU with bf16 in hardware the backbone runs under bfloat16 autocast (``encode_speed``;
``COLDBREW_TEXT_PRECISION=fp32`` keeps fp32). Otherwise a backbone such as mpnet runs on CPU
through ONNX Runtime where it is installed (``coldbrew.data.text.onnx_encoder``;
``COLDBREW_TEXT_RUNTIME=torch`` keeps torch): the same vectors to ~1e-6, so the cache key is the
same for both runtimes. An encode says how long it will take before it starts, and how many
texts its token budget cuts.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from coldbrew.data.text import backbones, encode_speed, text_cache
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
FORETELL_FROM = 10.0  # seconds: a shorter encode is not foretold
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
    ``None`` turns caching off. Texts already in the cache are read, the others encoded and
    added (``text_cache``); a process that finds another encoding into the same store waits
    for it (``cache_lock``) and then reads what it wrote. ``device`` defaults to CUDA when
    available, else CPU. ``loaded`` supplies an already loaded backbone (called only on a
    cache miss); by default the backbone is loaded here and released after. ``runtime``
    (``auto``, ``torch``, ``onnx``; default ``$COLDBREW_TEXT_RUNTIME``, else ``auto``) runs a
    backbone loaded here on CPU with ONNX Runtime (``auto``: when installed and faster, and the
    CPU has no bf16, see ``onnx_encoder``); a supplied one (perhaps tuned) always runs with
    torch.
    """
    if not texts:
        width = EMBEDDING_DIM if backbone in PACKAGED_NAMES else hidden_size(backbone)
        return torch.zeros(0, width, dtype=torch.float32)
    settings = SentenceModel(backbone, resolve_pooling(pooling, backbone), normalize, max_length)
    encoder_id = encoder_key(backbone, settings.pooling, normalize, max_length)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    precision = encode_precision(torch.device(device).type, runtime)
    how = dict(settings=settings, batch_size=batch_size, progress=progress, device=device)
    how.update(loaded=loaded, runtime=runtime, precision=precision)
    root = _cache_root(cache)
    if root is None:
        return _encode_missing(texts, **how)
    whole = text_cache.read_cached(
        text_cache.whole_list_file(texts, root, encoder_id), (len(texts), None)
    )
    if whole is not None:  # a file of earlier versions: fp32, the reference
        return whole
    stores = text_cache.stores_read(root, encoder_id, precision)
    found, missing = text_cache.lookup(texts, stores)
    if missing:
        store = text_cache.store_folder(root, encoder_id, precision)
        with text_cache.cache_lock(store / "shards", "text embeddings"):
            found, missing = text_cache.lookup(texts, stores)  # another process may have added
            if missing:
                todo = _distinct(texts, missing)
                new = _timed_encode(todo, root, encoder_id, how)
                text_cache.append_shard(store, todo, new)
                row_of = {text: row for row, text in enumerate(todo)}
                found.update({i: new[row_of[texts[i]]].numpy() for i in missing})
    return torch.from_numpy(np.stack([found[position] for position in range(len(texts))]))


def _timed_encode(texts: list[str], root: Path, encoder_id: str, how: dict) -> torch.Tensor:
    """``_encode_missing``; an encode of a few batches or more leaves its characters per
    second in the cache (``encode_speed``), for the estimates of ``coldbrew data info``."""
    started = time.perf_counter()
    vectors = _encode_missing(texts, **how)
    if len(texts) >= 4 * how["batch_size"]:
        key = encode_speed.rate_key(encoder_id, how["precision"], torch.get_num_threads())
        rate = sum(map(len, texts)) / max(time.perf_counter() - started, 1e-9)
        encode_speed.remember_rate(root, key, rate)
    return vectors


def _distinct(texts: list[str], positions: list[int]) -> list[str]:
    """The texts at ``positions``, each once, in first-seen order."""
    return list(dict.fromkeys(texts[position] for position in positions))


def _cache_root(cache: Path | Literal["default"] | None) -> Path | None:
    if cache is None:
        return None
    if cache == "default":
        from coldbrew.data.paths import cache_dir

        return cache_dir() / "text"
    return Path(cache)


def _cache_file(
    texts: list[str], cache: Path | Literal["default"] | None, encoder_id: str = ENCODER_ID
) -> Path | None:
    """The whole-list file of ``texts`` (read, no longer written), or None without a cache."""
    root = _cache_root(cache)
    return None if root is None else text_cache.whole_list_file(texts, root, encoder_id)


def encode_precision(device_type: str, runtime: str | None = None) -> str:
    """The precision an encode on ``device_type`` runs at: fp32 when ONNX Runtime is asked for
    by name (it runs fp32), else ``encode_speed.text_precision``."""
    from coldbrew.data.text.onnx_encoder import resolve_runtime

    if resolve_runtime(runtime) == "onnx":
        return "fp32"
    return encode_speed.text_precision(device_type)


def _encode_missing(
    texts: list[str],
    *,
    settings: SentenceModel,
    batch_size: int,
    progress: bool,
    device: torch.device | str,
    loaded: Callable[[], LoadedBackbone] | None,
    runtime: str | None,
    precision: str,
) -> torch.Tensor:
    """``encode_texts``'s work on a cache miss: load the backbone (or call ``loaded``), pick
    the runtime (ONNX Runtime only at fp32: bf16 torch was the faster), encode."""
    from coldbrew.data.text.onnx_encoder import resolve_runtime, takes_onnx

    runtime = resolve_runtime(runtime)
    if loaded is None:
        backbone_loaded = backbones.load_backbone(settings.backbone, device, progress=progress)
    else:
        backbone_loaded = loaded()
    forward = None
    on_cpu = _on_cpu(backbone_loaded)
    if loaded is None and on_cpu and precision == "fp32" and takes_onnx(runtime, backbone_loaded):
        from coldbrew.data.paths import cache_dir
        from coldbrew.data.text.onnx_encoder import onnx_forward

        forward = onnx_forward(backbone_loaded, cache_dir())
    autocast = on_cpu and forward is None and precision == "bf16"
    with torch.autocast("cpu", dtype=torch.bfloat16) if autocast else nullcontext():
        return _encode(
            texts,
            backbone_loaded,
            settings,
            batch_size=batch_size,
            progress=progress,
            forward=forward,
            label=f"{Path(settings.backbone).name} ({precision})",
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
    label: str = "",
) -> torch.Tensor:
    """Batches of texts of equal or similar token counts (little padding: the same vectors as
    one text at a time, to float rounding), longest first, written back in the caller's order;
    ``settings`` says how they are cut, pooled and scaled (its backbone is ``loaded``).
    ``forward`` (token ids, mask -> token states) replaces the torch model's call. Each text
    is tokenized once (one cut by the token budget twice, to cut it as the tokenizer does)."""
    model = loaded.model
    device = next(model.parameters()).device
    ids = token_ids(texts, loaded.tokenizer, settings.max_length, label)
    order = sorted(range(len(texts)), key=lambda index: len(ids[index]), reverse=True)
    batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]
    work = [len(batch) * len(ids[batch[0]]) for batch in batches]  # padded tokens per batch
    embeddings: torch.Tensor | None = None
    with torch.no_grad(), EncodeProgress(len(texts), sum(work), progress, label=label) as bar:
        # not inference_mode: the result may feed a trained head
        for indices, tokens in zip(batches, work, strict=True):
            batch = loaded.tokenizer.pad(
                {"input_ids": [ids[index] for index in indices]}, return_tensors="pt"
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


def token_ids(texts: list[str], tokenizer, max_length: int, label: str = "") -> list[list[int]]:
    """Each text's token ids as the tokenizer cuts them at ``max_length``, with one logged
    note of how many texts were cut (their ends are not read)."""
    ids = tokenizer(texts, truncation=False, verbose=False)["input_ids"]
    cut = [index for index, row in enumerate(ids) if len(row) > max_length]
    if cut:
        again = tokenizer([texts[index] for index in cut], truncation=True, max_length=max_length)
        for index, row in zip(cut, again["input_ids"], strict=True):
            ids[index] = row
        LOGGER.warning(
            "%s of %s texts are longer than %s's %d tokens: their ends are not read",
            f"{len(cut):,}",
            f"{len(texts):,}",
            label.split(" (")[0] or "the encoder",
            max_length,
        )
    return ids


class EncodeProgress:
    """Texts done, texts/s and the time left of an encode: a bar on a terminal, a line every
    ``every`` seconds in a log. The time left is the padded tokens still to encode at the rate
    so far: the longest texts come first, so a count of texts would promise too much early."""

    def __init__(self, texts: int, tokens: int, show: bool, every: float = 30.0, label: str = ""):
        from tqdm.auto import tqdm

        self.texts, self.tokens, self.every = texts, tokens, every
        self.show, self.label = show, label
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
        first = self.done_texts == 0
        self.done_texts += texts
        self.done_tokens += tokens
        rate, left = self.status()
        if first and self.show and self.done_texts < self.texts:
            self.foretell()
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

    def foretell(self) -> None:
        """One line after the first batch: the whole encode's time at its padded-token rate
        (none for an encode of a few seconds)."""
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        total = self.tokens * elapsed / self.done_tokens
        if total < FORETELL_FROM:
            return
        rate = self.texts / total
        with_what = f" with {self.label}" if self.label else ""
        self.bar.write(
            f"encoding {self.texts:,} texts{with_what}: about {clock(total)} at "
            f"~{rate:,.{0 if rate >= 10 else 1}f} texts/s on this machine (from the first batch)",
            file=sys.stderr,
        )


def clock(seconds: float | None) -> str:
    """``"3 h 07 min"``, ``"2 min 05 s"``, ``"12 s"``; ``"?"`` when unknown."""
    if seconds is None:
        return "?"
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"
