"""Role adherence: does the assistant stay in the role it was given?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import Case, ConversationalTestCase
from localeval.errors import MetricInputError
from localeval.metrics.conversational.base import ConversationalMetric
from localeval.metrics.judged import Judgement
from localeval.metrics.verdicts import format_count
from localeval.prompts import RenderedPrompt

CHOICES = ("in_role", "out_of_role")


class RoleAdherence(ConversationalMetric):
    """The share of the assistant's turns that stay in ``chatbot_role``.

    One request: the judge gives each assistant turn a verdict, ``in_role`` or
    ``out_of_role``. Score = in_role / assistant turns, as deepeval defines it
    (weighted verdicts: the expected count of in_role).

    Without a ``chatbot_role``, a conversation's system turns give the role: the
    judge is told the role is the one they give (they are in the transcript, so
    their text is not repeated). A ``chatbot_role`` is the role even when there are
    system turns, which the judge then reads as context like every other metric.
    """

    kind = "role_adherence"
    prompt_folder = "role_adherence"

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("chatbot_role",)

    def check_case(self, case: Case) -> None:
        if isinstance(case, ConversationalTestCase) and not case.chatbot_role:
            if case.system_turns:
                return  # the system turns give the role
            raise MetricInputError(
                self.display_name, "chatbot_role", absent=case.chatbot_role is None,
                problem="needs it, or a system turn that gives the role, and the conversation has neither",
            )
        super().check_case(case)

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        judged = [i + 1 for i in case.assistant_turns]
        role = case.chatbot_role or _role_of_system_turns(case)
        return self.render("verdicts", self.verdicts_prompt, case, judged=judged, chatbot_role=role)

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        indices = case.assistant_turns
        verdicts, found, asked = self.per_turn_verdicts(judge, self.first_prompt(case), indices, CHOICES)
        counts = found.counts(CHOICES)
        return Judgement(
            score=counts["in_role"] / len(indices),
            summary=f"{format_count(counts['in_role'])} of {len(indices)} assistant turns stay in the role.",
            details={"verdicts": verdicts, "counts": counts, **found.evidence()},
            conversation=asked,
            reason_variables={"verdicts": verdicts},
        )


def _role_of_system_turns(case: ConversationalTestCase) -> str:
    """The role, told by where the transcript shows it: "the one its system message (turn 1) gives it"."""
    numbers = [str(i + 1) for i in case.system_turns]
    which = "message (turn" if len(numbers) == 1 else "messages (turns"
    return f"the one its system {which} {', '.join(numbers)}) give{'s' if len(numbers) == 1 else ''} it"
