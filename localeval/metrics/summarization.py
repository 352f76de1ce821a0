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

Judge calls per case: the questions (none with ``assessment_questions``), the
answers from the source, the answers from the summary, the claims (with
``claims = "extracted"``), the alignment verdicts, then the reason, which
continues the alignment request.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.items import ItemsMetric, ItemSource, extract, judge_verdicts, tally
from localeval.metrics.judged import Judgement, format_score
from localeval.metrics.rag.scores import TERNARY, Ternary, faithfulness_score

#: How many questions the judge writes from the source, by default.
QUESTIONS = 5
#: How many claims the judge may list from a summary (``claims = "extracted"``), by default.
MAX_CLAIMS = 10


def coverage_score(source_answers: Sequence[str], summary_answers: Sequence[str]) -> float:
    """The share of the questions the source answers "yes" that the summary answers "yes" too.

    None answered "yes" by the source: 0.0, nothing is shown to be covered.
    """
    if len(source_answers) != len(summary_answers):
        raise ValueError(f"{len(source_answers)} answers from the source, {len(summary_answers)} from the summary")
    asked = [summary for source, summary in zip(source_answers, summary_answers) if source == "yes"]
    return sum(1 for answer in asked if answer == "yes") / len(asked) if asked else 0.0


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
        source_answers, summary_answers = answers["input"], answers["actual_output"]
        claims, dropped_claims, _ = self.output_items(
            case, judge, self.claims, "claims", self.claims_prompt, self.max_claims
        )
        prompt = self.render("alignment", self.alignment_prompt, source=case.input, claims=claims)
        chosen, asked = judge_verdicts(judge, prompt, len(claims), TERNARY)
        verdicts = cast(list[Ternary], chosen)
        alignment = faithfulness_score(verdicts, idk_is_faithful=self.idk_is_aligned)
        coverage = coverage_score(source_answers, summary_answers)
        answered = sum(1 for a in source_answers if a == "yes")
        covered = sum(1 for a, b in zip(source_answers, summary_answers) if a == b == "yes")
        judged = [{"claim": c, "verdict": v} for c, v in zip(claims, verdicts)]
        return Judgement(
            score=min(alignment, coverage),
            summary=(
                f"Alignment {format_score(alignment)}: {tally(verdicts, TERNARY)['yes']} of {len(claims)} claims "
                f"supported; coverage {format_score(coverage)}: the summary answers {covered} of the {answered} "
                f"questions the source answers yes."
            ),
            details={
                "alignment_score": alignment,
                "coverage_score": coverage,
                "claims_from": self.claims,
                "verdicts": judged,
                "counts": tally(verdicts, TERNARY),
                "questions": [
                    {"question": q, "source": a, "summary": b}
                    for q, a, b in zip(questions, source_answers, summary_answers)
                ],
                "questions_from": "given" if self.assessment_questions else "judge",
                "dropped": {"questions": dropped_questions, "claims": dropped_claims},
                "idk_is_aligned": self.idk_is_aligned,
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

    def _answers(self, judge: Backend, text: str, questions: list[str]) -> list[str]:
        prompt = self.render("answers", self.answers_prompt, text=text, questions=questions)
        return judge_verdicts(judge, prompt, len(questions), TERNARY)[0]
