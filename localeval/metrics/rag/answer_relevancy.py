"""Answer relevancy: does what the output says address the input?"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pydantic import Field

from localeval.backends.base import Backend
from localeval.case import TestCase
from localeval.metrics.items import ItemSource, judge_verdicts, tally
from localeval.metrics.judged import Judgement
from localeval.metrics.rag.base import RagMetric
from localeval.metrics.rag.scores import TERNARY, Ternary, relevancy_ratio

#: How many statements the judge may extract from an output, by default.
MAX_STATEMENTS = 10


class AnswerRelevancy(RagMetric):
    """The share of the output's statements that address the input.

    The statements are the sentences of ``actual_output`` (``statements =
    "sentences"``, split by rules: nothing generated) or what the judge lists
    (``statements = "extracted"``, at most ``max_statements``). The judge then
    gives each a verdict: ``yes`` (addresses the input), ``no`` (off topic) or
    ``idk``. Score = (yes + idk) / statements
    (:func:`~localeval.metrics.rag.scores.relevancy_ratio`).
    """

    kind = "answer_relevancy"
    prompt_folder = "answer_relevancy"

    statements: ItemSource = Field(
        "sentences",
        description=(
            "Where the statements come from: the output's sentences (nothing generated), or a list the "
            "judge writes first (finer-grained, slower)."
        ),
    )
    max_statements: int = Field(
        MAX_STATEMENTS, ge=1, description="The most statements the judge may list (statements = 'extracted')."
    )
    statements_prompt: Path | None = Field(None, description="Your own prompt file for the statements.")
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        statements, dropped, _ = self.output_items(
            case, judge, self.statements, "statements", self.statements_prompt, self.max_statements
        )
        prompt = self.render("verdicts", self.verdicts_prompt, input=case.input, statements=statements)
        chosen, asked = judge_verdicts(judge, prompt, len(statements), TERNARY)
        verdicts = cast(list[Ternary], chosen)
        judged = [{"statement": s, "verdict": v} for s, v in zip(statements, verdicts)]
        counts = tally(verdicts, TERNARY)
        relevant = counts["yes"] + counts["idk"]
        return Judgement(
            score=relevancy_ratio(verdicts),
            summary=f"{relevant} of {len(statements)} statements address the input (yes or idk).",
            details={
                "statements": statements,
                "statements_from": self.statements,
                "dropped": dropped,
                "verdicts": judged,
                "counts": counts,
            },
            conversation=asked,
            reason_variables={"input": case.input, "actual_output": case.actual_output, "verdicts": judged},
        )
