"""Exact match: 1 when the actual output equals the expected output, else 0."""

from __future__ import annotations

import re

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.base import Metric, Verdict


class ExactMatch(Metric):
    """Compares ``actual_output`` with ``expected_output`` after optional normalization.

    Both are stripped of leading and trailing whitespace first; the comparison is
    case-sensitive unless ``ignore_case``. ``normalize_whitespace`` also collapses
    every run of whitespace inside the text to one space.
    """

    kind = "exact_match"

    threshold: float = Field(1.0, ge=0.0, le=1.0)
    ignore_case: bool = False
    normalize_whitespace: bool = False

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output", "expected_output")

    def normalize(self, text: str) -> str:
        text = text.strip()
        if self.normalize_whitespace:
            text = re.sub(r"\s+", " ", text)
        return text.casefold() if self.ignore_case else text

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        actual = self.normalize(case.actual_output or "")
        expected = self.normalize(case.expected_output or "")
        if actual == expected:
            return Verdict(1.0, "The actual output matches the expected output exactly.")
        at = _first_difference(actual, expected)
        return Verdict(
            0.0,
            f"The outputs differ at character {at}: "
            f"{actual[at:at + 20]!r} where {expected[at:at + 20]!r} was expected.",
            {"first_difference": at, "actual": actual, "expected": expected},
        )


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
