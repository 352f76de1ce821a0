"""Raw records from dataset files: JSONL, JSON lists and CSV tables, each with its line.

Reading is strict: JSON that Python would accept but JSON does not hold
(``NaN``, ``Infinity``, a number that overflows to infinity) is an error naming
the key path, because the reports would write it back as null and change the
data without a word. Every problem is a ``DatasetError`` naming the file and the
line. What the records mean (test cases, conversations, human judgments) is for
the callers: :mod:`localeval.data.case_reader`, :mod:`localeval.metaeval.evaluation`.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

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
        strict.check(value, path, number)
        yield number, _object(value, path, number)


def json_records(text: str, path: str) -> Iterator[tuple[int, Record]]:
    """The elements of a JSON list, one at a time, each with the line where it starts."""
    strict = StrictJson()
    decoder = json.JSONDecoder(**strict.hooks)
    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        value = _decode(decoder, text, pos, path)[0]  # raises if it is not JSON at all
        message = f"expected a JSON list of objects, got {json_type(value)}"
        raise DatasetError(message, path=path, line=_line_at(text, pos))
    pos = _skip_space(text, pos + 1)
    line, counted = 1, 0  # count newlines incrementally: rescanning from 0 is quadratic
    more = not text.startswith("]", pos)
    while more:
        value, end = _decode(decoder, text, pos, path)
        line, counted = line + text.count("\n", counted, pos), pos
        strict.check(value, path, line)
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


def _decode(decoder: json.JSONDecoder, text: str, pos: int, path: str) -> tuple[Any, int]:
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError as exc:  # its lineno counts from the start of text
        message = f"invalid JSON: {exc.msg} (column {exc.colno})"
        raise DatasetError(message, path=path, line=exc.lineno) from None


class _NonFinite(str):
    """A number JSON cannot carry, as written: ``NaN``, ``Infinity``, ``-Infinity``, or ``1e999``.

    Python's parser reads them as floats (the last overflows to infinity), which
    the reports would then write as null: the data would change without a word.
    ``StrictJson``'s parser hooks turn them into this marker, to be rejected.
    """

    @property
    def problem(self) -> str:
        if self in ("NaN", "Infinity", "-Infinity"):
            return f"{self} is not a JSON value (JSON has no NaN or Infinity)"
        return f"{self} is too large for a number (it reads as infinity)"


class StrictJson:
    """Parser hooks that turn the numbers JSON cannot carry into ``_NonFinite`` markers.

    They count the markers, so that only a record holding one is searched for it.
    Pass ``hooks`` to ``json.loads`` or ``json.JSONDecoder``, then ``check`` each value.
    """

    def __init__(self) -> None:
        self.markers = 0
        self.hooks: dict[str, Any] = {"parse_constant": self._constant, "parse_float": self._float}

    def check(self, value: Any, path: str, line: int, prefix: str = "") -> None:
        """Raise ``DatasetError`` naming the key path of the first marker in ``value``."""
        found = _non_finite_at(value, prefix) if self.markers else None
        if found is not None:
            where, token = found
            message = f"{token.problem}; write a number, null or a string"
            raise DatasetError(message, path=path, line=line, field=where or None)

    def _constant(self, token: str) -> _NonFinite:
        self.markers += 1
        return _NonFinite(token)

    def _float(self, text: str) -> float | _NonFinite:
        value = float(text)
        return value if math.isfinite(value) else self._constant(text)


def _non_finite_at(value: Any, where: str) -> tuple[str, _NonFinite] | None:
    """The key path ("scores.coherence", "context[1]") and token of the first marker, or None."""
    if isinstance(value, _NonFinite):
        return where, value
    if isinstance(value, dict):
        items = [(f"{where}.{key}" if where else key, item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    else:
        return None
    for key, item in items:
        found = _non_finite_at(item, key)
        if found is not None:
            return found
    return None


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
    try:
        return next(reader, None)
    except csv.Error as exc:
        raise DatasetError(f"invalid CSV: {exc}", path=path, line=reader.line_num) from None
