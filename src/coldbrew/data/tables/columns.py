"""What one column is, read from its values (``coldbrew data init``'s column guesses).

Each function takes a column read as text (``read_table(..., text=True)``) and answers with a
kind and the reason printed beside the guess:

- ``is_index``: a pandas index written out (``Unnamed: 0``, ``index`` or no name, holding
  0..n-1 or 1..n in order): ignored.
- ``is_email``: an e-mail column (``email``, hex digests, ``@``-addresses): a user id.
- ``is_location``: URLs and paths (``http(s)://``, ``www.``, ``/a/b.jpg``, ``C:\\...``): skipped.
- ``content_kind``: an items table's column as ``text``, ``categories``, ``numeric`` or
  ``None`` (skipped: empty, one value, URLs, an id).
- ``id_values``: ids as the files' ids are matched (``1430.0`` and ``1430`` alike).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from coldbrew.data.tables.content import MAX_CATEGORIES

LONG_TEXT = 40  # characters on average: free text, whatever characters it holds
SHORT_PIECE = 30  # characters: a '|'-list's pieces are short labels
# a wide label whose kept values (each on 2+ items) cover this share of items: a category too
REPEATED_SHARE = 0.2
MAX_BLOCK_CELLS = 100_000_000  # a guessed category block's items x values: 0.4 GiB as float32
INDEX_NAMES = re.compile(r"(?:unnamed: ?\d+|index|level_0|)$", re.I)
EMAIL_NAME = re.compile(r"e-?mail", re.I)
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+|[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
LOCATION = re.compile(r"(?:https?://|ftp://|www\.|[A-Za-z]:\\|\\\\|/[^/\s]+/)\S*$")
ID_NAME = re.compile(r"(?:^|[_\- ])id$|_id$|^id_|code$|number$|^no$", re.I)
WHOLE_NUMBER = re.compile(r"\s*-?[0-9]{1,18}(?:\.0+)?\s*")
SAMPLE = 20_000  # values looked at for a column's form (URLs, e-mails)


def numbers(values: pd.Series) -> pd.Series | None:
    """``values`` as numbers when every non-empty one is a number, else ``None`` (a sample is
    tried first: most text columns fail at once; then each distinct value once)."""
    present = values.dropna()
    if present.empty or pd.to_numeric(present.iloc[:1000], errors="coerce").isna().any():
        return None
    codes, uniques = pd.factorize(present)
    converted = pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce")
    if converted.isna().any():
        return None
    return pd.Series(converted.to_numpy()[codes], index=present.index)


def is_index(name: str, values: pd.Series) -> bool:
    """Whether the column is a written-out row index: its name, and 0..n-1 or 1..n in order."""
    if not INDEX_NAMES.match(str(name).strip()):
        return False
    counted = numbers(values)
    if counted is None or counted.isna().any() or len(counted) != len(values):
        return False
    steps = counted.to_numpy()
    return bool(steps[0] in (0, 1) and np.array_equal(steps, np.arange(len(steps)) + steps[0]))


def _sample(values: pd.Series) -> pd.Series:
    present = values.dropna().astype(str).str.strip()
    present = present[present != ""]
    return present.iloc[:SAMPLE]


def is_email(name: str, values: pd.Series) -> bool:
    """An e-mail column: named so, or most values hex digests or ``@``-addresses."""
    sample = _sample(values)
    if sample.empty:
        return False
    return bool(EMAIL_NAME.search(str(name)) or sample.str.fullmatch(EMAIL).mean() > 0.9)


def is_location(values: pd.Series) -> bool:
    """URLs or file paths in most of the (non-empty) values."""
    sample = _sample(values)
    return bool(not sample.empty and sample.str.match(LOCATION).mean() > 0.5)


def id_values(values: pd.Series) -> pd.Index:
    """The distinct ids as the files' ids are matched: spaces stripped, whole numbers written
    without a fraction (``" 1430.0"`` reads as ``"1430"``)."""
    return pd.Index(pd.unique(matched_ids(pd.unique(values.dropna()))), dtype=object)


def matched_ids(values) -> np.ndarray:
    """Each of ``values`` as ids are matched (see ``id_values``), as an object array."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    text = pd.Series(uniques, dtype=object).astype(str).str.strip()
    dotted = text.str.contains(".", regex=False).to_numpy(dtype=bool)  # few ids hold a dot
    whole = text[dotted].str.fullmatch(WHOLE_NUMBER)
    text[whole[whole].index] = text[whole[whole].index].str.replace(r"\.0*$", "", regex=True)
    return text.to_numpy(dtype=object)[codes]


def content_kind(name: str, values: pd.Series) -> tuple[str | None, str]:
    """``(kind, why)``: the block an items table's column makes, ``None`` to skip it;
    ``"text+categories"``: both (a wide label whose frequent values repeat, as authors)."""
    present = values.dropna()
    present = present[present.astype(str).str.strip() != ""]
    if present.empty:
        return None, "empty: not used"
    distinct = present.nunique()
    if distinct == 1:
        return None, f"one value ({str(present.iloc[0])[:30]!r}) in every row: not used"
    counted = numbers(present)
    if counted is not None:
        return _number_kind(name, counted)
    if is_location(present):
        return None, f"URLs or paths (e.g. {str(present.iloc[0])[:40]!r}): not used"
    text = present.astype(str)
    length = text.str.len().mean()
    if length >= LONG_TEXT:
        return "text", f"{length:.0f} characters on average"
    share = distinct / len(text)
    if text.str.contains("|", regex=False).mean() > 0.2:
        pieces = text.str.split("|", regex=False).explode().str.strip()
        if pieces.str.len().mean() <= SHORT_PIECE:
            return (
                "categories",
                f"'|'-lists in {text.str.contains('|', regex=False).mean():.0%} of rows",
            )
    counts = text.value_counts()
    once = float((counts == 1).mean())
    if distinct > MAX_CATEGORIES or (distinct >= 100 and once > 0.5):
        many = f"{distinct:,} distinct values, {once:.0%} seen once: too many for a category"
        top = counts.iloc[:MAX_CATEGORIES]
        covered = float(top[top > 1].sum() / len(text))  # items sharing a kept value
        if covered < REPEATED_SHARE:
            return "text", many
        cells = len(values) * min(distinct, MAX_CATEGORIES)
        if cells > MAX_BLOCK_CELLS:  # the block is dense in memory: 4 bytes a cell
            return "text", (
                f"{many}; its frequent values repeat, but a category block of "
                f"{len(values):,} items x {min(distinct, MAX_CATEGORIES):,} values would take "
                f"{cells * 4 / 2**30:.1f} GiB: text only (name it under categories to have both)"
            )
        return "text+categories", (
            f"{many}, so text; its most frequent values, each on 2 items or more, cover "
            f"{covered:.0%} of the items, so categories too"
        )
    spaced = text.str.contains(" ", regex=False).mean()
    if share >= 0.9 or (share > 0.5 and spaced > 0.5):
        return "text", f"{share:.0%} distinct, {length:.0f} characters on average"
    return "categories", f"{distinct} distinct values"


def _number_kind(name: str, counted: pd.Series) -> tuple[str | None, str]:
    """Numbers are ``numeric``, unless they are another id: whole, each once, named like one."""
    whole = bool((counted == np.floor(counted)).all())
    if whole and counted.is_unique and ID_NAME.search(str(name)):
        return None, "an id (each value once): not used"
    if whole and counted.between(1000, 2100).mean() > 0.9:
        return "numeric", "numbers (years)"
    return "numeric", "numbers"
