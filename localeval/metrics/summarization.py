"""Summarization: is the summary (``actual_output``) true to its source (``input``), and complete?

Two scores, both in ``details``; the metric's score is the smaller, so a
summary must be both faithful and complete to score well:

* **alignment**: the summary's claims (its sentences, or a list the judge
  writes) each get a verdict against the source: ``yes`` supported, ``no``
  contradicted, ``idk`` not in the source. Alignment = supported / claims, as
  deepeval's summarization counts it: a summary that adds what the source does
  not say is not aligned. With ``idk_is_aligned = true`` only contradicted claims
  count against it (the rule of faithfulness, here and in deepeval).
* **coverage**: yes/no questions about the source's main points (``questions``
  of them, written by the judge from the source, or your
  ``assessment_questions``) are answered twice, from the source and from the
  summary (``yes``/``no``/``idk``). Coverage = questions the summary answers
  ``yes`` / questions the source answers ``yes``
  (:func:`coverage_score`); 0 when the source answers none ``yes``.

Read weighted (``verdict_reading = "weighted"``), the claims' verdicts and both
sets of answers are the judge's probabilities, and the counts are expected
counts: coverage = Σ P_source(yes) · P_summary(yes) / Σ P_source(yes), the two
answers to a question read in separate requests, so taken as independent.

Judge calls per case: the questions (none with ``assessment_questions``), the
answers from the source, the answers from the summary, the claims (with
``claims = "extracted"``), the alignment verdicts, then the reason, which
continues the alignment request.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.items import ItemsMetric, ItemSource, extract
from localeval.metrics.judged import Judgement, format_score
from localeval.metrics.rag.scores import TERNARY, faithfulness_score
from localeval.metrics.verdicts import ItemVerdict, Verdicts, format_count, weight

#: How many questions the judge writes from the source, by default.
QUESTIONS = 5
#: How many claims the judge may list from a summary (``claims = "extracted"``), by default.
MAX_CLAIMS = 10


def coverage_score(source_answers: Sequence[ItemVerdict], summary_answers: Sequence[ItemVerdict]) -> float:
    """The share of the questions the source answers "yes" that the summary answers "yes" too.

    Weighted answers (each the judge's probability of each answer): Σ P_source(yes) ·
    P_summary(yes) / Σ P_source(yes). None answered "yes" by the source: 0.0, nothing is
    shown to be covered.
    """
    if len(source_answers) != len(summary_answers):
        raise ValueError(f"{len(source_answers)} answers from the source, {len(summary_answers)} from the summary")
    asked = sum(weight(source, "yes") for source in source_answers)
    covered = sum(weight(source, "yes") * weight(summary, "yes") for source, summary in zip(source_answers, summary_answers))
    return covered / asked if asked else 0.0


class Summarization(ItemsMetric):
    """min(alignment, coverage) of a summary against its source; see the module's docstring."""

    kind = "summarization"
    prompt_folder = "summarization"

    questions: int = Field(QUESTIONS, ge=1, le=20, description="How many yes/no questions the judge writes.")
    assessment_questions: list[str] | None = Field(
        None, min_length=1, description="Your own yes/no questions about the source, instead of the judge's."
    )
    claims: ItemSource = Field(
        "sentences", description="The summary's sentences (default, nothing generated), or claims the judge lists."
    )
    max_claims: int = Field(MAX_CLAIMS, ge=1, description="The most claims the judge may list (claims = 'extracted').")
    idk_is_aligned: bool = Field(
        False, description="A claim the source says nothing about counts as aligned (faithfulness's rule)."
    )
    questions_prompt: Path | None = Field(None, description="Your own prompt file for writing the questions.")
    answers_prompt: Path | None = Field(None, description="Your own prompt file for answering the questions.")
    claims_prompt: Path | None = Field(None, description="Your own prompt file for listing the claims.")
    alignment_prompt: Path | None = Field(None, description="Your own prompt file for the alignment verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        questions, dropped_questions = self._questions(case, judge)
        answers = {
            text: self._answers(judge, getattr(case, text) or "", questions) for text in ("input", "actual_output")
        }
        source, summary = answers["input"], answers["actual_output"]
        claims, dropped_claims, _ = self.output_items(
            case, judge, self.claims, "claims", self.claims_prompt, self.max_claims
        )
        prompt = self.render("alignment", self.alignment_prompt, source=case.input, claims=claims)
        verdicts, asked = self.judge_verdicts(judge, prompt, len(claims), TERNARY)
        alignment = faithfulness_score(verdicts.weights, idk_is_faithful=self.idk_is_aligned)
        coverage = coverage_score(source.weights, summary.weights)
        # The reason is told the written answers; the summary counts as the score does.
        answered = sum(1 for a in source.written if a == "yes")
        covered = sum(1 for a, b in zip(source.written, summary.written) if a == b == "yes")
        expected_answered = sum(source.weight_of("yes"))
        expected_covered = sum(a * b for a, b in zip(source.weight_of("yes"), summary.weight_of("yes")))
        judged = [{"claim": c, "verdict": v} for c, v in zip(claims, verdicts.written)]
        counts = verdicts.counts(TERNARY)
        return Judgement(
            score=min(alignment, coverage),
            summary=(
                f"Alignment {format_score(alignment)}: {format_count(counts['yes'])} of {len(claims)} claims "
                f"supported; coverage {format_score(coverage)}: the summary answers {format_count(expected_covered)} "
                f"of the {format_count(expected_answered)} questions the source answers yes."
            ),
            details={
                "alignment_score": alignment,
                "coverage_score": coverage,
                "claims_from": self.claims,
                "verdicts": judged,
                "counts": counts,
                "questions": [
                    {"question": q, "source": a, "summary": b}
                    for q, a, b in zip(questions, source.written, summary.written)
                ],
                "questions_from": "given" if self.assessment_questions else "judge",
                "dropped": {"questions": dropped_questions, "claims": dropped_claims},
                "idk_is_aligned": self.idk_is_aligned,
                **verdicts.evidence(),
                **_answer_distributions(source, summary),
            },
            conversation=asked,
            reason_variables={
                "verdicts": judged,
                "alignment": format_score(alignment),
                "coverage": format_score(coverage),
                "idk_is_aligned": self.idk_is_aligned,
                "asked": len(questions),
                "answered": answered,
                "covered": covered,
            },
        )

    def _questions(self, case: TestCase, judge: Backend) -> tuple[list[str], int]:
        """The yes/no questions about the source: the given ones, or the judge's; and how many were dropped."""
        if self.assessment_questions:
            return list(self.assessment_questions), 0
        prompt = self.render("questions", self.questions_prompt, source=case.input, max_items=self.questions)
        questions, dropped, _ = extract(judge, prompt, "questions", self.questions, min_items=self.questions)
        return questions, dropped

    def _answers(self, judge: Backend, text: str, questions: list[str]) -> Verdicts:
        prompt = self.render("answers", self.answers_prompt, text=text, questions=questions)
        return self.judge_verdicts(judge, prompt, len(questions), TERNARY)[0]


def _answer_distributions(source: Verdicts, summary: Verdicts) -> dict[str, object]:
    """Weighted: each question's answers as distributions, from the source and from the summary."""
    if not source.weighted:
        return {}
    return {"answer_distributions": {"source": source.evidence()["distributions"],
                                     "summary": summary.evidence()["distributions"]}}
