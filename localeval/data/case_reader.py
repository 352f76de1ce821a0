"""Test cases from raw records: keys renamed to case fields, CSV cells parsed, validated.

A :class:`CaseReader` holds the options a dataset is loaded with and turns each
record of :mod:`localeval.data.records` into a :class:`~localeval.data.case.TestCase` or, in
a file of conversations, a :class:`~localeval.data.case.ConversationalTestCase` (see
:mod:`localeval.data.conversations`). Every problem is one ``DatasetError`` naming the
file, the line and the field.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from pydantic import ValidationError

from localeval.data.case import CASE_FIELDS, CONVERSATION_FIELDS, LIST_FIELDS, Case, TestCase
from localeval.data.conversations import INTO_TURNS, TurnSpelling, conversation_case, turn_target_problem
from localeval.data.records import Format, Record, StrictJson, json_type
from localeval.errors import DatasetError, did_you_mean, known_names

__all__ = ["CaseReader", "UnknownFields"]

UnknownFields = Literal["error", "metadata", "ignore"]
#: Fields whose CSV cell is a JSON object: {"key": ...}.
_OBJECT_FIELDS = ("metadata", "contestants")


@dataclass(frozen=True)
class CaseReader:
    """Turns one raw record of a file into a validated case, as the load options say.

    ``fields`` renames keys to case fields (and, in a file of conversations, keys and roles inside
    each turn: ``speaker = "turns.role"``, ``bot = "turns.role=assistant"``), ``delimiter`` splits CSV list cells,
    ``unknown`` is what to do with a key that is no field (an ``UnknownFields``).
    ``conversational``: the file holds conversations (its first record has turns, or messages and no input).
    """

    path: str
    format: Format
    fields: dict[str, str]
    delimiter: str
    unknown: str
    conversational: bool = False

    @property
    def case_fields(self) -> tuple[str, ...]:
        # A conversation's turns come as localeval's turns or as OpenAI-style messages.
        return (*CONVERSATION_FIELDS, "messages") if self.conversational else CASE_FIELDS

    @cached_property
    def record_fields(self) -> dict[str, str]:
        """The entries of ``fields`` that rename a record's own keys (the rest reach inside turns)."""
        return {source: target for source, target in self.fields.items() if not target.startswith(INTO_TURNS)}

    @cached_property
    def turn_spelling(self) -> TurnSpelling:
        """The entries of ``fields`` that reach inside each turn."""
        return TurnSpelling.of(self.fields)

    def check_options(self) -> None:
        """Reject bad load options before the file is read."""
        if self.unknown not in ("error", "metadata", "ignore"):
            raise self.error(
                f"unknown_fields must be 'error', 'metadata' or 'ignore', not {self.unknown!r}"
            )
        if not self.delimiter:
            raise self.error("list_delimiter must not be empty")
        for source, target in self.fields.items():
            if target.startswith(INTO_TURNS):
                problem = turn_target_problem(target)
                if problem:
                    raise self.error(f"fields maps '{source}' here: {problem}", field=target)
            elif target not in CASE_FIELDS and target not in CONVERSATION_FIELDS and target != "messages":
                known = known_names(target, CASE_FIELDS + CONVERSATION_FIELDS)
                message = f"fields maps '{source}' here, but it is not a test case field or a conversation field ({known})"
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

    def case(self, record: Record, line: int) -> Case:
        """The validated case of ``record``, which starts on ``line``."""
        data, extra = self.map_keys(record, line)
        if self.format == "csv":
            data = {name: self.cell(name, value, line) for name, value in data.items()}
        if extra:
            data["metadata"] = self.merge_metadata(data.get("metadata", {}), extra, line)
        if self.conversational:
            names = {self.record_fields.get(key, key): key for key in record}
            return conversation_case(data, self.path, line, spelling=self.turn_spelling, names=names,
                                     drop_unknown=self.unknown == "ignore")
        if data.get("input") is None:
            raise self.error("required, and this record has none", line=line, field="input")
        for name in LIST_FIELDS:
            value = data.get(name)
            if value is not None and not isinstance(value, list):
                raise self.error(f"must be a list, got {json_type(value)}", line=line, field=name)
        try:
            return TestCase.model_validate(data)
        except ValidationError as exc:
            raise _validation_error(exc, self.path, line) from None

    def map_keys(self, record: Record, line: int) -> tuple[Record, Record]:
        """Split a record into case fields (renamed) and unknown keys kept for ``metadata``."""
        data: Record = {}
        extra: Record = {}
        sources: dict[str, str] = {}
        fields = self.record_fields
        for key, value in record.items():
            target = fields.get(key, key)
            if target not in self.case_fields:
                if target == "turns":  # a conversation in a file of single-turn cases
                    message = (
                        "this file holds single-turn test cases (its first record has no turns); "
                        "keep conversations in a file of their own"
                    )
                    raise self.error(message, line=line, field=key)
                if self.unknown == "error":
                    what = "conversation" if self.conversational else "test-case"
                    guess = did_you_mean(key, self.case_fields)
                    message = (
                        f"not a {what} field{f' ({guess})' if guess else ''}; map it to one (--map {key}=FIELD, or "
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

    def merge_metadata(self, metadata: Any, extra: Record, line: int) -> Any:
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
        strict = StrictJson()
        try:
            parsed = json.loads(value, **strict.hooks)
        except json.JSONDecodeError as exc:
            raise self.error(f"invalid JSON: {exc.msg}", line=line, field=name) from None
        except RecursionError:
            raise self.error(strict.too_deep(), line=line, field=name) from None
        strict.check(parsed, self.path, line, value, prefix=name, level=2)  # the record's field: level 2
        if not isinstance(parsed, dict):
            message = f"must be a JSON object, got {json_type(parsed)}"
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
