"""Datasets of test cases: load them from JSONL, JSON or CSV, and save them back.

A dataset holds single-turn test cases or conversations (one per record, JSONL
or JSON; see :mod:`localeval.conversations`), never both: the first record
decides.

Every case remembers where it came from ("data.jsonl:3"), and every problem is a
``DatasetError`` naming the file, the line and the field, so a user can fix a
large file without bisecting it.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import hashlib
import io
import itertools
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from localeval.case import CASE_FIELDS, CONVERSATION_FIELDS, LIST_FIELDS, Case, ConversationalTestCase, TestCase
from localeval.conversations import conversation_case, holds_conversations
from localeval.errors import DatasetError
from localeval.files import write_text_atomically

__all__ = ["Dataset", "DatasetSource", "Format", "UnknownFields", "no_records_error", "read_records"]

Format = Literal["jsonl", "json", "csv"]
UnknownFields = Literal["error", "metadata", "ignore"]
_Record = dict[str, Any]

_FORMATS: dict[str, Format] = {"jsonl": "jsonl", "json": "json", "csv": "csv"}
_EXTENSIONS: dict[str, Format] = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"
}
_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # the whitespace JSON allows between tokens
#: Why a file that reads without error holds no record, by format.
_NO_RECORDS = {"jsonl": "the file is empty", "json": "the file is an empty list",
               "csv": "the file has only its header row"}
#: Fields whose CSV cell is a JSON object: {"key": ...}.
_OBJECT_FIELDS = ("metadata", "contestants")
_JSON_TYPES = {str: "a string", int: "a number", float: "a number", bool: "a boolean",
               dict: "an object", list: "a list", type(None): "null"}


class DatasetSource(BaseModel):
    """The file a dataset was read from, as reports record it: two runs over different files differ here."""

    model_config = ConfigDict(frozen=True)

    path: str
    sha256: str


@dataclass
class Dataset:
    """Test cases, and for each the place it came from (``locations[i]`` is "file:line").

    ``source`` is the file the cases were loaded from (None for cases built in code).
    """

    cases: list[Case]
    locations: list[str]
    source: DatasetSource | None = None

    def __post_init__(self) -> None:
        if len(self.cases) != len(self.locations):
            raise ValueError("cases and locations must have the same length")

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    @property
    def conversational(self) -> bool:
        """Whether the cases are conversations (a dataset holds one kind)."""
        return bool(self.cases) and isinstance(self.cases[0], ConversationalTestCase)

    def require_cases(self, format: Format | None = None) -> None:
        """Raise ``DatasetError`` naming the file when there is no case.

        An empty file is a valid dataset (``load`` reads it, ``save`` writes it), but
        a run over it judges nothing and would report that every metric passed.
        ``format`` is the one the file was loaded with, to say why it is empty.
        """
        if self.cases:
            return
        if self.source is None:
            raise DatasetError("no test cases")
        raise no_records_error(self.source.path, format)

    @classmethod
    def from_cases(cls, cases: Iterable[Case]) -> Dataset:
        """A dataset of cases built in code; their locations are "<memory>:1", "<memory>:2", ..."""
        cases = list(cases)
        if len({type(case) for case in cases}) > 1:
            raise DatasetError("a dataset holds single-turn test cases or conversations, not both")
        return cls(cases, [f"<memory>:{i}" for i in range(1, len(cases) + 1)])

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,
        fields: Mapping[str, str] | None = None,
        list_delimiter: str = "|",
        unknown_fields: UnknownFields = "error",
    ) -> Dataset:
        """Read and validate a whole dataset file; the first invalid record raises ``DatasetError``.

        ``format`` is "jsonl" (one object per line), "json" (a list of objects) or
        "csv" (a header row, then one case per row); by default it follows the
        extension. ``fields`` renames the file's keys or columns to case fields,
        e.g. ``{"query": "input"}``. A key that is not a field is an error, goes into
        ``metadata`` or is dropped, as ``unknown_fields`` says. In CSV, list fields
        are split on ``list_delimiter``, ``metadata`` is a JSON object, and an empty
        cell means "no value". In JSON, list fields must be lists. A JSONL or JSON file
        whose first record has ``turns`` holds conversations
        (:class:`~localeval.case.ConversationalTestCase`), one per record.
        """
        name = os.fspath(path)  # as the user spelled it, for messages and locations
        fmt = _format(name, format)
        reader = _Reader(name, fmt, dict(fields or {}), list_delimiter, unknown_fields)
        reader.check_options()
        text, sha256 = _read_text(name)
        if fmt == "csv":
            header, records = _csv_table(text, reader.path)
            reader.check_columns(header)
        else:
            records = _json_records(text, reader.path) if fmt == "json" else _jsonl_records(text, reader.path)
            first = next(records, None)
            if first is not None:
                reader = dataclasses.replace(reader, conversational=holds_conversations(first[1], reader.fields))
                records = itertools.chain([first], records)
        cases: list[Case] = []
        locations = []
        for line, record in records:
            cases.append(reader.case(record, line))
            locations.append(f"{reader.path}:{line}")
        return cls(cases, locations, DatasetSource(path=name, sha256=sha256))

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,
        list_delimiter: str = "|",
    ) -> None:
        """Write the cases as JSONL, JSON or CSV (by default, by extension), atomically.

        ``load`` gives back equal cases. Where CSV cannot hold a case exactly (a tool
        with arguments, an item containing the delimiter), this raises instead.
        """
        name = os.fspath(path)
        fmt = _format(name, format)
        records = [case.model_dump(exclude_none=True, mode="json") for case in self.cases]
        if fmt == "csv" and self.conversational:
            raise DatasetError("CSV cannot hold conversations; save as JSONL or JSON", path=name)
        if fmt == "csv":
            text = _csv_text(records, name, list_delimiter)
        else:
            for record in records:  # defaults go without saying; it keeps files short
                for key in ("tags", "metadata"):
                    if not record[key]:
                        del record[key]
            if fmt == "json":
                text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
            else:
                text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        _write_atomically(name, text)


def no_records_error(path: str, format: Format | None = None, *, what: str = "test cases") -> DatasetError:
    """The error for a file of ``format`` that reads without error but holds no record."""
    return DatasetError(f"no {what} ({_NO_RECORDS[_format(path, format)]})", path=path)


def read_records(
    path: str | os.PathLike[str],
    *,
    format: Literal["jsonl", "json"] | None = None,
    limit: int | None = None,
) -> list[tuple[int, _Record]]:
    """The raw objects of a JSONL or JSON-list file, each with the line where it starts.

    Nothing is validated beyond "a JSON object": for files whose records are not
    test cases (human judgments, say). ``limit`` stops after the first ``limit``
    records, so a syntax error further on does not matter.
    """
    name = os.fspath(path)
    fmt = _format(name, format)
    if fmt == "csv":
        raise DatasetError("records are read from JSON or JSONL, not CSV", path=name)
    text, _ = _read_text(name)
    records = _json_records(text, name) if fmt == "json" else _jsonl_records(text, name)
    return list(itertools.islice(records, limit))


@dataclass(frozen=True)
class _Reader:
    """Turns one raw record of a file into a validated case, as the load options say.

    ``conversational``: the file holds conversations (its first record has turns).
    """

    path: str
    format: Format
    fields: dict[str, str]
    delimiter: str
    unknown: str
    conversational: bool = False

    @property
    def case_fields(self) -> tuple[str, ...]:
        return CONVERSATION_FIELDS if self.conversational else CASE_FIELDS

    def check_options(self) -> None:
        if self.unknown not in ("error", "metadata", "ignore"):
            raise self.error(
                f"unknown_fields must be 'error', 'metadata' or 'ignore', not {self.unknown!r}"
            )
        if not self.delimiter:
            raise self.error("list_delimiter must not be empty")
        for source, target in self.fields.items():
            if target not in CASE_FIELDS and target not in CONVERSATION_FIELDS:
                fields = ", ".join(dict.fromkeys(CASE_FIELDS + CONVERSATION_FIELDS))
                message = f"fields maps '{source}' here, but it is not a test case field or a conversation field ({fields})"
                raise self.error(message, field=target)

    def check_columns(self, header: list[str]) -> None:
        """Reject a bad header before reading any row, so the error points at the cause."""
        for number, name in enumerate(header, start=1):
            if not name:
                raise self.error(f"column {number} has no name in the header row", line=1)
        for name, count in Counter(header).items():
            if count > 1:
                raise self.error("column appears twice in the header", line=1, field=name)
        data, _ = self.map_keys(dict.fromkeys(header, ""), line=1)
        if "input" not in data:
            columns = ", ".join(header)
            message = f"required column missing (columns: {columns}); map one with fields="
            raise self.error(message, line=1, field="input")

    def case(self, record: _Record, line: int) -> Case:
        data, extra = self.map_keys(record, line)
        if self.format == "csv":
            data = {name: self.cell(name, value, line) for name, value in data.items()}
        if extra:
            data["metadata"] = self.merge_metadata(data.get("metadata", {}), extra, line)
        if self.conversational:
            return conversation_case(data, self.path, line)
        if data.get("input") is None:
            raise self.error("required, and this record has none", line=line, field="input")
        for name in LIST_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, list):
                raise self.error(f"must be a list, got {_json_type(value)}", line=line, field=name)
        try:
            return TestCase.model_validate(data)
        except ValidationError as exc:
            raise _validation_error(exc, self.path, line) from None

    def map_keys(self, record: _Record, line: int) -> tuple[_Record, _Record]:
        """Split a record into case fields (renamed) and unknown keys kept for ``metadata``."""
        data: _Record = {}
        extra: _Record = {}
        sources: dict[str, str] = {}
        for key, value in record.items():
            target = self.fields.get(key, key)
            if target not in self.case_fields:
                if target == "turns":  # a conversation in a file of single-turn cases
                    message = (
                        "this file holds single-turn test cases (its first record has no turns); "
                        "keep conversations in a file of their own"
                    )
                    raise self.error(message, line=line, field=key)
                if self.unknown == "error":
                    what = "conversation" if self.conversational else "test-case"
                    message = (
                        f"not a {what} field; map it to one (--map {key}=FIELD, or "
                        "[dataset] fields) or keep unknown keys with unknown_fields = 'metadata'"
                    )
                    raise self.error(message, line=line, field=key)
                if self.unknown == "metadata":
                    extra[key] = value
                continue
            if target in sources:
                message = f"both '{sources[target]}' and '{key}' give this field"
                raise self.error(message, line=line, field=target)
            sources[target] = key
            data[target] = value
        return data, extra

    def merge_metadata(self, metadata: Any, extra: _Record, line: int) -> Any:
        if not isinstance(metadata, dict):
            return metadata  # validation reports it
        for key in extra:
            if key in metadata:  # preferring one silently would lose the other
                raise self.error("unknown key is also a key of metadata", line=line, field=key)
        return {**metadata, **extra}

    def cell(self, name: str, value: str, line: int) -> Any:
        """A CSV cell as the value of field ``name``; an empty cell means no value.

        ``metadata`` and ``contestants`` cells hold a JSON object.
        """
        if name in LIST_FIELDS:
            items = [item.strip() for item in value.split(self.delimiter)]
            items = [item for item in items if item]
            return items if items or name == "tags" else None
        if name not in _OBJECT_FIELDS:
            return value or None
        if not value:
            return {} if name == "metadata" else None
        strict = _StrictJson()
        try:
            parsed = json.loads(value, **strict.hooks)
        except json.JSONDecodeError as exc:
            raise self.error(f"invalid JSON: {exc.msg}", line=line, field=name) from None
        strict.check(parsed, self.path, line, prefix=name)
        if not isinstance(parsed, dict):
            message = f"must be a JSON object, got {_json_type(parsed)}"
            raise self.error(message, line=line, field=name)
        return parsed

    def error(
        self, message: str, *, line: int | None = None, field: str | None = None
    ) -> DatasetError:
        return DatasetError(message, path=self.path, line=line, field=field)


def _validation_error(exc: ValidationError, path: str, line: int) -> DatasetError:
    """One line for the CLI: pydantic's first problem and where it is, without the dump."""
    first = exc.errors(include_url=False)[0]
    loc = first["loc"]
    detail = first["msg"]
    if len(loc) > 1:
        inner = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc[1:])
        detail += f" (at {loc[0]}{inner})"
    return DatasetError(detail, path=path, line=line, field=str(loc[0]) if loc else None)


def _format(path: str, format: str | None) -> Format:
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


def _read_text(path: str) -> tuple[str, str]:
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


def _jsonl_records(text: str, path: str) -> Iterator[tuple[int, _Record]]:
    strict = _StrictJson()
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


def _json_records(text: str, path: str) -> Iterator[tuple[int, _Record]]:
    """The elements of a JSON list, one at a time, each with the line where it starts."""
    strict = _StrictJson()
    decoder = json.JSONDecoder(**strict.hooks)
    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        value = _decode(decoder, text, pos, path)[0]  # raises if it is not JSON at all
        message = f"expected a JSON list of objects, got {_json_type(value)}"
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
    ``_StrictJson``'s parser hooks turn them into this marker, to be rejected.
    """

    @property
    def problem(self) -> str:
        if self in ("NaN", "Infinity", "-Infinity"):
            return f"{self} is not a JSON value (JSON has no NaN or Infinity)"
        return f"{self} is too large for a number (it reads as infinity)"


class _StrictJson:
    """Parser hooks that turn the numbers JSON cannot carry into ``_NonFinite`` markers.

    They count the markers, so that only a record holding one is searched for it.
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


def _object(value: Any, path: str, line: int) -> _Record:
    if not isinstance(value, dict):
        message = f"expected a JSON object, got {_json_type(value)}"
        raise DatasetError(message, path=path, line=line)
    return value


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _csv_table(text: str, path: str) -> tuple[list[str], Iterator[tuple[int, _Record]]]:
    """The header row, read now, and the rows, read lazily once the header is checked."""
    reader = csv.reader(io.StringIO(text, newline=""))  # newline="": cells keep line breaks
    header = _csv_row(reader, path)
    if header is None:
        raise DatasetError("empty file; a CSV dataset needs a header row", path=path)
    if not header:
        raise DatasetError("no header row: the first line is blank", path=path, line=1)
    return header, _csv_rows(reader, header, path)


def _csv_rows(reader: Any, header: list[str], path: str) -> Iterator[tuple[int, _Record]]:
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


def _csv_text(records: list[_Record], path: str, delimiter: str) -> str:
    if not delimiter:
        raise DatasetError("list_delimiter must not be empty", path=path)
    for number, record in enumerate(records, start=1):
        for name, value in record.items():
            loss = _csv_loss(name, value, delimiter)
            if loss:
                message = f"case {number}: CSV cannot hold {loss} losslessly; save as JSONL"
                raise DatasetError(message, path=path, field=name)
    columns = [name for name in CASE_FIELDS if name == "input" or any(r.get(name) for r in records)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow([_csv_cell(record.get(name), delimiter) for name in columns])
    return out.getvalue()


def _csv_loss(name: str, value: Any, delimiter: str) -> str | None:
    """What of this value a CSV file would lose (see ``_Reader.cell``), or None."""
    if value == "":
        return "an empty string (it loads as no value)"
    if value == [] and name != "tags":
        return "an empty list (it loads as no value)"
    if name == "metadata" or not isinstance(value, list):
        return None
    for item in value:
        if isinstance(item, dict):  # a tool call: CSV holds its name only
            if any(v is not None for k, v in item.items() if k != "name"):
                return f"tool '{item['name']}', which has more than a name,"
            item = item["name"]
        if delimiter in item:
            return f"the item {item!r}, which contains the list delimiter {delimiter!r},"
        if not item or item != item.strip():
            return f"the item {item!r} (items are stripped on load)"
    return None


def _csv_cell(value: Any, delimiter: str) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False) if value else ""
    if isinstance(value, list):
        return delimiter.join(item["name"] if isinstance(item, dict) else item for item in value)
    return str(value)


def _write_atomically(name: str, text: str) -> None:
    """Write ``text`` atomically; a failure is a ``DatasetError`` naming the file."""
    path = Path(name)
    if path.is_dir():
        raise DatasetError("is a directory", path=name)
    try:
        write_text_atomically(path, text)
    except OSError as exc:
        raise DatasetError(f"cannot write: {exc.strerror}", path=name) from exc
