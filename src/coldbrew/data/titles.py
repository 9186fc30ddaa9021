"""An item's title as lists show it: the plain value of its title column where the loader kept
one (``Dataset.item_titles``), else the title part of its text.

The general table loader labels each text column's value in ``Dataset.item_text``
(``"Title: Heat. Genres: Action."``), so the text is no title; it keeps the plain value of the
column named title or name (any case), else of the first text column. The MovieLens-style
loaders write ``"Heat (1995). Genres: ... . Plot: ..."``, whose title is the part before the
first field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

TITLE_CHARS = 120  # a title is cut here
TITLE_COLUMNS = ("title", "name")  # a text column of this name (any case) holds the title
# the loaders write "Title (Year). Genres: ... . Director: ... . Plot: ..." (data/features.py)
_FIELD = re.compile(r"\.\s+(?:Genres|Director|Cast|Plot|Writers?|Tags?)\s*:")


def title_column(columns: Sequence[str]) -> str:
    """The text column whose plain value is an item's title: one named title or name, else
    the first."""
    return next((c for c in columns if c.strip().casefold() in TITLE_COLUMNS), columns[0])


def cut(title: str) -> str:
    """``title`` stripped, cut to ``TITLE_CHARS`` characters (the last one an ellipsis)."""
    title = title.strip()
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1].rstrip() + "…"


def short_title(text: str) -> str:
    """The title part of an item text (before its first ``. Genres:``-like field), or the text
    itself cut to ``TITLE_CHARS`` characters."""
    found = _FIELD.search(text)
    return cut(text[: found.start()] if found else text.rstrip("."))


def title_of(titles: Sequence[str] | None, texts: Sequence[str] | None, row: int) -> str | None:
    """Item ``row``'s shown title: its plain title where there is one (not empty), else the
    title part of its text; None when items have neither."""
    if titles is not None and (titles[row].strip() or texts is None):
        return cut(titles[row])
    return None if texts is None else short_title(texts[row])


def item_titles(titles: Sequence[str] | None, texts: Sequence[str] | None) -> list[str] | None:
    """Every item's ``title_of``; None when items have neither titles nor texts."""
    if titles is None and texts is None:
        return None
    return [title_of(titles, texts, row) for row in range(len(titles or texts))]
