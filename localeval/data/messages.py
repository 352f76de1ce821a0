"""Chat logs in OpenAI's shape as a conversation's turns: ``{"messages": [{"role": ..., "content": ...}, ...]}``.

A record whose key is ``messages`` (after key mapping) holds the Chat Completions messages as they
were sent and received; :func:`message_turns` reads them into the turns of a
:class:`~localeval.data.case.ConversationalTestCase`:

* ``system`` (and ``developer``, its newer name) messages are system turns, ``user`` and ``assistant``
  messages user and assistant turns, each in place;
* ``content`` is a string, or a list of content parts whose text parts are joined with a newline; a
  part that is not text (an image, audio, a file) is refused, naming it: the judge reads text only;
* an assistant message's ``tool_calls`` become its turn's ``tools_called`` (the function's name, its
  JSON ``arguments`` as ``input_parameters``), and a ``tool`` message the ``output`` of the call its
  ``tool_call_id`` names: a tool message is no turn. An assistant message with tool calls and no text
  is no turn either: its calls belong to the next assistant message with text, the reply they led
  to, or, when the user speaks (or the log ends) first, to an assistant turn with empty content;
* a message's ``name`` and ``annotations`` say nothing the judge reads and are left out; any other
  key is an error, unless ``unknown_fields = "ignore"``.

Every problem is a ``DatasetError`` naming the file, the line and the field by its path in the
record, as the file spells it: ``messages[2].content[0]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from localeval.data.records import json_type
from localeval.data.strict_json import StrictJson, key_path
from localeval.errors import DatasetError

__all__ = ["message_turns"]

#: A message's role → the role of its turn; ``tool`` messages are read into the calls they answer.
TURN_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
#: Keys a message may have that say nothing the judge reads: who spoke by name, a reply's citations.
_UNREAD = ("name", "annotations")
#: Keys a message may have only empty: what they would hold cannot reach the judge.
_UNSUPPORTED = {
    "audio": "audio replies are not supported: the judge reads text",
    "function_call": "function_call (the older form of tool_calls) is not supported; log tool_calls",
}
_KEYS = ("role", "content", "tool_calls", "tool_call_id", "refusal", *_UNREAD, *_UNSUPPORTED)
#: Keys that belong on one role's messages only.
_ONLY_ON = {"tool_calls": "assistant", "tool_call_id": "tool"}
#: Content-part types that hold text, and the key that holds it.
_TEXT_PARTS = {"text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal"}
#: Content-part types that do not, by what they hold.
_OTHER_PARTS = {"image_url": "image", "input_image": "image", "image": "image", "input_audio": "audio",
                "audio": "audio", "file": "file", "input_file": "file"}
#: How deep a tool call's arguments sit in a record: record, messages, message, tool_calls, call, function.
_ARGUMENTS_LEVEL = 7


def message_turns(
    messages: list[Any], name: str, path: str, line: int, *, drop_unknown: bool = False
) -> tuple[list[dict[str, Any]], list[int]]:
    """The turns ``messages`` make, and for each turn the index of the message it comes from.

    ``name``: the record's key that holds the messages, as the file spells it (errors name it);
    ``drop_unknown``: leave out the keys a message should not have instead of refusing them.
    """
    reading = _Reading(name, path, line, drop_unknown)
    for index, message in enumerate(messages):
        reading.take(index, message)
    reading.close_pending()
    return reading.turns, reading.origins


@dataclass
class _Reading:
    """The turns read so far, the tool calls waiting for a reply with text, and every call by its id."""

    name: str
    path: str
    line: int
    drop_unknown: bool
    turns: list[dict[str, Any]] = field(default_factory=list)
    origins: list[int] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    pending_from: int = 0
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)

    def error(self, message: str, *keys: str | int) -> DatasetError:
        return DatasetError(message, path=self.path, line=self.line, field=key_path((self.name, *keys)))

    def take(self, index: int, message: Any) -> None:
        if not isinstance(message, dict):
            raise self.error(f"must be a message object with role and content, got {json_type(message)}", index)
        role = message.get("role")
        if role not in (*TURN_ROLES, "tool"):
            shown = "is missing" if role is None else f"got {role!r}"
            raise self.error(f"must be 'system', 'developer', 'user', 'assistant' or 'tool'; {shown}", index, "role")
        self.check_keys(index, message, role)
        if role == "tool":
            self.answer(index, message)
        elif role == "assistant":
            self.reply(index, message)
        else:
            if role == "user":
                self.close_pending()
            text = self.text(message.get("content"), index)
            if text is None:
                raise self.error(f"required: a {role} message needs content", index, "content")
            self.add(index, {"role": TURN_ROLES[role], "content": text})

    def check_keys(self, index: int, message: dict[str, Any], role: str) -> None:
        for key, value in message.items():
            if key not in _KEYS:
                if self.drop_unknown:
                    continue
                known = ", ".join(_KEYS[:5])
                raise self.error(
                    f"not a key of a chat message ({known}); drop unknown keys with unknown_fields = 'ignore'",
                    index, key)
            if key in _UNSUPPORTED and value not in (None, {}, []):
                raise self.error(_UNSUPPORTED[key], index, key)
            if key in _ONLY_ON and _ONLY_ON[key] != role and value is not None:
                raise self.error(f"belongs on {_ONLY_ON[key]} messages; this message's role is {role!r}", index, key)

    def reply(self, index: int, message: dict[str, Any]) -> None:
        """An assistant message: a turn when it has text; tool calls alone wait for the reply with text."""
        text = self.text(message.get("content"), index) or ""
        refusal = message.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            raise self.error(f"must be a string, got {json_type(refusal)}", index, "refusal")
        text = text or refusal or ""
        calls = self.tool_calls(message.get("tool_calls"), index)
        if not text and calls:
            self.pending_from = index if not self.pending else self.pending_from
            self.pending.extend(calls)
            return
        tools = [*self.pending, *calls]
        self.pending = []
        self.add(index, {"role": "assistant", "content": text, **({"tools_called": tools} if tools else {})})

    def close_pending(self) -> None:
        """Tool calls no reply with text followed: an assistant turn of their own, with empty content."""
        if self.pending:
            self.add(self.pending_from, {"role": "assistant", "content": "", "tools_called": self.pending})
            self.pending = []

    def add(self, index: int, turn: dict[str, Any]) -> None:
        self.turns.append(turn)
        self.origins.append(index)

    def answer(self, index: int, message: dict[str, Any]) -> None:
        """A tool message: the output of the call its ``tool_call_id`` names."""
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str):
            shown = "it is missing" if call_id is None else f"got {json_type(call_id)}"
            raise self.error(f"required: the id of the tool call this message answers; {shown}", index, "tool_call_id")
        call = self.calls.get(call_id)
        if call is None:
            raise self.error(f"no earlier assistant message has a tool call with id {call_id!r}", index, "tool_call_id")
        if "output" in call:
            raise self.error(f"a second answer to tool call {call_id!r}", index, "tool_call_id")
        output = self.text(message.get("content"), index)
        if output is None:
            raise self.error("required: what the tool returned", index, "content")
        call["output"] = output

    def text(self, content: Any, index: int) -> str | None:
        """A message's content as text: a string, or its text parts joined with a newline; None for null."""
        if content is None or isinstance(content, str):
            return content
        if not isinstance(content, list):
            raise self.error(f"must be a string or a list of content parts, got {json_type(content)}", index, "content")
        return "\n".join(self.part_text(part, index, at) for at, part in enumerate(content))

    def part_text(self, part: Any, index: int, at: int) -> str:
        where = (index, "content", at)
        if not isinstance(part, dict):
            raise self.error(f'must be a content part ({{"type": "text", "text": ...}}), got {json_type(part)}', *where)
        kind = part.get("type")
        if kind in _OTHER_PARTS:
            raise self.error(f"{_OTHER_PARTS[kind]} parts are not supported: the judge reads text", *where)
        if kind not in _TEXT_PARTS:
            raise self.error(f"{kind!r} parts are not supported: only text parts (\"type\": \"text\")", *where)
        text = part.get(_TEXT_PARTS[kind])
        if not isinstance(text, str):
            raise self.error(f"must be a string, got {json_type(text)}", *where, _TEXT_PARTS[kind])
        return text

    def tool_calls(self, value: Any, index: int) -> list[dict[str, Any]]:
        """An assistant message's ``tool_calls`` as tools called, each kept by its id for the tool messages."""
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(f"must be a list of tool calls, got {json_type(value)}", index, "tool_calls")
        return [self.tool_call(call, (index, "tool_calls", at)) for at, call in enumerate(value)]

    def tool_call(self, call: Any, where: tuple[int, str, int]) -> dict[str, Any]:
        if not isinstance(call, dict):
            shape = '{"id": ..., "function": {"name": ..., "arguments": ...}}'
            raise self.error(f"must be a tool call object ({shape}), got {json_type(call)}", *where)
        kind = call.get("type", "function")
        if kind != "function":
            raise self.error(f"only function tool calls are supported, got {kind!r}", *where, "type")
        function = call.get("function")
        if not isinstance(function, dict):
            raise self.error("required: an object with the function's name and arguments", *where, "function")
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            raise self.error("required: the function's name, a string", *where, "function", "name")
        tool: dict[str, Any] = {"name": name}
        arguments = self.arguments(function.get("arguments"), (*where, "function", "arguments"))
        if arguments is not None:
            tool["input_parameters"] = arguments
        call_id = call.get("id")
        if call_id is not None:
            if not isinstance(call_id, str) or call_id in self.calls:
                problem = "another tool call has this id" if call_id in self.calls else f"got {json_type(call_id)}"
                raise self.error(f"must be a string that names one tool call; {problem}", *where, "id")
            self.calls[call_id] = tool
        return tool

    def arguments(self, value: Any, where: tuple[str | int, ...]) -> dict[str, Any] | None:
        """A call's arguments: a JSON object, or a string holding one (as the API sends them); none: None."""
        if value is None or value == "":
            return None
        if isinstance(value, str):
            strict = StrictJson()
            try:
                parsed = json.loads(value, **strict.hooks)
            except json.JSONDecodeError as exc:
                raise self.error(f"invalid JSON: {exc.msg}", *where) from None
            except RecursionError:
                raise self.error(strict.too_deep(), *where) from None
            strict.check(parsed, self.path, self.line, value, prefix=key_path((self.name, *where)),
                         level=_ARGUMENTS_LEVEL)
            value = parsed
        if not isinstance(value, dict):
            raise self.error(f"must be a JSON object, or a string holding one; got {json_type(value)}", *where)
        return value
