"""Tool correctness: did the agent call the tools it was expected to call? No judge."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from localeval.backends.base import Backend
from localeval.data.case import TestCase, ToolCall
from localeval.metrics.agent.calls import TOOL_FIELDS
from localeval.metrics.agent.matching import (
    Matches,
    Pair,
    ParameterMatch,
    ToolField,
    calls_match,
    max_matching,
    ordered_matching,
)
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.judged import strict_requested

#: ``subset``: the expected tools must be among the calls, other calls are ignored;
#: ``exact``: the calls must be the expected tools and nothing else.
SetMatch = Literal["subset", "exact"]


def tool_correctness_score(expected: int, called: int, matched: int, match: SetMatch) -> float:
    """The score from counts (see :class:`ToolCorrectness`); nothing expected and nothing called is 1.0.

    ``subset``: matched / expected (1.0 when nothing is expected). ``exact``:
    matched / (expected + called − matched), the multiset Jaccard index of the
    expected tools and the calls (1.0 when both are empty).
    """
    if not 0 <= matched <= min(expected, called):
        raise ValueError(f"matched {matched} is not between 0 and min(expected {expected}, called {called})")
    denominator = expected if match == "subset" else expected + called - matched
    return 1.0 if denominator == 0 else matched / denominator


class ToolCorrectness(Metric):
    """The share of the expected tools that the agent called (``tools_called`` against ``expected_tools``).

    A call *matches* an expected tool when the names are equal and, for each of
    ``evaluation_params`` besides ``name``, the values agree: ``input_parameters``
    exactly, or with ``parameter_match = "subset"`` every expected parameter
    present with an equal value (the call may pass more); ``output`` exactly.
    Values compare as JSON (``1 == 1.0``, ``true != 1``). Each call stands for at
    most one expected tool, so duplicates count.

    ``matched`` is the largest number of expected tools paired one-to-one with
    matching calls; with ``ordered = true``, only pairs in the same order count
    (the longest common subsequence: the expected tools must appear, in order,
    among the calls, which may have other calls in between).

    * ``match = "subset"`` (default): score = matched / expected; calls beyond
      the expected ones do not lower it.
    * ``match = "exact"``: score = matched / (expected + called − matched); every
      unexpected call lowers it, and 1.0 means the calls are exactly the expected
      tools (in order, when ordered).

    Evidence in details: ``matched`` (expected index, call index, name),
    ``missing`` (expected tools no call matches; ``same_name_calls`` when a call
    of that name differs in what is compared), ``out_of_order`` (ordered only:
    expected tools whose matching calls came at the wrong place), ``unexpected``
    (the other calls that stand for no expected tool).

    Edge cases: nothing expected and nothing called is 1.0; nothing expected but
    something called is 1.0 with ``subset`` (nothing was required) and 0.0 with
    ``exact``; expected tools but no call is 0.0. ``strict_mode``: 1.0 only for a
    perfect score, else 0.0, threshold 1.0. Both fields must be present in the
    case; an empty list is a valid value ("no tool").
    """

    kind = "tool_correctness"
    empty_allowed = TOOL_FIELDS

    evaluation_params: tuple[ToolField, ...] = Field(
        ("name",), description="What must agree for a call to match: name, input_parameters, output."
    )
    parameter_match: ParameterMatch = Field(
        "exact", description="input_parameters: exact (the same mapping) or subset (the call may pass more)."
    )
    ordered: bool = Field(False, description="The expected tools must be called in their order.")
    match: SetMatch = Field("subset", description="subset: extra calls are ignored; exact: they lower the score.")
    strict_mode: bool = Field(False, description="Binary: only a perfect score counts; threshold 1.")

    @model_validator(mode="before")
    @classmethod
    def _strict(cls, data: Any) -> Any:
        return {**data, "threshold": 1.0} if strict_requested(data) else data

    @model_validator(mode="after")
    def _check(self) -> ToolCorrectness:
        if "name" not in self.evaluation_params:
            raise ValueError("evaluation_params must include 'name'")
        return self

    def required_fields(self) -> tuple[str, ...]:
        return ("tools_called", "expected_tools")

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        expected, called = list(case.expected_tools or ()), list(case.tools_called or ())

        def matches(e: int, c: int) -> bool:
            return calls_match(expected[e], called[c], self.evaluation_params, self.parameter_match)

        pair_up = ordered_matching if self.ordered else max_matching
        pairs = pair_up(len(expected), len(called), matches)
        raw = tool_correctness_score(len(expected), len(called), len(pairs), self.match)
        score = float(raw == 1.0) if self.strict_mode else raw
        details = {"raw_score": raw, **self._evidence(expected, called, pairs, matches)}
        return Verdict(score=score, reason=self._summary(details), details=details)

    def _evidence(
        self, expected: list[ToolCall], called: list[ToolCall], pairs: list[Pair], matches: Matches
    ) -> dict[str, Any]:
        paired_expected, paired_calls = {e for e, _ in pairs}, {c for _, c in pairs}
        free_calls = [c for c in range(len(called)) if c not in paired_calls]
        missing: list[dict[str, Any]] = []
        out_of_order: list[dict[str, Any]] = []
        misplaced: set[int] = set()
        for e in (e for e in range(len(expected)) if e not in paired_expected):
            item: dict[str, Any] = {"expected": e, "name": expected[e].name}
            at = [c for c in free_calls if matches(e, c)]
            if at:  # matching calls exist, at the wrong place (only when ordered)
                out_of_order.append({**item, "calls": at})
                misplaced.update(at)
                continue
            same_name = [c for c in free_calls if called[c].name == expected[e].name]
            missing.append({**item, **({"same_name_calls": same_name} if same_name else {})})
        return {
            "expected_count": len(expected),
            "called_count": len(called),
            "matched": [{"expected": e, "call": c, "name": expected[e].name} for e, c in pairs],
            "missing": missing,
            **({"out_of_order": out_of_order} if self.ordered else {}),
            "unexpected": [{"call": c, "name": called[c].name} for c in free_calls if c not in misplaced],
            "match": self.match,
            "ordered": self.ordered,
            "evaluation_params": list(self.evaluation_params),
        }

    def _summary(self, details: dict[str, Any]) -> str:
        matched, expected = len(details["matched"]), details["expected_count"]
        parts = [f"{matched} of {expected} expected tools called{' in order' if self.ordered else ''}"]
        for key, label in (("missing", "missing"), ("out_of_order", "out of order")):
            if details.get(key):
                parts.append(f"{label}: {', '.join(item['name'] for item in details[key])}")
        if details["unexpected"]:
            names = ", ".join(item["name"] for item in details["unexpected"])
            counted = "counted against" if self.match == "exact" else "ignored"
            parts.append(f"unexpected calls ({counted}): {names}")
        return "; ".join(parts) + "."
