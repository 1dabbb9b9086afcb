"""Reading a canonical trace CSV (:func:`hetgym.workloads.schema.read_trace`): its metadata comment, its header
and its rows, taken as the user wrote them.

The file may open with a UTF-8 byte-order mark and with comment lines (``#``) before the header, the first
of which may be the ``# hetgym-trace {json}`` metadata line. After the header every line is a row: a line
starting with ``#`` there is refused (a commented-out job would otherwise vanish unseen). A column named
twice in the header is refused by name. Text columns keep their text (only an empty field means none);
a numeric field spelled ``nan``, ``NA``, ``null``, ``None`` or ``inf`` is refused, not read as empty.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from hetgym.workloads.columns import (
    CSV_MAGIC,
    FLOAT_COLUMNS,
    INT_COLUMNS,
    MAX_LINE_CHARS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    TraceError,
    metadata_object,
)

_BOM = b"\xef\xbb\xbf"
#: Columns read as text: their value is the text itself (an empty field is none).
_TEXT_COLUMNS = ("job_type", "user", "gpu_types", "template_id", "best_effort")


def _open_bytes(path: Path) -> Any:
    return gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")


def _open_text(path: Path) -> Any:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def read_canonical_csv(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The table and the metadata of a canonical trace CSV (``.csv`` or ``.csv.gz``).

    Raises:
        TraceError: naming the file (and the row, line or column) for an over-long line, a ``#`` line
            after the header, a column named twice, bad metadata, or a numeric field spelled as a
            null marker or an infinity.
    """
    skip = _scan(path)
    metadata = _read_metadata(path)
    names = _header(path, skip)
    first: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in first:
            raise TraceError(
                f"{path}: row 0 (header), field {name!r}: column {name!r} appears twice (columns {first[name]} and "
                f"{i}); remove or rename one"
            )
        first[name] = i
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    text_dtypes = {c: str for c in _TEXT_COLUMNS}
    frame = pd.read_csv(path, skiprows=skip, dtype=text_dtypes)
    present = [c for c in frame.columns if c in known]
    if not present or frame.empty:
        return frame, metadata
    # The same rows as written: what a number's NaN came from, and the exact text of the text columns.
    raw = pd.read_csv(path, skiprows=skip, usecols=present, dtype=str, keep_default_na=False, na_values=[""])
    for col in present:
        if col in _TEXT_COLUMNS:
            frame[col] = raw[col]
        elif col in INT_COLUMNS or col in FLOAT_COLUMNS:
            _refuse_null_spellings(path, col, frame[col], raw[col])
    return frame, metadata


def _refuse_null_spellings(path: Path, col: str, parsed: pd.Series, text: pd.Series) -> None:
    """Refuse a numeric field written but read as NaN (``nan``, ``NA``, ``null``, ``None``...) or as inf."""
    numbers = pd.to_numeric(parsed, errors="coerce")
    bad = text.notna() & (parsed.isna() | numbers.abs().eq(math.inf))
    if not bad.any():
        return
    i = int(bad.to_numpy().nonzero()[0][0])
    none = "every job needs it" if col in REQUIRED_COLUMNS else "leave the field empty for none"
    raise TraceError(f"{path}: row {i + 1}, field {col!r}: value {text.iloc[i]!r} is not a finite number; {none}")


def _read_metadata(path: Path) -> dict[str, Any]:
    with _open_text(path) as fh:
        first = fh.readline()
    if first.startswith(CSV_MAGIC):
        try:
            value = json.loads(first[len(CSV_MAGIC) :])
        except json.JSONDecodeError as exc:
            raise TraceError(f"{path}: line 1: metadata comment is not valid JSON ({exc})") from None
        return metadata_object(value, path, "line 1 (the metadata comment)")
    return {}


def _header(path: Path, skip: int) -> list[str]:
    """The header's column names, as written (before pandas renames a repeated one)."""
    with _open_text(path) as fh:
        for _ in range(skip):
            fh.readline()
        line = fh.readline()
    rows = list(csv.reader([line]))
    return [name.strip() for name in rows[0]] if rows else []


def _scan(path: Path) -> int:
    """The number of lines before the header (comments and blanks), reading in bounded chunks.

    Refuses a line longer than :data:`MAX_LINE_CHARS` bytes (pandas reads a field whole, whatever its
    size) and a line starting with ``#`` after the header, naming the file, the 1-based data row and the
    line.
    """
    line = 1
    row = -1  # the header is row 0
    length = 0
    first_byte = b""
    skip = 0

    def end_of_line() -> None:
        nonlocal row, line, length, first_byte, skip
        if first_byte in (b"#", b"\r", b""):
            if row < 0:
                skip += 1
            elif first_byte == b"#":
                raise TraceError(
                    f"{path}: row {row + 1} (line {line}): starts with '#' after the header; comment lines may only "
                    "come before the header: delete the line, or remove the '#' to keep the job"
                )
        else:
            row += 1
        line += 1
        length = 0
        first_byte = b""

    with _open_bytes(path) as fh:
        while chunk := fh.read(1 << 20):
            if line == 1 and length == 0 and chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
            pieces = chunk.split(b"\n")
            for i, piece in enumerate(pieces):
                if length == 0 and piece:
                    first_byte = piece[:1]
                length += len(piece)
                if length > MAX_LINE_CHARS:
                    counted = row + (1 if first_byte not in (b"#", b"\r", b"") else 0)
                    where = f"row {counted} (line {line})" if counted > 0 else f"line {line}"
                    raise TraceError(
                        f"{path}: {where}: longer than {MAX_LINE_CHARS} bytes; a canonical trace has one short "
                        "line per job (is this the right file, or is a field corrupt?)"
                    )
                if i < len(pieces) - 1:  # the line ends here
                    end_of_line()
    if length:
        end_of_line()
    return skip
