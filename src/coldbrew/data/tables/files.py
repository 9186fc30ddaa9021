"""A table file's bytes as people keep them: compressed or not, in whichever encoding.

``open_table`` reads the file (``.gz``, ``.bz2``, ``.xz``, or a ``.zip`` of one file, by
suffix or by their first bytes), says which format it holds (the suffix before the
compression's: ``ratings.csv.gz`` is a CSV), and refuses what is no table (a spreadsheet,
binary data, an empty file) in one line naming the cause. ``choose_encoding`` picks UTF-8 (with
or without a byte-order mark), else cp1252, else latin-1, and says so where it is not UTF-8. A
file that mixes the two (UTF-8 accents beside single cp1252 bytes, as Book-Crossing's books
table does) is read as ``MIXED``: every valid UTF-8 sequence as UTF-8, every other byte as cp1252
(``mixed_to_utf8``).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from coldbrew.errors import DataError

COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}
MAGIC = {b"\x1f\x8b": ".gz", b"BZh": ".bz2", b"\xfd7zXZ\x00": ".xz", b"PK\x03\x04": ".zip"}
SPREADSHEETS = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
PARQUET = (".parquet", ".pq")
JSON_LINES = (".jsonl", ".ndjson")
BINARY_PROBE = 1 << 16  # bytes looked at for a NUL: text tables have none
CP1252_UNDEFINED = (b"\x81", b"\x8d", b"\x8f", b"\x90", b"\x9d")  # latin-1 reads these too
MIXED = "coldbrew-utf8-cp1252"  # a file mixing UTF-8 and cp1252: its decode error handler
MIXED_SHARE = 0.02  # of the non-ASCII bytes in valid UTF-8 sequences: more is no cp1252 chance


@dataclass(frozen=True)
class TableFile:
    """A table file's (decompressed) bytes and the suffix naming its format (``.csv``, ...)."""

    data: bytes
    suffix: str


def open_table(path: Path) -> TableFile:
    """``path``'s bytes, decompressed, and their format's suffix; a ``DataError`` for a missing
    file, a spreadsheet, an archive of several files or a damaged one, or an empty file."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix in SPREADSHEETS:
        raise _spreadsheet(path)
    data = path.read_bytes()
    compression = suffix if suffix in COMPRESSIONS else _magic(data)
    inner = Path(path.stem).suffix.lower() if suffix in COMPRESSIONS else suffix
    if compression:
        data, inner = _decompress(path, data, compression, inner)
    if not data.strip():
        raise DataError(f"{path}: empty file; expected a header line naming the columns")
    return TableFile(data, inner)


def _magic(data: bytes) -> str | None:
    return next((kind for magic, kind in MAGIC.items() if data.startswith(magic)), None)


def _spreadsheet(path: Path) -> DataError:
    return DataError(
        f"{path}: a spreadsheet, not a text table; export it as CSV (UTF-8) and give that file"
    )


def _decompress(path: Path, data: bytes, compression: str, inner: str) -> tuple[bytes, str]:
    """The one table inside, and the suffix naming its format (a ``.zip``'s member's own)."""
    name = COMPRESSIONS[compression]
    try:
        if compression == ".zip":
            return _zip_member(path, data)
        opener = {".gz": gzip.decompress, ".bz2": bz2.decompress, ".xz": lzma.decompress}
        return opener[compression](data), inner
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile):
        raise DataError(f"{path}: a damaged or cut-off {name} file; compress it again") from None


def _zip_member(path: Path, data: bytes) -> tuple[bytes, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = [
            info.filename
            for info in archive.infolist()
            if not info.is_dir() and not info.filename.startswith("__MACOSX/")
        ]
        if any(name.startswith(("xl/", "word/")) for name in names) or "mimetype" in names:
            raise _spreadsheet(path)
        if len(names) != 1:
            shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
            raise DataError(
                f"{path}: a zip of {len(names)} files ({shown or 'none'}); coldbrew reads a zip "
                "of one table: unpack it and name the files"
            )
        return archive.read(names[0]), Path(names[0]).suffix.lower()


def check_text(path: Path, data: bytes, encoding: str | None) -> None:
    """A ``DataError`` where ``data`` is no text: UTF-16 without that encoding given, or NUL
    bytes (a binary file)."""
    wide = encoding is not None and encoding.lower().replace("-", "").startswith("utf16")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) and not wide:
        raise DataError(f"{path}: UTF-16 text; save it as UTF-8 or give --layout encoding=utf-16")
    at = data.find(b"\x00", 0, BINARY_PROBE)
    if at >= 0 and not wide:
        raise DataError(
            f"{path}: not a text table (binary data at byte {at}); coldbrew reads CSV/TSV, "
            "JSON Lines or Parquet"
        )


def choose_encoding(path: Path, data: bytes, given: str | None) -> tuple[str, str | None]:
    """``(encoding, why)``: ``given`` (checked: a ``DataError`` at the first byte it cannot
    read), else UTF-8 (a byte-order mark dropped) where every byte fits, else cp1252, else
    latin-1 (every byte is a latin-1 character); ``why`` says what was read where it is not
    UTF-8 (``"read as cp1252 (not UTF-8: byte 9431 is 0xE9)"``)."""
    if given:
        try:
            data.decode(given)
        except UnicodeDecodeError as error:
            raise DataError(
                f"{path}: not {given} text (byte {error.start}: {error.reason}); give another "
                "--layout encoding=... or leave it out to let coldbrew choose"
            ) from None
        return given, None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = f"byte {error.start} is 0x{data[error.start]:02X}"
        sequences = _utf8_sequences(data)
        high = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) >= 0x80))
        if sequences >= 10 and sequences >= MIXED_SHARE * high:
            return MIXED, (
                f"read as UTF-8 and cp1252 mixed ({sequences:,} UTF-8 sequences, but {byte}): "
                "each byte that is not UTF-8 read as cp1252"
            )
        encoding = "latin-1" if any(byte in data for byte in CP1252_UNDEFINED) else "cp1252"
        return encoding, f"read as {encoding} (not UTF-8: {byte})"
    return "utf-8-sig", None


def _utf8_sequences(data: bytes) -> int:
    """How many characters of ``data`` are valid multi-byte UTF-8 (each byte that is not,
    read as one replacement character, is not counted)."""
    text = data.decode("utf-8", errors="replace")
    non_ascii = len(text) - len(text.encode("ascii", errors="ignore"))
    return non_ascii - text.count("\ufffd")


def _as_cp1252(error: UnicodeDecodeError) -> tuple[str, int]:
    """The decode error handler of ``MIXED``: the bytes UTF-8 could not read, as cp1252 (its
    five undefined bytes as latin-1)."""
    bad = error.object[error.start : error.end]
    text = "".join(
        chr(value) if bytes([value]) in CP1252_UNDEFINED else bytes([value]).decode("cp1252")
        for value in bad
    )
    return text, error.end


def mixed_to_utf8(data: bytes) -> bytes:
    """A ``MIXED`` file's bytes as plain UTF-8 (read once, so pandas' fast parser reads them)."""
    return data.decode("utf-8", errors=MIXED).encode("utf-8")


codecs.register_error(MIXED, _as_cp1252)
