"""Knowledge retention: does the assistant keep what the user told it?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.metrics.conversational.base import ConversationalMetric, per_turn_verdicts
from localeval.metrics.judged import Judgement
from localeval.prompts import RenderedPrompt

CHOICES = ("kept", "forgot", "contradicted")


class KnowledgeRetention(ConversationalMetric):
    """The share of the assistant's turns that keep every fact the user gave before them.

    One request: the judge gives each assistant turn a verdict, ``kept`` (consistent
    with what the user said earlier, or nothing earlier matters), ``forgot`` (asks
    again for it, or ignores it) or ``contradicted``. Score = kept / assistant turns.

    deepeval extracts the facts of every turn in one request each, then judges each
    assistant turn for "attrition"; its score is the same ratio. Here one request
    judges all turns against the transcript, and "forgot" and "contradicted" stay
    apart in the evidence, because they are different failures.
    """

    kind = "knowledge_retention"
    prompt_folder = "knowledge_retention"

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        judged = [i + 1 for i in case.assistant_turns]
        return self.render("verdicts", self.verdicts_prompt, case, judged=judged)

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        prompt = self.first_prompt(case)
        indices = case.assistant_turns
        verdicts, counts, asked = per_turn_verdicts(judge, prompt, indices, CHOICES)
        return Judgement(
            score=counts["kept"] / len(indices),
            summary=(
                f"{counts['kept']} of {len(indices)} assistant turns keep what the user said "
                f"({counts['forgot']} forgot, {counts['contradicted']} contradicted)."
            ),
            details={"verdicts": verdicts, "counts": counts},
            conversation=asked,
            reason_variables={"verdicts": verdicts},
        )
