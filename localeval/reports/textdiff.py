"""A word diff of two texts, for people to read: what was removed, what was added, what stayed. Pure.

The texts are cut into words, runs of punctuation and runs of whitespace, so that the spans
join back into exactly the two texts: the ``same`` and ``removed`` spans in order are the
first text, the ``same`` and ``added`` spans the second. Within a changed stretch the
removed text comes before the added text. Texts of more than :data:`MAX_TOKENS` pieces are
diffed line by line instead (``difflib`` compares sequences in quadratic time at worst).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Literal

from pydantic import BaseModel, ConfigDict

DiffOp = Literal["same", "removed", "added"]

#: Beyond this many words in either text, the diff is by lines.
MAX_TOKENS = 5000

_TOKENS = re.compile(r"\w+|\s+|[^\w\s]+")


class DiffSpan(BaseModel):
    """A stretch of text that both texts share, or that only the first (removed) or the second (added) has."""

    model_config = ConfigDict(frozen=True)

    op: DiffOp
    text: str


def word_diff(before: str, after: str) -> list[DiffSpan]:
    """The spans that turn ``before`` into ``after``; one ``same`` span when they are equal.

    Whitespace alone between two changes belongs to the change, so "[-The cat-]{+A dog+}" reads as
    one replacement rather than "[-The-]{+A+} [-cat-]{+dog+}"."""
    words_a, words_b = _TOKENS.findall(before), _TOKENS.findall(after)
    if max(len(words_a), len(words_b)) > MAX_TOKENS:
        words_a, words_b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    spans: list[DiffSpan] = []
    removed: list[str] = []
    added: list[str] = []
    opcodes = SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes()
    for number, (op, a1, a2, b1, b2) in enumerate(opcodes):
        if op != "equal":
            removed += words_a[a1:a2]
            added += words_b[b1:b2]
            continue
        shared = "".join(words_a[a1:a2])
        if (removed or added) and shared.isspace() and number < len(opcodes) - 1:
            removed.append(shared)
            added.append(shared)
            continue
        _append(spans, "removed", removed)
        _append(spans, "added", added)
        removed, added = [], []
        _append(spans, "same", [shared])
    _append(spans, "removed", removed)
    _append(spans, "added", added)
    return spans


def _append(spans: list[DiffSpan], op: DiffOp, words: list[str]) -> None:
    """Add ``words`` as a span, joined to the last span when it has the same ``op``."""
    text = "".join(words)
    if not text:
        return
    if spans and spans[-1].op == op:
        spans[-1] = DiffSpan(op=op, text=spans[-1].text + text)
    else:
        spans.append(DiffSpan(op=op, text=text))


def side(spans: list[DiffSpan], which: Literal["before", "after"]) -> str:
    """One of the two texts, joined back from the spans."""
    dropped = "added" if which == "before" else "removed"
    return "".join(span.text for span in spans if span.op != dropped)
