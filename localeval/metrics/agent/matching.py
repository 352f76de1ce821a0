"""Pure matching of tool calls against expected tools: which call stands for which expected tool.

No I/O and no judge: :mod:`localeval.metrics.agent.tool_correctness` scores with
these functions, and they are tested with plain values.

Two tool calls *match* when their names are equal and, for each field compared
besides the name, their values agree (:func:`calls_match`). Matching is always
one-to-one: a call stands for at most one expected tool and the other way round,
so duplicates count (two expected ``search`` calls need two ``search`` calls).

* Unordered: the largest one-to-one matching (:func:`max_matching`, augmenting
  paths). Greedy pairing is not enough once parameters are compared loosely
  ("subset"), because the match relation is then not an equivalence.
* Ordered: the longest common subsequence of the expected tools and the calls
  under the match relation (:func:`ordered_matching`): the expected tools that
  appear, in their order, among the calls; other calls may come in between.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from localeval.data.case import ToolCall

#: The tool-call fields a match may compare; the name is always compared.
ToolField = Literal["name", "input_parameters", "output"]
#: How input parameters agree: ``exact``, the same mapping; ``subset``, every expected parameter
#: present in the call with an equal value (the call may pass more).
ParameterMatch = Literal["exact", "subset"]

Pair = tuple[int, int]  #: (index in the expected tools, index in the calls)


def same_value(a: Any, b: Any) -> bool:
    """JSON equality: like ``==``, except that a bool never equals a number (``True != 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return bool(a == b)


def parameters_agree(expected: dict[str, Any] | None, called: dict[str, Any] | None, how: ParameterMatch) -> bool:
    """Whether a call's input parameters agree with the expected ones (None counts as no parameters)."""
    want, got = expected or {}, called or {}
    if how == "exact":
        return same_value(want, got)
    return all(key in got and same_value(value, got[key]) for key, value in want.items())


def calls_match(
    expected: ToolCall, called: ToolCall, fields: Sequence[ToolField], parameters: ParameterMatch = "exact"
) -> bool:
    """Whether ``called`` stands for ``expected``: equal names and agreeing ``fields``."""
    if expected.name != called.name:
        return False
    if "input_parameters" in fields and not parameters_agree(expected.input_parameters, called.input_parameters,
                                                             parameters):
        return False
    return "output" not in fields or same_value(expected.output, called.output)


Matches = Callable[[int, int], bool]


def max_matching(expected_count: int, called_count: int, matches: Matches) -> list[Pair]:
    """A largest one-to-one set of (expected, called) pairs that match, sorted by expected index.

    Kuhn's augmenting paths; among the largest matchings, each expected tool takes
    the earliest call it can, so the result is deterministic.
    """
    owner: dict[int, int] = {}  # call index -> expected index

    def place(e: int, seen: set[int]) -> bool:
        for c in range(called_count):
            if c in seen or not matches(e, c):
                continue
            seen.add(c)
            if c not in owner or place(owner[c], seen):
                owner[c] = e
                return True
        return False

    for e in range(expected_count):
        place(e, set())
    return sorted((e, c) for c, e in owner.items())


def ordered_matching(expected_count: int, called_count: int, matches: Matches) -> list[Pair]:
    """The longest common subsequence of expected tools and calls under ``matches``, as pairs in order.

    Among several longest ones, the earliest expected tools are paired first, each with the earliest
    call that keeps the length: deterministic evidence of what was matched.
    """
    # length[i][j]: the longest such subsequence of expected[i:] and called[j:]
    length = [[0] * (called_count + 1) for _ in range(expected_count + 1)]
    for i in range(expected_count - 1, -1, -1):
        for j in range(called_count - 1, -1, -1):
            best = max(length[i + 1][j], length[i][j + 1])
            if matches(i, j):
                best = max(best, 1 + length[i + 1][j + 1])
            length[i][j] = best
    pairs: list[Pair] = []
    i = j = 0
    while i < expected_count and j < called_count:  # walk forward, pairing as early as possible
        if matches(i, j) and length[i][j] == 1 + length[i + 1][j + 1]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif length[i][j + 1] == length[i][j]:  # skipping this call loses nothing: keep the expected tool
            j += 1
        else:
            i += 1
    return pairs
