"""Conversations in dataset files: one conversation per JSONL line or JSON list element.

A dataset file holds test cases of one kind. Its first record decides which: a
record with ``turns`` (after key mapping) makes the file a file of
conversations, read by :func:`conversation_case`; every problem is a one-line
``DatasetError`` naming the file, the record's line and the field by its path
inside the record (``turns[2].role``), as for single-turn cases.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from localeval.data.case import ConversationalTestCase
from localeval.data.records import json_type
from localeval.errors import DatasetError


def holds_conversations(record: dict[str, Any], fields: dict[str, str]) -> bool:
    """Whether a file whose first record is ``record`` (keys renamed by ``fields``) holds conversations."""
    return any(fields.get(key, key) == "turns" for key in record)


def conversation_case(data: dict[str, Any], path: str, line: int) -> ConversationalTestCase:
    """A validated conversation from a record's fields (already renamed), or a ``DatasetError``."""
    turns = data.get("turns")
    if turns is None:
        message = "required: this file holds conversations (its first record has turns), and this record has none"
        raise DatasetError(message, path=path, line=line, field="turns")
    if not isinstance(turns, list):
        message = f"must be a list of turns ({{\"role\": ..., \"content\": ...}}), got {json_type(turns)}"
        raise DatasetError(message, path=path, line=line, field="turns")
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            message = f"must be an object with role and content, got {json_type(turn)}"
            raise DatasetError(message, path=path, line=line, field=f"turns[{index}]")
    try:
        return ConversationalTestCase.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, path, line) from None


def validation_error(exc: ValidationError, path: str, line: int) -> DatasetError:
    """Pydantic's first problem, the field named by its path in the record: ``turns[2].role``."""
    first = exc.errors(include_url=False)[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "literal_error" and "input" in first:
        message += f", got {first['input']!r}"
    loc = first["loc"]
    if "tools_called" in loc and loc.index("tools_called") >= len(loc) - 2:  # the list, or one of its items
        message = f"must be a list of tool names or tool objects ({{\"name\": ...}}): {message}"
    return DatasetError(message, path=path, line=line, field=where or None)

