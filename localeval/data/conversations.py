"""Conversations in dataset files: one conversation per JSONL line or JSON list element.

A dataset file holds test cases of one kind. Its first record decides which: a
record with ``turns``, or with ``messages`` and no ``input`` (after key mapping),
makes the file a file of conversations, read by :func:`conversation_case`. Each
record gives its turns in one of two shapes, told apart by the key:

* ``turns``: localeval's turns (:class:`~localeval.data.case.Turn`), whose keys and
  roles a file may spell its own way (:class:`TurnSpelling`, from ``fields``);
* ``messages``: a chat log in OpenAI's shape (:mod:`localeval.data.messages`).

Every problem is a one-line ``DatasetError`` naming the file, the record's line
and the field by its path inside the record as the file spells it
(``turns[2].role``, ``dialog[2].speaker``, ``messages[2].content[0]``), as for
single-turn cases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from localeval.data.case import ROLES, TURN_FIELDS, ConversationalTestCase
from localeval.data.messages import message_turns
from localeval.data.records import json_type
from localeval.data.strict_json import key_path
from localeval.errors import DatasetError

#: The record keys that hold a conversation's turns, one shape each.
TURN_KEYS = ("turns", "messages")
#: A ``fields`` target inside each turn starts so: ``turns.content``, ``turns.role=assistant``.
INTO_TURNS = "turns."

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class TurnSpelling:
    """How a file spells its turns: the ``fields`` entries whose target is inside them.

    ``speaker = "turns.role"``: each turn's key ``speaker`` is its ``role`` (in ``keys``);
    ``bot = "turns.role=assistant"``: the role the file writes ``bot`` is ``assistant`` (in ``roles``).
    """

    keys: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> TurnSpelling:
        """The spelling the entries of ``fields`` into turns say (checked by :func:`turn_target_problem`)."""
        keys: dict[str, str] = {}
        roles: dict[str, str] = {}
        for source, target in fields.items():
            if target.startswith(INTO_TURNS):
                inner, is_role, role = target.removeprefix(INTO_TURNS).partition("=")
                if is_role:
                    roles[source] = role
                else:
                    keys[source] = inner
        return cls(keys, roles)


def turn_target_problem(target: str) -> str | None:
    """What is wrong with a ``fields`` target inside turns (``turns.FIELD`` or ``turns.role=ROLE``), or None."""
    inner, is_role, role = target.removeprefix(INTO_TURNS).partition("=")
    if is_role:
        if inner != "role":
            return "only roles map to values: turns.role=ROLE"
        return None if role in ROLES else f"a role is {', '.join(map(repr, ROLES))}, not {role!r}"
    return None if inner in TURN_FIELDS else f"not a turn field ({', '.join(TURN_FIELDS)})"


def holds_conversations(record: dict[str, Any], fields: Mapping[str, str]) -> bool:
    """Whether a file whose first record is ``record`` (keys renamed by ``fields``) holds conversations.

    ``messages`` beside an ``input`` is a single-turn case's (kept in its metadata, or an error).
    """
    keys = {fields.get(key, key) for key in record}
    return "turns" in keys or ("messages" in keys and "input" not in keys)


def conversation_case(
    data: dict[str, Any], path: str, line: int, *, spelling: TurnSpelling | None = None,
    names: Mapping[str, str] | None = None, drop_unknown: bool = False,
) -> ConversationalTestCase:
    """A validated conversation from a record's fields (already renamed), or a ``DatasetError``.

    ``names``: the record's key for each field, as the file spells it (``{"turns": "dialog"}``);
    ``drop_unknown``: leave out the keys of a turn or message that are no field of it, not refuse them.
    """
    names = names or {}
    given = [key for key in TURN_KEYS if key in data]
    if len(given) > 1:
        message = f"both '{names.get('turns', 'turns')}' and this key give the turns; keep one"
        raise DatasetError(message, path=path, line=line, field=names.get("messages", "messages"))
    if not given:
        message = ("required: this file holds conversations (its first record has turns or messages), "
                   "and this record has neither")
        raise DatasetError(message, path=path, line=line, field="turns")
    key = given[0]
    name = names.get(key, key)
    value = data[key]
    if not isinstance(value, list):
        message = f"must be a list of {key} ({{\"role\": ..., \"content\": ...}}), got {json_type(value)}"
        raise DatasetError(message, path=path, line=line, field=name)
    if key == "messages":
        turns, origins = message_turns(value, name, path, line, drop_unknown=drop_unknown)
        spell = _message_path(name, origins)
    else:
        spelling = spelling or TurnSpelling()
        turns, sources = _spelled_turns(value, spelling, name, path, line, drop_unknown)
        spell = _turn_path(name, sources, {turn_field: source for source, turn_field in spelling.keys.items()})
    rest = {k: v for k, v in data.items() if k != key}
    try:
        return ConversationalTestCase.model_validate({**rest, "turns": turns})
    except ValidationError as exc:
        raise validation_error(exc, path, line, spell) from None


def _spelled_turns(
    turns: list[Any], spelling: TurnSpelling, name: str, path: str, line: int, drop_unknown: bool
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Each turn with its keys renamed to turn fields and its role to a role, and the key each field came from."""
    renamed: list[dict[str, Any]] = []
    sources: list[dict[str, str]] = []
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict):
            message = f"must be an object with role and content, got {json_type(turn)}"
            raise DatasetError(message, path=path, line=line, field=key_path((name, index)))
        fields: dict[str, Any] = {}
        source: dict[str, str] = {}
        for key, value in turn.items():
            target = spelling.keys.get(key, key)
            if target not in TURN_FIELDS:
                if drop_unknown:
                    continue
                message = (f"not a turn field ({', '.join(TURN_FIELDS)}); map it with fields ({key} = \"turns.FIELD\") "
                           "or drop unknown keys with unknown_fields = 'ignore'")
                raise DatasetError(message, path=path, line=line, field=key_path((name, index, key)))
            if target in source:
                message = f"both '{source[target]}' and '{key}' give this turn's {target}"
                raise DatasetError(message, path=path, line=line, field=key_path((name, index)))
            source[target] = key
            fields[target] = spelling.roles.get(value, value) if target == "role" and isinstance(value, str) else value
        renamed.append(fields)
        sources.append(source)
    return renamed, sources


def _message_path(name: str, origins: list[int]) -> Callable[[Loc], Loc]:
    """A path inside the turns read from messages → the message each turn came from: ``messages[3]``."""
    def spell(loc: Loc) -> Loc:
        return (name, origins[int(loc[1])]) if len(loc) > 1 else (name,)
    return spell


def _turn_path(name: str, sources: list[dict[str, str]], mapped: dict[str, str]) -> Callable[[Loc], Loc]:
    """A path inside the turns → the file's spelling of it: ``turns[2].role`` → ``dialog[2].speaker``.

    ``sources``: each turn's key for each field it has; ``mapped``: the key ``fields`` maps to a field
    (for a field the turn lacks).
    """
    def spell(loc: Loc) -> Loc:
        if len(loc) < 3:
            return (name, *loc[1:])
        index, key = int(loc[1]), str(loc[2])
        return (name, index, sources[index].get(key, mapped.get(key, key)), *loc[3:])
    return spell


def validation_error(
    exc: ValidationError, path: str, line: int, spell: Callable[[Loc], Loc] | None = None
) -> DatasetError:
    """Pydantic's first problem, the field named by its path in the record: ``turns[2].role``.

    ``spell`` turns a path inside the turns into the file's own (``dialog[2].speaker``).
    """
    first = exc.errors(include_url=False)[0]
    loc: Loc = tuple(first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "literal_error" and "input" in first:
        message += f", got {first['input']!r}"
        if loc[-1:] == ("role",) and isinstance(first["input"], str):
            message += f' (map a role of your own with fields, e.g. {first["input"]} = "turns.role=assistant")'
    if "tools_called" in loc and loc.index("tools_called") >= len(loc) - 2:  # the list, or one of its items
        message = f"must be a list of tool names or tool objects ({{\"name\": ...}}): {message}"
    if spell is not None and loc[:1] == ("turns",):
        loc = spell(loc)
    return DatasetError(message, path=path, line=line, field=key_path(loc) or None)
