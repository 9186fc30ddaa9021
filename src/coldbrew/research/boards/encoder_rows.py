"""The text encoder as a board's dimension (``--text-encoders minilm,mpnet@128``): one row per
model and encoder, named ``MODEL@ENCODER`` (``aldi@mpnet@128``).

The name splits at its first ``@``: a model's name holds none, so what follows is the encoder
exactly as ``--text-encoder`` spells it (``mpnet@128`` keeps its token budget). The name is
the row's folder (``OUT/aldi@mpnet@128``, its folds' ``OUT/folds/aldi@mpnet@128``) and its
``--blend`` member (``aldi@mpnet@128+ridge@minilm``): an encoder in the list is one member
(no ``+``), and a folder is given by a name without ``/`` (run from its parent), so a row name
never holds a blend's ``+`` or parentheses and is always one folder.

A model that cannot use the encoder (the LM: its own backbone reads the texts; BPR, which
reads no content; any model when ``--features`` has no text block) gets one row, named by the
model alone: its runs would be the same on every encoder. Every row of a board shares the run
options but the encoder, so every row draws the same split and, with ``--folds``, the same
folds (``fold_seed``): the paired test compares encoders as it compares models.
"""

from __future__ import annotations

from collections.abc import Sequence

from coldbrew.config import TrainConfig, make_config
from coldbrew.errors import ColdbrewError

SEPARATOR = "@"  # MODEL@ENCODER
NOT_IN_ENCODER = ("+", "/", "\\", "(", ")", ",")  # would split a blend, a folder or a list


def row_name(model: str, encoder: str | None) -> str:
    """``aldi`` and ``mpnet@128`` -> ``aldi@mpnet@128``; the model alone without an encoder."""
    return model if encoder is None else f"{model}{SEPARATOR}{encoder}"


def split_row(name: str) -> tuple[str, str | None]:
    """``aldi@mpnet@128`` -> ``("aldi", "mpnet@128")``; ``aldi`` -> ``("aldi", None)``."""
    model, mark, encoder = name.partition(SEPARATOR)
    return model, (encoder if mark else None)


def row_model(name: str) -> str:
    """The model a row trains (``aldi@mpnet@128`` -> ``aldi``)."""
    return split_row(name)[0]


def resolve_row(name: str) -> str:
    """A row as written (``ALDI@mpnet@128``) with its model's registered name."""
    from coldbrew.registry import resolve_model_name

    model, encoder = split_row(name.strip())
    return row_name(resolve_model_name(model), encoder)


def parse_text_encoders(text: str | Sequence[str]) -> list[str]:
    """``"minilm,mpnet@128"`` -> ``["minilm", "mpnet@128"]``: each a checked ``--text-encoder``
    spelling of one encoder that can name a row, each once."""
    from coldbrew.data.text.sentence_models import TextEncoder

    parts = text.split(",") if isinstance(text, str) else [str(part) for part in text]
    encoders = [part.strip() for part in parts if part.strip()]
    if not encoders:
        raise ColdbrewError("--text-encoders needs at least one encoder, e.g. minilm,mpnet@128")
    for encoder in encoders:
        if any(mark in encoder for mark in NOT_IN_ENCODER) or any(c.isspace() for c in encoder):
            raise ColdbrewError(
                f"--text-encoders: {encoder!r} cannot name a row (MODEL@ENCODER is a folder "
                "and a --blend member, so no +, /, parentheses or spaces): compare it on its "
                "own board with --text-encoder, or give a folder by its name from its parent"
            )
        TextEncoder.parse(encoder)  # the one check of a choice: a name or an existing folder
    if len(set(encoders)) != len(encoders):
        raise ColdbrewError(f"--text-encoders names an encoder twice: {','.join(encoders)}")
    return encoders


def uses_encoder(config: TrainConfig) -> bool:
    """Whether ``config``'s model reads the text block this encoder makes (not the LM, nor any
    model when the features have no text block)."""
    from coldbrew.config import unusable_options
    from coldbrew.registry import model_spec

    spec = model_spec(config.model)
    return spec.reads_text_vectors and not unusable_options(config, ["text_encoder"])


def board_rows(
    base_layers: Sequence[dict], models: Sequence[str], encoders: Sequence[str]
) -> list[tuple[str, TrainConfig]]:
    """``[(row name, its config)]``, model by model: one row per encoder for a model that uses
    the encoder, one for a model that does not (with the board's settings, as without
    ``encoders``); without ``encoders``, one row per model named by the model. Refused when
    no model uses an encoder (the list would compare nothing)."""
    if not encoders:
        return [(model, row_config(base_layers, model)) for model in models]
    rows = []
    for model in models:
        first = row_config(base_layers, row_name(model, encoders[0]))
        if not uses_encoder(first):
            rows.append((model, row_config(base_layers, model)))
            continue
        rows.append((row_name(model, encoders[0]), first))
        for encoder in encoders[1:]:
            name = row_name(model, encoder)
            rows.append((name, row_config(base_layers, name)))
    if all(name == config.model for name, config in rows):
        features = ",".join(rows[0][1].features or [])
        raise ColdbrewError(
            f"--text-encoders: no model here reads the text block ({', '.join(models)} with "
            f"--features {features or 'all'}); add text to --features, or leave it out"
        )
    return rows


def row_config(base_layers: Sequence[dict], name: str) -> TrainConfig:
    """The config of the row ``name`` (``aldi@mpnet@128``: aldi with that encoder; ``aldi``:
    aldi with the board's settings): the board's layers (a preset, the command line's flags)
    made into the model's config, its own section of options included. The one place a board
    makes a config; everything below derives from it (a fold, a final run, a seed)."""
    model, encoder = split_row(name)
    layers = (*base_layers, {"text_encoder": encoder}) if encoder is not None else base_layers
    return make_config(*layers, {"model": model})
