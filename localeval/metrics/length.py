"""Output length: a baseline for meta-evaluation, not a quality measure."""

from __future__ import annotations

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.base import Metric, Verdict


class OutputLength(Metric):
    """The number of whitespace-separated words of ``actual_output``.

    A baseline: a judge whose agreement with human scores is no better than
    length's has learned nothing about quality. ``details["raw_score"]`` is the
    word count; the score is ``min(1, words / max_words)``. The threshold is 0, so
    it always passes: it says nothing about whether an output is good.
    """

    kind = "output_length"

    threshold: float = Field(0.0, ge=0.0, le=1.0)
    max_words: int = Field(1000, ge=1, description="The word count that scores 1.")

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output",)

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        words = len((case.actual_output or "").split())
        return Verdict(
            score=min(1.0, words / self.max_words),
            reason=f"{words} words.",
            details={"raw_score": words, "max_words": self.max_words},
        )
