"""Role adherence: does the assistant stay in the role it was given?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.metrics.conversational.base import ConversationalMetric, per_turn_verdicts
from localeval.metrics.judged import Judgement
from localeval.prompts import RenderedPrompt

CHOICES = ("in_role", "out_of_role")


class RoleAdherence(ConversationalMetric):
    """The share of the assistant's turns that stay in ``chatbot_role``.

    One request: the judge gives each assistant turn a verdict, ``in_role`` or
    ``out_of_role``. Score = in_role / assistant turns, as deepeval defines it.
    """

    kind = "role_adherence"
    prompt_folder = "role_adherence"

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("chatbot_role",)

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        judged = [i + 1 for i in case.assistant_turns]
        return self.render("verdicts", self.verdicts_prompt, case, judged=judged, chatbot_role=case.chatbot_role)

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        indices = case.assistant_turns
        verdicts, counts, asked = per_turn_verdicts(judge, self.first_prompt(case), indices, CHOICES)
        return Judgement(
            score=counts["in_role"] / len(indices),
            summary=f"{counts['in_role']} of {len(indices)} assistant turns stay in the role.",
            details={"verdicts": verdicts, "counts": counts},
            conversation=asked,
            reason_variables={"verdicts": verdicts},
        )
