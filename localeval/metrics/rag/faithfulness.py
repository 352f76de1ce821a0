"""Faithfulness: does the output keep to what the retrieval context says?"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.items import ItemSource, extract
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import TERNARY, faithfulness_score
from localeval.metrics.verdicts import format_count

#: How many claims the judge may extract from an output, by default.
MAX_CLAIMS = 10


class Faithfulness(RagMetric):
    """The share of the output's claims that the retrieval context does not contradict.

    The claims are the sentences of ``actual_output`` (``claims = "sentences"``,
    split by rules: nothing generated) or what the judge lists (``claims =
    "extracted"``, at most ``max_claims``). The judge then reads
    ``retrieval_context`` and gives each claim a verdict against it: ``yes``
    (agrees), ``no`` (contradicted) or ``idk`` (the context says nothing about
    it). Score = claims not contradicted / claims; with ``idk_is_faithful =
    false``, an ``idk`` claim counts as unfaithful too
    (:func:`~localeval.metrics.rag.scores.faithfulness_score`).

    With ``truths_extraction_limit`` set, the judge first lists at most that
    many facts of the context (deepeval's way), and the claims are judged
    against those facts instead of the context itself.
    """

    kind = "faithfulness"
    prompt_folder = "faithfulness"

    claims: ItemSource = Field(
        "sentences",
        description=(
            "Where the claims come from: the output's sentences (nothing generated), or a list the "
            "judge writes first (finer-grained, slower)."
        ),
    )
    max_claims: int = Field(MAX_CLAIMS, ge=1, description="The most claims the judge may list (claims = 'extracted').")
    truths_extraction_limit: int | None = Field(
        None,
        ge=1,
        description=(
            "Judge the claims against at most this many facts the judge extracts from the context "
            "first, not against the context itself (one more call, which writes the facts)."
        ),
    )
    idk_is_faithful: bool = Field(
        True, description="A claim the context says nothing about counts as faithful; false is stricter."
    )
    truths_prompt: Path | None = Field(None, description="Your own prompt file for the facts of the context.")
    claims_prompt: Path | None = Field(None, description="Your own prompt file for the claims.")
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("actual_output", "retrieval_context")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        documents, truths, dropped = list(case.retrieval_context or ()), None, {}
        if self.truths_extraction_limit is not None:
            prompt = self.render(
                "truths", self.truths_prompt, retrieval_context=documents, max_items=self.truths_extraction_limit
            )
            truths, dropped["truths"], _ = extract(judge, prompt, "truths", self.truths_extraction_limit)
            documents = truths
        claims, dropped["claims"], _ = self.output_items(
            case, judge, self.claims, "claims", self.claims_prompt, self.max_claims
        )
        prompt = self.render(
            "verdicts", self.verdicts_prompt, documents=documents, from_truths=truths is not None, claims=claims
        )
        verdicts, asked = self.judge_verdicts(judge, prompt, len(claims), TERNARY)
        judged = [{"claim": c, "verdict": v} for c, v in zip(claims, verdicts.written)]
        counts = verdicts.counts(TERNARY)
        faithful = counts["yes"] + (counts["idk"] if self.idk_is_faithful else 0)
        against = "retrieval context" if truths is None else "facts extracted from the retrieval context"
        return Judgement(
            score=faithfulness_score(verdicts.weights, idk_is_faithful=self.idk_is_faithful),
            summary=(
                f"{format_count(faithful)} of {len(claims)} claims are faithful to the {against} "
                f"({format_count(counts['no'])} contradicted, {format_count(counts['idk'])} not covered"
                f"{'' if self.idk_is_faithful else ', counted as unfaithful'})."
            ),
            details={
                **({} if truths is None else {"truths": truths}),
                "claims": claims,
                "claims_from": self.claims,
                "dropped": dropped,
                "verdicts": judged,
                "counts": counts,
                "idk_is_faithful": self.idk_is_faithful,
                **verdicts.evidence(),
            },
            conversation=asked,
            reason_variables={
                "actual_output": case.actual_output,
                "documents": documents,
                "from_truths": truths is not None,
                "verdicts": judged,
                "idk_is_faithful": self.idk_is_faithful,
            },
        )
