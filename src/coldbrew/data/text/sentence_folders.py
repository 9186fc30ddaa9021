"""One sentence encoder: how to run it (``SentenceModel``) and its settings as a
sentence-transformers folder keeps them.

A folder's ``modules.json`` says where the transformer is, how its tokens are pooled
(``1_Pooling/config.json``) and whether the result is L2-normalised (a ``Normalize`` module);
``sentence_bert_config.json`` gives the maximum length. A folder with other modules
(``Dense`` ...) is refused: its vectors would not be the model's. Which folder a
``--text-encoder`` choice names is ``sentence_models``'s business. No torch here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from coldbrew.errors import DataError

ACCEPTED = "minilm, mpnet or a sentence-transformers folder"  # what --text-encoder takes
DEFAULT_MAX_LENGTH = 512  # a folder without sentence_bert_config.json
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")
# sentence-transformers pooling flags -> coldbrew.data.text.backbones.pool's names
POOLING_FLAGS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "last",
}


@dataclass(frozen=True)
class SentenceModel:
    """How to run one sentence encoder with ``embedder.encode_texts``: the fields are its
    keyword arguments of the same names (``encode_texts(texts, **asdict(model))``)."""

    backbone: str  # a name text_backbone resolves: a packaged name or the transformer's folder
    pooling: str  # mean, cls or last
    normalize: bool  # L2 after pooling
    max_length: int  # tokens kept per text


def read_sentence_folder(folder: Path, label: str | None = None) -> SentenceModel:
    """The settings of a sentence-transformers folder; ``label`` names it in errors."""
    label = label or str(folder)
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        raise DataError(
            f"text encoder {label!r}: {folder} is not a sentence-transformers folder (no "
            f"modules.json); expected {ACCEPTED}"
        )
    modules = _read_json(modules_file, label)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise DataError(f"text encoder {label!r}: modules.json is not a list of modules")
    kinds = {str(module.get("type", "")).rsplit(".", 1)[-1]: module for module in modules}
    unknown = sorted(set(kinds) - {"Transformer", "Pooling", "Normalize"})
    if unknown or "Transformer" not in kinds or "Pooling" not in kinds:
        raise DataError(
            f"text encoder {label!r}: {describe_modules(kinds, unknown)}; a folder needs "
            "a Transformer and a Pooling module (and optionally Normalize), nothing else"
        )
    transformer = folder / str(kinds["Transformer"].get("path") or "")
    _check_transformer_files(transformer, label)
    pooling = _pooling(folder / str(kinds["Pooling"].get("path") or ""), label)
    max_length = DEFAULT_MAX_LENGTH
    settings = transformer / "sentence_bert_config.json"
    if settings.is_file():
        max_length = int(_read_json(settings, label).get("max_seq_length") or DEFAULT_MAX_LENGTH)
    return SentenceModel(str(transformer.resolve()), pooling, "Normalize" in kinds, max_length)


def describe_modules(kinds: dict, unknown: list[str]) -> str:
    if unknown:
        return f"module{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} not supported"
    lacking = [kind for kind in ("Transformer", "Pooling") if kind not in kinds]
    return f"no {' and no '.join(lacking)} module"


def _check_transformer_files(transformer: Path, label: str) -> None:
    missing = []
    if not (transformer / "config.json").is_file():
        missing.append("config.json")
    if not any((transformer / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    if not any((transformer / name).is_file() for name in TOKENIZER_FILES):
        missing.append("a tokenizer (" + " or ".join(TOKENIZER_FILES) + ")")
    if missing:
        raise DataError(
            f"text encoder {label!r}: {transformer} lacks {', '.join(missing)}; "
            "not a sentence-transformers folder"
        )


def _pooling(pooling_folder: Path, label: str) -> str:
    config = _read_json(pooling_folder / "config.json", label)
    mode = config.get("pooling_mode")  # newer sentence-transformers write one name
    if isinstance(mode, str):
        modes = [{"mean": "mean", "cls": "cls", "lasttoken": "last"}.get(mode, mode)]
    else:
        modes = [name for key, name in POOLING_FLAGS.items() if config.get(key)]
        modes += [key for key, value in config.items() if key.startswith("pooling_mode_")
                  and value is True and key not in POOLING_FLAGS]  # fmt: skip
    if len(modes) != 1 or modes[0] not in POOLING_FLAGS.values():
        raise DataError(
            f"text encoder {label!r}: pooling {modes or 'none'} is not supported "
            "(one of mean, cls or last token)"
        )
    return modes[0]


def _read_json(path: Path, label: str):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise DataError(f"text encoder {label!r}: cannot read {path.name} ({error})") from error
