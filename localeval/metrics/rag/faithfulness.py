"""Faithfulness: does the output keep to what the retrieval context says?"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pydantic import Field

from localeval.backends.base import Backend
from localeval.case import TestCase
from localeval.metrics.rag.base import (
    Judgement,
    RagMetric,
    extract,
    judge_verdicts,
    tally,
)
from localeval.metrics.rag.scores import TERNARY, Ternary, faithfulness_score

#: How many claims the judge may extract from an output, by default.
MAX_CLAIMS = 10
#: The most truths the judge may extract from the retrieval context when no limit is set.
MAX_TRUTHS = 16


class Faithfulness(RagMetric):
    """The share of the output's claims that the retrieval context does not contradict.

    The judge lists the truths of ``retrieval_context`` (at most
    ``truths_extraction_limit``, else :data:`MAX_TRUTHS`) and the claims of
    ``actual_output`` (at most ``max_claims``), then gives each claim a
    verdict against the truths: ``yes`` (agrees), ``no`` (contradicted) or
    ``idk`` (the truths say nothing about it). Score = claims not contradicted /
    claims; with ``idk_is_faithful = false``, an ``idk`` claim counts as
    unfaithful too (:func:`~localeval.metrics.rag.scores.faithfulness_score`).
    """

    kind = "faithfulness"
    prompt_folder = "faithfulness"

    truths_extraction_limit: int | None = Field(
        None, ge=1, description="The most truths to extract from the retrieval context (the most important)."
    )
    max_claims: int = Field(MAX_CLAIMS, ge=1, description="The most claims to extract from the output.")
    idk_is_faithful: bool = Field(
        True, description="A claim the context says nothing about counts as faithful; false is stricter."
    )
    truths_prompt: Path | None = Field(None, description="Your own prompt file for the truths.")
    claims_prompt: Path | None = Field(None, description="Your own prompt file for the claims.")
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output", "retrieval_context")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        max_truths = self.truths_extraction_limit or MAX_TRUTHS
        prompt = self.render(
            "truths", self.truths_prompt, retrieval_context=case.retrieval_context, max_items=max_truths
        )
        truths, dropped_truths = extract(judge, prompt, "truths", max_truths)
        prompt = self.render("claims", self.claims_prompt, actual_output=case.actual_output, max_items=self.max_claims)
        claims, dropped_claims = extract(judge, prompt, "claims", self.max_claims)
        prompt = self.render("verdicts", self.verdicts_prompt, truths=truths, claims=claims)
        verdicts = cast(list[Ternary], judge_verdicts(judge, prompt, len(claims), TERNARY))
        judged = [{"claim": c, "verdict": v} for c, v in zip(claims, verdicts)]
        counts = tally(verdicts, TERNARY)
        faithful = counts["yes"] + (counts["idk"] if self.idk_is_faithful else 0)
        return Judgement(
            score=faithfulness_score(verdicts, idk_is_faithful=self.idk_is_faithful),
            summary=(
                f"{faithful} of {len(claims)} claims are faithful to the retrieval context "
                f"({counts['no']} contradicted, {counts['idk']} not covered"
                f"{'' if self.idk_is_faithful else ', counted as unfaithful'})."
            ),
            details={
                "truths": truths,
                "claims": claims,
                "dropped": {"truths": dropped_truths, "claims": dropped_claims},
                "verdicts": judged,
                "counts": counts,
                "idk_is_faithful": self.idk_is_faithful,
            },
            reason_variables={
                "actual_output": case.actual_output,
                "truths": truths,
                "verdicts": judged,
                "idk_is_faithful": self.idk_is_faithful,
            },
        )
