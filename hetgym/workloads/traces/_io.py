"""Reading trace sources: plain, gzip and tar.gz files, a streaming JSON-array reader, CSV rows with
their line numbers, and timestamp parsing. Everything here streams: no source is read into memory whole.
"""

from __future__ import annotations

import csv
import fnmatch
import gzip
import io
import json
import math
import os
import re
import tarfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from hetgym.workloads.columns import MAX_FIELD_CHARS, MAX_LINE_CHARS, TraceError, unknown_column_error

_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar")
_EPOCH = datetime(1970, 1, 1)
_AFTER = frozenset(" \t\r\n,]")  # what may follow a complete array element
_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')


def is_tar(path: Path) -> bool:
    """Whether ``path`` names a tar archive (optionally gzip-compressed)."""
    return path.name.lower().endswith(_TAR_SUFFIXES)


@dataclass(frozen=True)
class Member:
    """One text stream of a source: a plain file, or a file inside a tar archive.

    Attributes:
        label: How errors name it: ``path`` or ``path::member``.
        name: The member's base name (the file name for a plain file).
    """

    label: str
    name: str


#: Text sources are UTF-8; a leading byte-order mark (as spreadsheet programs write) is dropped, as the
#: canonical reader does, so it does not end up in the first column's name.
ENCODING = "utf-8-sig"


def _text(raw: Any) -> TextIO:
    return io.TextIOWrapper(raw, encoding=ENCODING, newline="")


@contextmanager
def open_plain(path: Path) -> Iterator[TextIO]:
    """Open a plain or ``.gz`` text file."""
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if path.is_dir():
        raise TraceError(f"{path}: is a directory; give a file")
    if path.name.lower().endswith(".gz"):
        with gzip.open(path, "rb") as raw, _text(raw) as fh:
            yield fh
    else:
        with open(path, encoding=ENCODING, newline="") as fh:
            yield fh


def iter_members(
    path: Path, patterns: Sequence[str], members: Sequence[str] | None = None
) -> Iterator[tuple[Member, TextIO]]:
    """Yield ``(member, text stream)`` for each file of a source, in archive order.

    A plain file yields itself. A tar archive (``.tar.gz``, ``.tgz``, ``.tar``) is read in one streaming
    pass; its files are selected by base name, either exactly (``members``) or by glob ``patterns``.

    Raises:
        TraceError: No such file, or no member matched (naming the members the archive holds).
    """
    if not path.exists():
        raise TraceError(f"{path}: no such file")
    if not is_tar(path):
        with open_plain(path) as fh:
            yield Member(str(path), path.name), fh
        return
    wanted = set(members or ())
    found: list[str] = []
    matched: set[str] = set()
    try:
        with tarfile.open(path, "r:*") as tf:
            for info in tf:
                if not info.isfile():
                    continue
                base = os.path.basename(info.name)
                found.append(base)
                if wanted:
                    hit = {base, info.name} & wanted
                    if not hit:
                        continue
                    matched.update(hit)
                elif any(fnmatch.fnmatch(base, p) for p in patterns):
                    matched.add(base)
                else:
                    continue
                raw = tf.extractfile(info)
                if raw is None:  # pragma: no cover - isfile() members always have data
                    continue
                with _text(raw) as fh:
                    yield Member(f"{path}::{info.name}", base), fh
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise TraceError(f"{path}: cannot read the archive ({exc}); is it a complete .tar.gz?") from None
    if wanted:
        missing = sorted(m for m in wanted if m not in matched)
        if missing:
            raise TraceError(f"{path}: no member named {missing}; the archive holds {sorted(found)}")
    elif not matched:
        raise TraceError(f"{path}: no member matches {list(patterns)}; the archive holds {sorted(found)}")


# --------------------------------------------------------------------------------------------
# CSV


class _LineTooLong(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


def _bounded_lines(fh: TextIO, limit: int) -> Iterator[str]:
    """The lines of ``fh``, none read beyond ``limit`` characters (a longer one raises _LineTooLong)."""
    number = 0
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise _LineTooLong(number)
        yield line


def csv_rows(
    fh: TextIO, label: str = "<csv>", *, delimiter: str = ",", header: bool | Callable[[list[str]], bool] = False
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, fields)`` for each non-empty row.

    A malformed quote, a field longer than :data:`~hetgym.workloads.schema.MAX_FIELD_CHARS` or a line longer
    than :data:`~hetgym.workloads.schema.MAX_LINE_CHARS` raises :class:`TraceError` naming ``label``, the
    1-based data row and the line; no line is read into memory beyond that bound. ``header`` says whether
    the first row is a header (not counted as a data row), or decides it from the first row's fields.
    """
    csv.field_size_limit(MAX_FIELD_CHARS)
    reader = csv.reader(_bounded_lines(fh, MAX_LINE_CHARS), delimiter=delimiter)
    data_rows = 0
    first = True
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise TraceError(
                f"{label}: row {data_rows + 1} (line {reader.line_num}): malformed CSV ({exc}; a field may have at "
                f"most {MAX_FIELD_CHARS} characters)"
            ) from None
        except _LineTooLong as exc:
            raise TraceError(
                f"{label}: row {data_rows + 1} (line {exc.line}): longer than {MAX_LINE_CHARS} characters; not "
                "read further (is this the right file, or is a field corrupt?)"
            ) from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if first:
            first = False
            if header(row) if callable(header) else header:
                yield int(reader.line_num), row
                continue
        data_rows += 1
        yield int(reader.line_num), row


def header_index(
    header: Sequence[str],
    required: Sequence[str],
    source: str,
    what: str,
    known: Sequence[str] | None = None,
) -> dict[str, int]:
    """Column positions by name; a missing required column raises an error naming it, and so does a column
    not in ``known`` (when given), with the nearest known name."""
    names = [h.strip() for h in header]
    check_duplicate_columns(names, source)
    missing = [c for c in required if c not in names]
    if missing:
        raise TraceError(
            f"{source}: row 0 (header), field {missing[0]!r}: missing column(s) {missing}; "
            f"{what} needs {list(required)}, the header has {names}"
        )
    if known is not None:
        for name in names:
            if name not in known:
                raise unknown_column_error(name, known, f"{source} (header)", fix=f"{what} has no such column")
    return {n: i for i, n in enumerate(names)}


def check_duplicate_columns(names: Sequence[str], source: str) -> None:
    """Refuse a header naming a column twice (which of the two holds the value would be a guess)."""
    first: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in first:
            raise TraceError(
                f"{source}: row 0 (header), field {name!r}: column {name!r} appears twice (columns {first[name]} "
                f"and {i}); remove or rename one"
            )
        first[name] = i


# --------------------------------------------------------------------------------------------
# Values


def is_empty(text: str | None) -> bool:
    """Whether a raw field is empty (nothing but blanks): the one spelling of "none" in a CSV trace.

    Text such as ``nan``, ``NA``, ``null`` or ``inf`` is not empty: it reaches the field's parser, which
    refuses it where a number belongs (docs/traces.md lists, per field, what an empty field means).
    """
    return text is None or not text.strip()


def parse_number(text: str) -> float:
    """A finite float, or ValueError."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def parse_int(text: str) -> int:
    """An integer written as ``4`` or ``4.0``, or ValueError."""
    value = float(text)
    if not value.is_integer():
        raise ValueError(text)
    return int(value)


def parse_datetime_s(text: str) -> float:
    """Seconds since the epoch of ``YYYY-MM-DD HH:MM:SS`` (naive, read as UTC), or ValueError.

    Traces such as Philly and Helios log local wall-clock times without a zone; only differences
    matter, so they are read as UTC (a daylight-saving change inside a job shifts it by an hour).
    """
    text = text.strip()
    if len(text) < 19 or text[4] != "-" or text[7] != "-" or text[10] not in " T":
        raise ValueError(text)
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is not None:
        return dt.timestamp()
    return (dt - _EPOCH).total_seconds()


# --------------------------------------------------------------------------------------------
# Streaming JSON array


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice (``json`` would keep the last silently)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


def iter_json_array(
    fh: TextIO, label: str, *, chunk_chars: int = 1 << 20, max_element_chars: int = 64 << 20
) -> Iterator[tuple[int, int, Any]]:
    """Yield ``(index, line, element)`` for each element of a top-level JSON array, reading incrementally.

    Memory stays bounded by the largest element (plus one chunk), so multi-hundred-megabyte files such
    as Philly's ``cluster_job_log`` stream in constant memory.

    Args:
        fh: The text stream.
        label: Source name for error messages.
        chunk_chars: Characters read at a time.
        max_element_chars: An element longer than this is reported as malformed rather than buffered.

    Raises:
        TraceError: The stream is not a JSON array, an element is malformed, or the array is truncated;
            the message names the element (1-based row) and its line.
    """
    decoder = json.JSONDecoder(object_pairs_hook=_object_without_repeats)
    buf = ""
    pos = 0
    base_line = 1  # line number of buf[0]
    cur_idx, cur_line = 0, 1  # newlines are counted incrementally: line number of buf[cur_idx]
    eof = False

    def line_at(p: int) -> int:
        nonlocal cur_idx, cur_line
        if p < cur_idx:  # only error paths look back
            return base_line + buf.count("\n", 0, p)
        cur_line += buf.count("\n", cur_idx, p)
        cur_idx = p
        return cur_line

    def fill() -> None:
        nonlocal buf, pos, base_line, cur_idx, cur_line, eof
        chunk = fh.read(chunk_chars)
        if not chunk:
            eof = True
            return
        base_line = line_at(pos)
        buf = buf[pos:] + chunk
        pos = 0
        cur_idx, cur_line = 0, base_line

    def skip_ws() -> None:
        nonlocal pos
        while True:
            n = len(buf)
            while pos < n and buf[pos] in " \t\r\n":
                pos += 1
            if pos < n or eof:
                return
            fill()

    skip_ws()
    if pos >= len(buf):
        raise TraceError(f"{label}: empty file; expected a JSON array of jobs")
    if buf[pos] != "[":
        raise TraceError(f"{label}: line {line_at(pos)}: expected a JSON array ('['), found {buf[pos]!r}")
    pos += 1
    skip_ws()
    if pos < len(buf) and buf[pos] == "]":
        return
    index = 0
    while True:
        skip_ws()
        index += 1
        if pos >= len(buf):
            raise TraceError(
                f"{label}: row {index}: truncated JSON: the file ends before element {index} "
                f"(after line {line_at(pos)}); the array is not closed with ']'"
            )
        start_line = line_at(pos)
        while True:
            try:
                element, end = decoder.raw_decode(buf, pos)
            except _RepeatedKey as exc:
                raise TraceError(
                    f"{label}: row {index} (line {start_line}), field {exc.key!r}: the key appears twice in one "
                    "object; which value holds would be a guess: remove one"
                ) from None
            except json.JSONDecodeError as exc:
                if eof or len(buf) - pos > max_element_chars:
                    keys = _KEY.findall(buf, pos, exc.pos + 1)
                    fld = f", field {keys[-1]!r}" if keys else ""
                    what = (
                        f"truncated JSON: the file ends inside element {index}"
                        if eof and (exc.msg.startswith("Unterminated") or exc.pos >= len(buf.rstrip()) - 1)
                        else "malformed JSON"
                    )
                    raise TraceError(
                        f"{label}: row {index} (line {start_line}){fld}: {what} ({exc.msg}, line "
                        f"{base_line + exc.lineno - 1})"
                    ) from None
                fill()
                continue
            if not eof and (end >= len(buf) or buf[end] not in _AFTER) and len(buf) - pos <= max_element_chars:
                fill()  # a number or literal may continue in the next chunk: decode again with more text
                continue
            break
        pos = end
        yield index, start_line, element
        skip_ws()
        if pos >= len(buf):
            raise TraceError(
                f"{label}: row {index} (line {start_line}): truncated JSON: the file ends after element "
                f"{index} without the closing ']'"
            )
        sep = buf[pos]
        pos += 1
        if sep == ",":
            continue
        if sep == "]":
            skip_ws()
            if pos < len(buf):
                raise TraceError(f"{label}: line {line_at(pos)}: unexpected text after the closing ']'")
            return
        raise TraceError(
            f"{label}: row {index} (line {line_at(pos - 1)}): malformed JSON: expected ',' or ']' after "
            f"element {index}, found {sep!r}"
        )
