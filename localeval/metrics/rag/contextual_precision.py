"""Contextual precision: are the retrieved nodes that matter ranked first?"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import weighted_cumulative_precision
from localeval.metrics.verdicts import format_count

CHOICES = ("yes", "no")


class ContextualPrecision(RagMetric):
    """Weighted cumulative precision of ``retrieval_context``, in its rank order.

    The judge gives each node a verdict: ``yes`` if it was useful for arriving
    at ``expected_output`` (for ``input``), else ``no``. Score = the mean, over
    the useful nodes' ranks k, of (useful nodes in the first k) / k; 0 when no
    node is useful (:func:`~localeval.metrics.rag.scores.weighted_cumulative_precision`).
    """

    kind = "contextual_precision"
    prompt_folder = "contextual_precision"

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "expected_output", "retrieval_context")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        nodes = list(case.retrieval_context or ())
        prompt = self.render(
            "verdicts",
            self.verdicts_prompt,
            input=case.input,
            expected_output=case.expected_output,
            retrieval_context=nodes,
        )
        verdicts, asked = self.judge_verdicts(judge, prompt, len(nodes), CHOICES)
        judged = [
            {"rank": k, "node": n, "verdict": v} for k, (n, v) in enumerate(zip(nodes, verdicts.written), start=1)
        ]
        counts = verdicts.counts(CHOICES)
        ranks = [item["rank"] for item in judged if item["verdict"] == "yes"]  # as written
        return Judgement(
            score=weighted_cumulative_precision(verdicts.weight_of("yes")),
            summary=(
                f"{format_count(counts['yes'])} of {len(nodes)} retrieved nodes are useful"
                f"{', at ranks ' + ', '.join(map(str, ranks)) if ranks else ''}."
            ),
            details={"verdicts": judged, "counts": counts, **verdicts.evidence()},
            conversation=asked,
            reason_variables={"input": case.input, "expected_output": case.expected_output, "verdicts": judged},
        )
