"""Contextual relevancy: how much of what was retrieved is relevant to the input?"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.items import extract
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import contextual_relevancy_score
from localeval.metrics.verdicts import format_count

CHOICES = ("yes", "no")
#: How many statements the judge may extract from one retrieved node, by default.
MAX_NODE_STATEMENTS = 8


class ContextualRelevancy(RagMetric):
    """The share of the statements in ``retrieval_context`` that are relevant to ``input``.

    The judge lists the statements of each node (at most
    ``max_statements_per_node``, one request per node), then gives
    every statement a verdict in one request: ``yes`` (relevant to the input)
    or ``no``. Score = relevant statements / statements
    (:func:`~localeval.metrics.rag.scores.contextual_relevancy_score`).
    """

    kind = "contextual_relevancy"
    prompt_folder = "contextual_relevancy"

    max_statements_per_node: int = Field(
        MAX_NODE_STATEMENTS, ge=1, description="The most statements to extract from one retrieved node."
    )
    statements_prompt: Path | None = Field(None, description="Your own prompt file for a node's statements.")
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "retrieval_context")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        per_node: list[list[str]] = []
        dropped = 0
        for node in case.retrieval_context or ():
            prompt = self.render(
                "statements", self.statements_prompt, node=node, max_items=self.max_statements_per_node
            )
            statements, repeats, _ = extract(judge, prompt, "statements", self.max_statements_per_node)
            per_node.append(statements)
            dropped += repeats
        located = [(i, s) for i, statements in enumerate(per_node, start=1) for s in statements]
        statements = [s for _, s in located]
        prompt = self.render("verdicts", self.verdicts_prompt, input=case.input, statements=statements)
        verdicts, asked = self.judge_verdicts(judge, prompt, len(statements), CHOICES)
        judged = [{"node": i, "statement": s, "verdict": v} for (i, s), v in zip(located, verdicts.written)]
        counts = verdicts.counts(CHOICES)
        return Judgement(
            score=contextual_relevancy_score(verdicts.weight_of("yes")),
            summary=(
                f"{format_count(counts['yes'])} of {len(statements)} statements in the retrieval context are "
                "relevant to the input."
            ),
            details={"statements": per_node, "dropped": dropped, "verdicts": judged, "counts": counts,
                     **verdicts.evidence()},
            conversation=asked,
            reason_variables={"input": case.input, "verdicts": judged},
        )
