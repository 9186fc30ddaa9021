"""Dataset loading: one ``Dataset`` form, one loader module per on-disk format.

``load_dataset`` takes a directory, a known dataset name (resolved under ``$COLDBREW_DATA``,
then the user cache) or ``"synthetic"``, and picks the loader from what the directory holds.

Loaders do not call ``warnings.warn``. What a person should know about the data (rows dropped,
a split absent, a modality skipped) is a line in ``Dataset.notes``, which the caller prints or
records; trouble outside the data (a cache that cannot be written) goes to the ``logging``
logger ``"coldbrew.data.<module>"``, so ``logging.getLogger("coldbrew")`` silences it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coldbrew.data.paths import cache_dir, resolve_data_path
from coldbrew.data.tables.settings import not_own_tables
from coldbrew.data.text.sentence_models import DEFAULT_TEXT_ENCODER, TextEncoder
from coldbrew.errors import DataError

if TYPE_CHECKING:
    from coldbrew.data.dataset import Dataset

DEFAULT_SEED = 1  # as coldbrew.data.dataset.DEFAULT_SEED (a torch-free copy; a test checks)

__all__ = [
    "Dataset",
    "WordIds",
    "GROUPS",
    "SPLITS",
    "DEFAULT_SEED",
    "check_seed",
    "load_dataset",
    "resolve_data_path",
    "cache_dir",
]


def load_dataset(
    path_or_name: str | os.PathLike,
    *,
    trust_pickle: bool = False,
    features: Sequence[str] | str | None = None,
    seed: int = DEFAULT_SEED,
    text_encoder: str | TextEncoder = DEFAULT_TEXT_ENCODER,
    text_vectors: bool = True,
    layout: Mapping[str, Any] | None = None,
    **options,
) -> Dataset:
    """Load a dataset into the one in-memory form.

    ``features`` picks modalities by name (``"genre,text"`` or a list); ``None`` takes every
    modality the source offers. ``trust_pickle`` allows the original CLCRec ``.npy`` pickles.
    ``seed`` (0..2**32 - 1) draws the split where the source has none of its own (raw
    MovieLens, synthetic data); its default is the training default, so a plain load shows the
    split ``train`` uses unless told another seed. ``text_encoder`` embeds item texts where the
    source has them (``minilm``, ``mpnet`` or a sentence-transformers folder, or a run's
    ``TextEncoder``; see ``coldbrew.data.text.sentence_models``); a source whose text is word
    ids ignores it, with a note.
    ``text_vectors=False`` leaves the sentence-encoded ``text`` block out whatever
    ``features`` says, so no encoder runs (for a model that reads the item texts itself: the
    LM); the texts stay in ``Dataset.item_text``.
    ``options`` go to the loader (e.g. ``num_users=...`` for ``"synthetic"``).
    """
    from coldbrew.data.dataset import check_seed

    seed = check_seed(seed)
    encoder = TextEncoder.parse(text_encoder)
    if isinstance(features, str):
        features = [f.strip() for f in features.split(",") if f.strip()]
    if str(path_or_name).split(":")[0] == "synthetic":
        from coldbrew.data.loaders import synthetic

        if layout:
            raise not_own_tables(str(path_or_name))
        dataset = synthetic.load(str(path_or_name), features=features, seed=seed, **options)
        return _note_unused_encoder(dataset, encoder)
    path = resolve_data_path(path_or_name)
    if not path.is_dir():
        raise DataError(f"{path} is not a directory")
    options.update(features=features, seed=seed)
    return _load_folder(
        path,
        trust_pickle=trust_pickle,
        encoder=encoder,
        text_vectors=text_vectors,
        layout=layout,
        options=options,
    )


def _load_folder(
    path: Path,
    *,
    trust_pickle: bool,
    encoder: TextEncoder,
    text_vectors: bool,
    layout: Mapping[str, Any] | None,
    options: dict[str, Any],
) -> Dataset:
    """The dataset in ``path`` by the loader of the format it holds (``options``: the
    loader's, ``features`` and ``seed`` among them)."""
    from coldbrew.data.loaders import clcrec_layout, csv_coldstart, movielens, recbole
    from coldbrew.data.tables import reader

    if reader.detect(path, layout):  # coldbrew.yaml or --layout names the files: it wins
        return reader.load(
            path,
            text_encoder=encoder,
            text_vectors=text_vectors,
            layout=dict(layout or {}),
            **options,
        )
    if layout:
        raise not_own_tables(str(path))
    if clcrec_layout.detect(path):  # its text is word ids: no sentence encoder
        dataset = clcrec_layout.load(path, trust_pickle=trust_pickle, **options)
        return _note_unused_encoder(dataset, encoder)
    for module in (csv_coldstart, movielens):
        if not module.detect(path):
            continue
        if not text_vectors:  # these loaders offer genre and text: keep what is asked but text
            from coldbrew.data.features import DEFAULT_MODALITIES

            asked = options["features"] or DEFAULT_MODALITIES
            options["features"] = [name for name in asked if name != "text"]
        return module.load(path, text_encoder=encoder, **options)
    if recbole.detect(path):
        return recbole.load(path, text_encoder=encoder, text_vectors=text_vectors, **options)
    raise DataError(
        f"{path}: no known dataset layout (expected a coldbrew.yaml naming your files, which "
        "'coldbrew data init FILES...' writes; CLCRec .npy files, train.csv + cold_val.csv, "
        "MovieLens u.data + u.item, or RecBole NAME.inter + NAME.item)"
    )


def _note_unused_encoder(dataset: Dataset, encoder: TextEncoder) -> Dataset:
    if encoder != DEFAULT_TEXT_ENCODER:
        dataset.notes.append(
            f"text_encoder {encoder.spelling!r} unused: {dataset.name} has no item texts to encode"
        )
    return dataset


def __getattr__(name: str) -> Any:
    """The dataset form, imported on first use: ``coldbrew.data``'s torch-free modules (paths,
    the forecasting config) load without torch."""
    if name in ("Dataset", "WordIds", "GROUPS", "SPLITS", "check_seed"):
        from coldbrew.data import dataset

        return getattr(dataset, name)
    raise AttributeError(f"module 'coldbrew.data' has no attribute {name!r}")
