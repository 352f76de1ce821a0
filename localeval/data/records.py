"""Raw records from dataset files: JSONL, JSON lists and CSV tables, each with its line.

Reading is strict (:mod:`localeval.data.strict_json`): what Python's parser would
read but localeval could not keep or write back (``NaN``, a key given twice, a lone
surrogate, nesting deeper than ``MAX_DEPTH``) is an error naming the key path, for
the data would otherwise change without a word, or no report of the run could be
written. Every problem is a ``DatasetError`` naming the file and the line. What the
records mean (test cases, conversations, human judgments) is for the callers:
:mod:`localeval.data.case_reader`, :mod:`localeval.metaeval.evaluation`.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from localeval.data.strict_json import StrictJson
from localeval.errors import DatasetError

__all__ = [
    "Format",
    "Record",
    "StrictJson",
    "csv_table",
    "file_format",
    "json_records",
    "json_type",
    "jsonl_records",
    "no_records_error",
    "read_records",
    "read_text",
]

Format = Literal["jsonl", "json", "csv"]
Record = dict[str, Any]

_FORMATS: dict[str, Format] = {"jsonl": "jsonl", "json": "json", "csv": "csv"}
_EXTENSIONS: dict[str, Format] = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"
}
_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # the whitespace JSON allows between tokens
#: Why a file that reads without error holds no record, by format.
_NO_RECORDS = {"jsonl": "the file is empty", "json": "the file is an empty list",
               "csv": "the file has only its header row"}
#: The longest CSV cell read: the csv module's default (131,072 characters) would refuse a cell that
#: JSONL takes. 2**31 - 1 is the largest limit a C long holds everywhere (sys.maxsize overflows on Windows).
_CSV_CELL_LIMIT = 2**31 - 1
#: The csv module's limit is the process's: it is raised only while a row is read, and put back.
_CSV_LIMIT_LOCK = threading.Lock()
_JSON_TYPES = {str: "a string", int: "a number", float: "a number", bool: "a boolean",
               dict: "an object", list: "a list", type(None): "null"}


def read_records(
    path: str | os.PathLike[str],
    *,
    format: Literal["jsonl", "json"] | None = None,
    limit: int | None = None,
) -> list[tuple[int, Record]]:
    """The raw objects of a JSONL or JSON-list file, each with the line where it starts.

    Nothing is validated beyond "a JSON object": for files whose records are not
    test cases (human judgments, say). ``limit`` stops after the first ``limit``
    records, so a syntax error further on does not matter.
    """
    name = os.fspath(path)
    fmt = file_format(name, format)
    if fmt == "csv":
        raise DatasetError("records are read from JSON or JSONL, not CSV", path=name)
    text, _ = read_text(name)
    records = json_records(text, name) if fmt == "json" else jsonl_records(text, name)
    return list(itertools.islice(records, limit))


def no_records_error(path: str, format: Format | None = None, *, what: str = "test cases") -> DatasetError:
    """The error for a file of ``format`` that reads without error but holds no record."""
    return DatasetError(f"no {what} ({_NO_RECORDS[file_format(path, format)]})", path=path)


def file_format(path: str, format: str | None) -> Format:
    """``format`` checked, or by default the one the extension of ``path`` names."""
    if format is not None:
        if format not in _FORMATS:
            message = f"unknown format {format!r}; use 'jsonl', 'json' or 'csv'"
            raise DatasetError(message, path=path)
        return _FORMATS[format]
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        message = f"cannot tell the format from the extension {suffix or '(none)'!r}"
        raise DatasetError(f"{message}; pass format='jsonl', 'json' or 'csv'", path=path)
    return _EXTENSIONS[suffix]


def read_text(path: str) -> tuple[str, str]:
    """The file's text and the sha256 of its bytes."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise DatasetError("no such file", path=path) from None
    except IsADirectoryError:
        raise DatasetError("is a directory, not a dataset file", path=path) from None
    except OSError as exc:
        raise DatasetError(f"cannot read: {exc.strerror}", path=path) from exc
    # What "utf-8-sig" does, by hand, so that the decoder's error offset counts
    # from the same bytes we count lines in.
    body = raw.removeprefix(codecs.BOM_UTF8)
    try:
        return body.decode("utf-8"), hashlib.sha256(raw).hexdigest()
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8 (byte {body[exc.start]:#04x}); save the file as UTF-8"
        raise DatasetError(message, path=path, line=line) from None


def json_type(value: Any) -> str:
    """How a message names the JSON type of ``value``: "a string", "an object", "null"..."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def jsonl_records(text: str, path: str) -> Iterator[tuple[int, Record]]:
    """The objects of a JSONL text, one at a time, each with its line; blank lines are skipped."""
    strict = StrictJson()
    decoder = json.JSONDecoder(**strict.hooks)  # one for all lines: json.loads(..., hooks) makes one per call
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = decoder.decode(line)
        except json.JSONDecodeError as exc:
            message = f"invalid JSON: {exc.msg} (column {exc.colno})"
            raise DatasetError(message, path=path, line=number) from None
        except RecursionError:
            raise DatasetError(strict.too_deep(), path=path, line=number) from None
        strict.check(value, path, number, line)
        yield number, _object(value, path, number)


def json_records(text: str, path: str) -> Iterator[tuple[int, Record]]:
    """The elements of a JSON list, one at a time, each with the line where it starts."""
    strict = StrictJson()
    decoder = json.JSONDecoder(**strict.hooks)
    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        value = _decode(decoder, text, pos, path, strict)[0]  # raises if it is not JSON at all
        message = f"expected a JSON list of objects, got {json_type(value)}"
        raise DatasetError(message, path=path, line=_line_at(text, pos))
    pos = _skip_space(text, pos + 1)
    line, counted = 1, 0  # count newlines incrementally: rescanning from 0 is quadratic
    more = not text.startswith("]", pos)
    while more:
        value, end = _decode(decoder, text, pos, path, strict)
        line, counted = line + text.count("\n", counted, pos), pos
        strict.check(value, path, line, text, pos, end)
        yield line, _object(value, path, line)
        pos = _skip_space(text, end)
        more = text.startswith(",", pos)
        if more:  # a value must follow the comma, so "[{...},]" fails in _decode
            pos = _skip_space(text, pos + 1)
        elif not text.startswith("]", pos):
            message = "invalid JSON: expected ',' or ']' after a list element"
            raise DatasetError(message, path=path, line=_line_at(text, pos))
    rest = _skip_space(text, pos + 1)
    if rest != len(text):
        message = "invalid JSON: extra data after the list"
        raise DatasetError(message, path=path, line=_line_at(text, rest))


def _decode(decoder: json.JSONDecoder, text: str, pos: int, path: str, strict: StrictJson) -> tuple[Any, int]:
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError as exc:  # its lineno counts from the start of text
        message = f"invalid JSON: {exc.msg} (column {exc.colno})"
        raise DatasetError(message, path=path, line=exc.lineno) from None
    except RecursionError:  # nested far deeper than strict allows: named where the value starts
        raise DatasetError(strict.too_deep(), path=path, line=_line_at(text, pos)) from None


def _skip_space(text: str, pos: int) -> int:
    match = _JSON_SPACE.match(text, pos)
    return match.end() if match else pos


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _object(value: Any, path: str, line: int) -> Record:
    if not isinstance(value, dict):
        message = f"expected a JSON object, got {json_type(value)}"
        raise DatasetError(message, path=path, line=line)
    return value


def csv_table(text: str, path: str) -> tuple[list[str], Iterator[tuple[int, Record]]]:
    """The header row, read now, and the rows as records of cells, read lazily once the header is checked."""
    reader = csv.reader(io.StringIO(text, newline=""))  # newline="": cells keep line breaks
    header = _csv_row(reader, path)
    if header is None:
        raise DatasetError("empty file; a CSV dataset needs a header row", path=path)
    if not header:
        raise DatasetError("no header row: the first line is blank", path=path, line=1)
    return header, _csv_rows(reader, header, path)


def _csv_rows(reader: Any, header: list[str], path: str) -> Iterator[tuple[int, Record]]:
    while True:
        # A quoted cell can span lines, so a row starts on the line after the previous one.
        line = reader.line_num + 1
        row = _csv_row(reader, path)
        if row is None:
            return
        if not any(row):
            continue  # a blank line, or only empty cells: no record
        if len(row) > len(header):
            message = f"row has {len(row)} cells but the header has {len(header)} columns"
            raise DatasetError(message, path=path, line=line)
        yield line, {name: row[i] if i < len(row) else "" for i, name in enumerate(header)}


def _csv_row(reader: Any, path: str) -> list[str] | None:
    with _CSV_LIMIT_LOCK:
        limit = csv.field_size_limit(_CSV_CELL_LIMIT)
        try:
            return next(reader, None)
        except csv.Error as exc:
            raise DatasetError(f"invalid CSV: {exc}", path=path, line=reader.line_num) from None
        finally:
            csv.field_size_limit(limit)
