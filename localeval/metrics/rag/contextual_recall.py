"""Contextual recall: does the retrieval context hold everything the expected output says?"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.errors import MetricInputError
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import recall_score
from localeval.metrics.sentences import split_sentences
from localeval.metrics.verdicts import format_count

CHOICES = ("yes", "no")


class ContextualRecall(RagMetric):
    """The share of ``expected_output``'s sentences that ``retrieval_context`` supports.

    ``expected_output`` is split into sentences by rules, no model
    (:func:`~localeval.metrics.rag.sentences.split_sentences`), and the judge
    gives each a verdict: ``yes`` if the retrieval context supports it, else
    ``no``. Score = supported / sentences
    (:func:`~localeval.metrics.rag.scores.recall_score`). An expected output of
    only white space is a missing field, not a score.
    """

    kind = "contextual_recall"
    prompt_folder = "contextual_recall"

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("expected_output", "retrieval_context")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        sentences = split_sentences(case.expected_output or "")
        if not sentences:
            raise MetricInputError(self.display_name, "expected_output", "expected_output has no sentences")
        prompt = self.render(
            "verdicts", self.verdicts_prompt, retrieval_context=case.retrieval_context, sentences=sentences
        )
        verdicts, asked = self.judge_verdicts(judge, prompt, len(sentences), CHOICES)
        judged = [{"sentence": s, "verdict": v} for s, v in zip(sentences, verdicts.written)]
        counts = verdicts.counts(CHOICES)
        return Judgement(
            score=recall_score(verdicts.weight_of("yes")),
            summary=(f"The retrieval context supports {format_count(counts['yes'])} of {len(sentences)} "
                     "expected sentences."),
            details={"sentences": sentences, "verdicts": judged, "counts": counts, **verdicts.evidence()},
            conversation=asked,
            reason_variables={"retrieval_context": case.retrieval_context, "verdicts": judged},
        )
