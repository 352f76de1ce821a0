"""Conversation completeness: did the assistant satisfy what the user wanted?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.errors import BackendError
from localeval.metrics.conversational.base import ConversationalMetric
from localeval.metrics.items import items_schema, items_tokens
from localeval.metrics.judged import Exchange, Judgement, ask
from localeval.metrics.verdicts import format_count
from localeval.prompts import RenderedPrompt, load_prompt

CHOICES = ("satisfied", "unsatisfied")
#: How many intentions the judge may list, by default.
MAX_INTENTIONS = 5


class ConversationCompleteness(ConversationalMetric):
    """The share of the user's intentions that the assistant satisfied.

    Two requests in one conversation with the judge: it lists the user's
    intentions (at most ``max_intentions``; repeats and blanks dropped), then, as
    a follow-up turn (so a judge that keeps its state does not read the transcript
    again), gives each a verdict, ``satisfied`` or ``unsatisfied``.
    Score = satisfied / intentions, as deepeval defines it. ``scenario`` and
    ``user_description``, when the case has them, are shown with the transcript.
    """

    kind = "conversation_completeness"
    prompt_folder = "conversation_completeness"

    max_intentions: int = Field(MAX_INTENTIONS, ge=1, le=20, description="The most intentions the judge may list.")
    intentions_prompt: Path | None = Field(None, description="Your own prompt file for the intentions.")
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts (a follow-up).")

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        return self.render(
            "intentions", self.intentions_prompt, case, max_items=self.max_intentions,
            scenario=case.scenario, user_description=case.user_description,
        )

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        listing = self.first_prompt(case)
        reply = ask(judge, listing, items_schema("intentions", self.max_intentions), items_tokens(self.max_intentions))
        written = [s.strip() for s in reply.value["intentions"] if s.strip()]
        if not written:
            raise BackendError("the judge listed no intentions, only blank strings")
        intentions = list(dict.fromkeys(written))  # a repeat would weigh one intention twice
        dropped = len(reply.value["intentions"]) - len(intentions)
        question = load_prompt(f"{self.prompt_folder}/verdicts", self.verdicts_prompt).render(intentions=intentions)
        # A follow-up turn of the listing call, with the judge's reply as it wrote it: the transcript is read once.
        follow_up = Exchange(listing, reply.text).continued(question)
        verdicts, asked = self.judge_verdicts(judge, follow_up, len(intentions), CHOICES)
        judged = [{"intention": i, "verdict": v} for i, v in zip(intentions, verdicts.written)]
        counts = verdicts.counts(CHOICES)
        return Judgement(
            score=counts["satisfied"] / len(intentions),
            summary=f"The assistant satisfied {format_count(counts['satisfied'])} of {len(intentions)} user intentions.",
            details={"verdicts": judged, "dropped": dropped, "counts": counts, **verdicts.evidence()},
            conversation=asked,
            reason_variables={"verdicts": judged},
        )

