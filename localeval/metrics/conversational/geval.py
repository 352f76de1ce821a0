"""Conversational G-Eval: G-Eval's criteria, steps, rubric and scoring, over a whole conversation."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from localeval.data.case import CONVERSATION_FIELDS, ConversationalTestCase
from localeval.metrics.base import field_text
from localeval.metrics.conversational.base import TURN_EXTRAS, transcript
from localeval.metrics.geval import GEval, Layout

#: What ``evaluation_params`` may name: turn fields (what the transcript shows), then conversation fields.
TURN_PARAMS = ("role", "content", *TURN_EXTRAS)
CASE_PARAMS = ("chatbot_role", "scenario", "expected_outcome", "user_description")


class ConversationalGEval(GEval):
    """G-Eval (:mod:`localeval.metrics.geval`) on a :class:`ConversationalTestCase`.

    Everything is G-Eval's: criteria or ``evaluation_steps`` (written once per run
    when absent), ``rubric``, ``score_range``, ``scoring`` (``logprobs``: Σ p(s)·s
    over the valid scores; ``top``; ``sampling``, and ``allow_fallback``), strict
    mode and the reason. What the judge sees is the conversation: the transcript,
    labelled "Conversation", showing every turn's role and content and, of the turn
    fields in ``evaluation_params``, ``retrieval_context`` and ``tools_called``;
    then the conversation fields named there (``scenario``, ``expected_outcome``,
    ``chatbot_role``, ``user_description``).

    ``layout`` defaults to ``case_first``: the prompt opens with the transcript as
    every conversational metric's does, so the judge reads it once for all of them.
    With the default ``evaluation_params`` the transcript is exactly theirs.
    """

    kind = "conversational_geval"
    case_type = ConversationalTestCase
    score_template = "conversational_geval/score"
    parameter_names = (*TURN_PARAMS, *CASE_PARAMS)
    parameter_noun = "turn fields (role, content, retrieval_context, tools_called) or conversation fields"

    evaluation_params: tuple[str, ...] = Field(
        ("content", *TURN_EXTRAS), description="Turn fields the transcript shows, and conversation fields shown after it."
    )
    layout: Layout = Field("case_first", description="case_first: the transcript opens the prompt (shared prefix).")

    def required_fields(self) -> tuple[str, ...]:
        return tuple(p for p in self.evaluation_params if p in CONVERSATION_FIELDS)

    def shown_fields(self, case: Any) -> dict[str, str]:
        shown = [p for p in TURN_EXTRAS if p in self.evaluation_params]
        fields = {"Conversation": transcript(case, shown)}
        fields.update({self._label(p): field_text(case.field_value(p)) for p in self.required_fields()})
        return fields

    def shown_labels(self) -> list[str]:
        return ["Conversation", *(self._label(p) for p in self.required_fields())]
