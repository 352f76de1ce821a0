"""Strict JSON: what Python's parser would read silently, but localeval could not keep or write back.

Python's :mod:`json` accepts more than it can give back unchanged, and each of these is refused, with
the key path where it is (``metadata.runs[1]``):

* ``NaN``, ``Infinity`` and numbers that overflow to infinity: a report writes them as null;
* a key given twice in one object: the parser keeps the last value and drops the first;
* a lone surrogate (``"\\ud800"``, an escape JSON allows): no UTF-8 file, so no report, can hold it;
* containers nested deeper than :data:`MAX_DEPTH`: the writers give up further down (pydantic's JSON
  parser, which reads a resumed run's journal, near 200 levels; its serializer, which writes every
  report, near 255; Python's parser raises ``RecursionError`` near 1,000).

The parser hooks of :class:`StrictJson` mark the first two as they are read; the text read tells
cheaply whether the last two can be there. Only a value that may hold a problem is searched, so
valid input costs one hook call per object. Callers say which line a problem is reported at: a
record's first line (:mod:`localeval.data.records`), or the problem's own line in a whole document
(:func:`json_document`: a schema file, a report).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from localeval.errors import DatasetError

__all__ = ["MAX_DEPTH", "REPORT_DEPTH", "StrictJson", "json_document", "key_path"]

#: How deep a record may nest objects and lists, the record itself counted as level 1. Real data
#: rarely passes ten; a run's files hold a record a few levels down, and every writer must take it.
MAX_DEPTH = 64
#: How deep a report may nest: a record sits four levels down in it (report, cases, a case, inputs),
#: a metric's details and the config's options about as deep; the rest is margin.
REPORT_DEPTH = MAX_DEPTH + 16

#: An escape of a UTF-16 surrogate (a half of a pair, or a lone one): the only way a surrogate gets
#: into text that was decoded from UTF-8.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: A surrogate left in a decoded string: the parser joins a well-formed pair into one character.
_SURROGATE = re.compile("[\ud800-\udfff]")
_REPEATED = "the key appears twice in one object, and the first value would be dropped without a word; keep one"
_DEEP = "nested deeper than {limit} levels (objects and lists inside one another), which the reports could not write back"
#: The tokens that matter to nesting: a whole string (skipped), an opening or a closing bracket.
_NESTING_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', re.DOTALL)


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


class _Repeated(dict[str, Any]):
    """An object that gave ``key`` twice (the parser's dict keeps the last value): a marker, to be rejected."""

    def __init__(self, pairs: list[tuple[str, Any]], key: str) -> None:
        super().__init__(pairs)
        self.key = key


class StrictJson:
    """Parser hooks that mark what JSON cannot carry faithfully, and ``check``, which finds the first mark.

    Pass ``hooks`` to ``json.loads`` or ``json.JSONDecoder``, then ``check`` each value with the text it
    was read from. The hooks count their marks, so that a value without any is searched only when its
    text may hold a lone surrogate or nest too deep. ``max_depth`` is the deepest nesting allowed.
    """

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        self.max_depth = max_depth
        self.markers = 0
        self.hooks: dict[str, Any] = {
            "parse_constant": self._constant, "parse_float": self._float, "object_pairs_hook": self._object,
        }

    def check(self, value: Any, path: str, line: int, source: str = "", start: int = 0, end: int | None = None,
              prefix: str = "", level: int = 1) -> None:
        """Raise ``DatasetError`` at ``line`` naming the key path of the first problem in ``value``.

        ``source[start:end]`` is the text ``value`` was read from; ``prefix`` is the key path of
        ``value`` itself, ``level`` its depth (1: a record; 2: a field of one, such as a CSV cell).
        """
        found = self.find(value, source, start, end, (prefix,) if prefix else (), level)
        if found is not None:
            keys, message = found
            raise DatasetError(message, path=path, line=line, field=key_path(keys) or None)

    def find(self, value: Any, source: str, start: int = 0, end: int | None = None,
             keys: tuple[str | int, ...] = (), level: int = 1) -> tuple[tuple[str | int, ...], str] | None:
        """The key path (as parts) and the problem of the first thing in ``value`` that cannot be kept, or None."""
        end = len(source) if end is None else end
        if (self.markers or _SURROGATE_ESCAPE.search(source, start, end)
                or source.count("{", start, end) + source.count("[", start, end) > self.max_depth - level):
            return _problem_at(value, keys, level, self.max_depth)
        return None

    def too_deep(self) -> str:
        """The problem of a value nested too deep: for one Python's parser could not even read."""
        return _DEEP.format(limit=self.max_depth)

    def _constant(self, token: str) -> _NonFinite:
        self.markers += 1
        return _NonFinite(token)

    def _float(self, text: str) -> float | _NonFinite:
        value = float(text)
        return value if math.isfinite(value) else self._constant(text)

    def _object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        self.markers += 1
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                return _Repeated(pairs, key)
            seen.add(key)
        return value  # not reached: fewer keys than pairs means one was seen twice


def json_document(text: str, path: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value that is the whole of ``text`` (a schema file, a report), read strictly.

    A problem :class:`StrictJson` finds is a ``DatasetError`` naming the line where it is and its key
    path. A syntax error is ``json.JSONDecodeError``, for the caller to word.
    """
    strict = StrictJson(max_depth)
    try:
        value = json.JSONDecoder(**strict.hooks).decode(text)
    except RecursionError:
        raise DatasetError(strict.too_deep(), path=path, line=_deep_line(text, max_depth)) from None
    found = strict.find(value, text)
    if found is not None:
        keys, message = found
        line = _deep_line(text, max_depth) if message == strict.too_deep() else _line_of(text, keys)
        raise DatasetError(message, path=path, line=line, field=key_path(keys) or None)
    return value


def key_path(keys: tuple[str | int, ...]) -> str:
    """Parts of a key path as messages show them: ``turns[2].role``, a key's surrogates escaped."""
    text = ""
    for key in keys:
        if isinstance(key, int):
            text += f"[{key}]"
        else:
            shown = key.encode("utf-8", "backslashreplace").decode("utf-8") if _SURROGATE.search(key) else key
            text += f".{shown}" if text else shown
    return text


def _problem_at(value: Any, keys: tuple[str | int, ...], level: int, limit: int
                ) -> tuple[tuple[str | int, ...], str] | None:
    """The key path and the problem of the first thing in ``value``, at ``keys`` and depth ``level``.

    Nesting too deep is named by the path's first part: the whole path would be dozens of keys.
    """
    if isinstance(value, _NonFinite):
        return keys, f"{value.problem}; write a number, null or a string"
    if isinstance(value, str):
        return (keys, _surrogate_problem(value)) if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        items: Iterable[tuple[str | int, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    if level > limit:
        return keys[:1], _DEEP.format(limit=limit)
    if isinstance(value, _Repeated):
        return (*keys, value.key), _REPEATED
    for key, item in items:
        if isinstance(key, str) and _SURROGATE.search(key):
            return (*keys, key), "the key " + _surrogate_problem(key)
        found = _problem_at(item, (*keys, key), level + 1, limit)
        if found is not None:
            return found
    return None


def _surrogate_problem(text: str) -> str:
    match = _SURROGATE.search(text)
    code = f"\\u{ord(match.group()):04x}" if match else ""
    return (f"holds a lone surrogate {code} (half of a UTF-16 pair), which UTF-8 cannot hold, so no report "
            "could be written; give the whole pair, or the character itself")


def _line_of(text: str, keys: tuple[str | int, ...]) -> int:
    """The line in ``text`` (one JSON value) where the value at key path ``keys`` is: its key's line, for a
    key in an object, of the last occurrence when the key is given twice (the one that would win)."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    mark = pos
    for key in keys:
        found = None
        opening = text[pos]
        pos = _skip(text, pos + 1)
        index = 0
        while text[pos] not in "]}":
            here = pos
            if opening == "{":
                name, pos = decoder.raw_decode(text, pos)
                pos = _skip(text, _skip(text, pos) + 1)  # past the colon
            else:
                name = index
            if name == key:
                found, mark = pos, here
            pos = _skip(text, decoder.raw_decode(text, pos)[1])
            pos = _skip(text, pos + 1) if text[pos] == "," else pos
            index += 1
        if found is None:
            break
        pos = found
    return text.count("\n", 0, mark) + 1


def _deep_line(text: str, limit: int) -> int:
    """The line where ``text`` first opens an object or a list deeper than ``limit`` levels."""
    depth = 0
    for token in _NESTING_TOKENS.finditer(text):
        if token.group() in ("[", "{"):
            depth += 1
            if depth > limit:
                return text.count("\n", 0, token.start()) + 1
        elif token.group() in ("]", "}"):
            depth -= 1
    return 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos
