"""Hallucination: does the output contradict the ground-truth context? Lower is better."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import hallucination_score
from localeval.metrics.verdicts import format_count

CHOICES = ("agrees", "contradicts")


class Hallucination(RagMetric):
    """The share of ``context`` items that ``actual_output`` contradicts. Lower is better.

    The judge gives each context item a verdict: ``agrees`` or ``contradicts``
    (an item the output does not touch agrees). Score = contradicted / items
    (:func:`~localeval.metrics.rag.scores.hallucination_score`); it passes when
    score <= threshold. In strict mode the score is 0.0 when nothing is
    contradicted, else 1.0, and the threshold is 0.0.
    """

    kind = "hallucination"
    prompt_folder = "hallucination"
    lower_is_better = True

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output", "context")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        context = list(case.context or ())
        prompt = self.render("verdicts", self.verdicts_prompt, actual_output=case.actual_output, context=context)
        verdicts, asked = self.judge_verdicts(judge, prompt, len(context), CHOICES)
        judged = [{"context": c, "verdict": v} for c, v in zip(context, verdicts.written)]
        counts = verdicts.counts(CHOICES)
        return Judgement(
            score=hallucination_score(verdicts.weight_of("contradicts")),
            summary=f"The output contradicts {format_count(counts['contradicts'])} of {len(context)} context items.",
            details={"verdicts": judged, "counts": counts, **verdicts.evidence()},
            conversation=asked,
            reason_variables={"actual_output": case.actual_output, "verdicts": judged},
        )
