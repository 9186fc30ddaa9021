"""Text tables (CSV, TSV, ``;``- or ``|``-separated): the dialect sniffed, the file read once.

``sniff`` picks the separator (``,`` ``;`` tab ``|``) from the first lines, not the suffix
alone: the one that splits the header into two or more fields and the sample's rows into as
many (the suffix's own first where several fit). Fields may be quoted with ``"``; a quote
inside is doubled (``""``) or, where the file holds ``\\"`` anywhere, escaped with a backslash.
``read_text_table`` reads the whole file with pandas' C parser; where that fails,
``explain`` reads it again with the ``csv`` module to say what it saw: the ragged rows by line
(the first few, and how many), a quote never closed, a separator that fits the header better.
"""

from __future__ import annotations

import csv
import io
import itertools
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from coldbrew.errors import DataError

CANDIDATES = (",", ";", "\t", "|")
SUFFIX_SEPARATORS = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".psv": "|"}
SAMPLE_BYTES = 1 << 16
SAMPLE_ROWS = 200
FIT = 0.9  # share of the sample's rows with the header's field count
SHOWN = 3  # ragged lines a message names


@dataclass(frozen=True)
class Dialect:
    """How a text table is split: ``separator``, ``quote`` (``double``, ``backslash``,
    ``single`` or ``none``) and whether the separator was sniffed (not given)."""

    separator: str
    quote: str
    sniffed: bool = True

    def options(self) -> dict:
        """Keyword arguments for ``csv.reader`` and ``pandas.read_csv`` alike."""
        return {
            "delimiter": self.separator,
            "quotechar": "'" if self.quote == "single" else '"',
            "quoting": csv.QUOTE_NONE if self.quote == "none" else csv.QUOTE_MINIMAL,
            "escapechar": "\\" if self.quote == "backslash" else None,
        }


def describe(separator: str) -> str:
    """``tab``, or the character quoted: ``';'``."""
    return "tab" if separator == "\t" else repr(separator)


def sniff(
    sample: str, suffix: str, separator: str | None, quote: str | None, backslashes: bool
) -> Dialect:
    """The dialect of a file whose first characters are ``sample`` (whole lines): ``separator``
    and ``quote`` where given, else sniffed (``backslashes``: the file holds ``\\"``)."""
    quote = quote or ("backslash" if backslashes else "double")
    if separator:
        return Dialect(separator, quote, sniffed=False)
    default = SUFFIX_SEPARATORS.get(suffix, ",")
    fits = {candidate: _fit(sample, Dialect(candidate, quote)) for candidate in CANDIDATES}
    viable = [candidate for candidate, (width, _) in fits.items() if width >= 2]
    if not viable:
        return Dialect(default, quote)  # one column: any separator reads it
    best = max(
        viable,
        key=lambda c: (fits[c][1] >= FIT, c == default, fits[c][1], fits[c][0]),
    )
    return Dialect(best, quote)


def _fit(sample: str, dialect: Dialect) -> tuple[int, float]:
    """``(fields in the header, share of rows with as many)`` of ``sample`` read as ``dialect``."""
    try:
        reader = csv.reader(io.StringIO(sample), **dialect.options())
        widths = [len(row) for row in itertools.islice(reader, SAMPLE_ROWS) if row]
    except csv.Error:
        return 0, 0.0
    if not widths:
        return 0, 0.0
    return widths[0], sum(width == widths[0] for width in widths) / len(widths)


def sample_text(data: bytes, encoding: str) -> str:
    """The first ``SAMPLE_BYTES`` of ``data`` as text, cut after the last whole line."""
    if len(data) <= SAMPLE_BYTES:
        return data.decode(encoding, errors="replace")
    head = data[:SAMPLE_BYTES]
    return head[: head.rfind(b"\n") + 1 or len(head)].decode(encoding, errors="replace")


def read_text_table(
    path: Path, data: bytes, encoding: str, dialect: Dialect, dtype
) -> pd.DataFrame:
    """``data`` (the file's bytes) read as one table by pandas' C parser; a ``DataError``
    saying what the file holds (``explain``) where it cannot."""
    with warnings.catch_warnings():
        # a first row one field longer than the header is no index column: a ragged row
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(
                io.BytesIO(data),
                encoding=encoding,
                dtype=dtype,
                engine="c",
                index_col=False,
                skipinitialspace=True,
                **dialect.options(),
            )
        except pd.errors.EmptyDataError:
            raise DataError(
                f"{path}: empty file; expected a header line naming the columns"
            ) from None
        except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError) as error:
            raise explain(path, data, encoding, dialect, str(error)) from None


def explain(path: Path, data: bytes, encoding: str, dialect: Dialect, failure: str) -> DataError:
    """What made ``data`` unreadable as ``dialect``, read row by row: a quote never closed, or
    the rows whose field count is not the header's (the first few named by line, all counted),
    with the separator that fits the header better where there is one."""
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(data)))
    try:
        width, ragged, count, last = _ragged_rows(data, encoding, dialect)
    finally:
        csv.field_size_limit(limit)
    if "EOF inside string" in failure:
        quote = dialect.options()["quotechar"]
        return DataError(
            f"{path}, line {last}: a quote ({quote}) opened on this line is never closed; close it, "
            "or give --layout quote=none if quotes are plain characters there"
        )
    if not ragged:
        return DataError(
            f"{path}: not readable as a {describe(dialect.separator)}-separated table with "
            f"{dialect.quote} quotes; give --layout separator=... or quote=..."
        )
    (line, fields), others = ragged[0], [str(line) for line, _ in ragged[1:]]
    also = f" ({count} rows in all; also line {', '.join(others)})" if count > 1 else ""
    message = f"{path}, line {line}: {fields} fields where the header has {width}{also}"
    if dialect.quote != "backslash" and b'\\"' in data:
        return DataError(f'{message}; the file holds \\": give --layout quote=backslash')
    return DataError(message + _separator_hint(data, encoding, dialect, width))


def _ragged_rows(
    data: bytes, encoding: str, dialect: Dialect
) -> tuple[int, list[tuple[int, int]], int, int]:
    """``(header width, [(line, fields)] of the first ragged rows, how many in all, the line
    where the last row starts)``; blank lines are skipped, as pandas skips them."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding=encoding, newline="")
    reader = csv.reader(text, **dialect.options())
    width, ragged, count, start, last = 0, [], 0, 1, 1
    for row in reader:
        if row and not width:
            width = len(row)
        elif row and len(row) != width:
            count += 1
            if len(ragged) < SHOWN:
                ragged.append((start, len(row)))
        last, start = start, reader.line_num + 1
    return width, ragged, count, last


def _separator_hint(data: bytes, encoding: str, dialect: Dialect, width: int) -> str:
    """Where another separator splits the header into more fields: which, and the flag."""
    header = sample_text(data[:SAMPLE_BYTES], encoding).partition("\n")[0]
    widths = {
        candidate: _fit(header, Dialect(candidate, dialect.quote))[0] for candidate in CANDIDATES
    }
    best = max(CANDIDATES, key=widths.__getitem__)
    if best == dialect.separator or widths[best] <= width:
        return "; fix the row(s), or quote fields that hold the separator"
    flag = "tab" if best == "\t" else f"'{best}'"
    return (
        f"; the file looks {describe(best)}-separated ({widths[best]} fields in the header): "
        f"coldbrew read it as {describe(dialect.separator)}; give --layout separator={flag}"
    )
