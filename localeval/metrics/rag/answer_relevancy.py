"""Answer relevancy: does what the output says address the input?"""

from __future__ import annotations

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.items import StatementsMetric
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import TERNARY, relevancy_ratio
from localeval.metrics.verdicts import format_count


class AnswerRelevancy(RagMetric, StatementsMetric):
    """The share of the output's statements that address the input.

    The statements are the sentences of ``actual_output`` (``statements =
    "sentences"``, split by rules: nothing generated) or what the judge lists
    (``statements = "extracted"``, at most ``max_statements``). The judge then
    gives each a verdict: ``yes`` (addresses the input), ``no`` (off topic) or
    ``idk``. Score = (yes + idk) / statements
    (:func:`~localeval.metrics.rag.scores.relevancy_ratio`; weighted verdicts: expected counts).
    """

    kind = "answer_relevancy"
    prompt_folder = "answer_relevancy"

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        found = self.judge_statements(case, judge, TERNARY, input=case.input)
        relevant = found.counts["yes"] + found.counts["idk"]
        return Judgement(
            score=relevancy_ratio(found.verdicts.weights),
            summary=f"{format_count(relevant)} of {len(found.judged)} statements address the input (yes or idk).",
            details=found.details,
            conversation=found.exchange,
            reason_variables={"input": case.input, "actual_output": case.actual_output, "verdicts": found.judged},
        )
