"""Turn relevancy: does each of the assistant's replies respond to the exchanges just before it?"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.errors import MetricInputError
from localeval.metrics.conversational.base import ConversationalMetric
from localeval.metrics.judged import Exchange, Judgement
from localeval.metrics.verdicts import Verdicts, format_count
from localeval.prompts import RenderedPrompt

CHOICES = ("relevant", "irrelevant")


class ExchangeTurns(NamedTuple):
    """One exchange, as indices into ``turns``: where it starts, the user's turns, the assistant's reply.

    The first exchange starts at turn 0, so the assistant turns before the user's
    first turn (a greeting) are in it, as context, though in no reply; a later one
    starts right after the reply before it, so a system turn between the two opens it.
    """

    start: int
    asked: list[int]
    reply: list[int]


def exchanges(case: ConversationalTestCase) -> list[ExchangeTurns]:
    """The conversation's exchanges: one or more user turns, then the assistant turns that answer them.

    A user turn after a reply opens the next exchange; user turns that no
    assistant turn answers (the conversation's end) are in none, and so are system
    turns, which lie inside the exchanges' spans as context.
    """
    found: list[ExchangeTurns] = []
    start = 0
    asked: list[int] = []
    reply: list[int] = []
    for index, turn in enumerate(case.turns):
        if turn.role == "user":
            if reply:
                found.append(ExchangeTurns(start, asked, reply))
                start, asked, reply = reply[-1] + 1, [], []  # a system turn before this one opens it, as context
            asked.append(index)
        elif turn.role == "assistant" and asked:  # a system turn is context: in the window, in no exchange
            reply.append(index)
    if reply:
        found.append(ExchangeTurns(start, asked, reply))
    return found


class TurnRelevancy(ConversationalMetric):
    """The share of the assistant's replies that are relevant, each judged with the ``window_size`` exchanges
    up to it.

    An *exchange* is the user's turn (or consecutive turns) and the assistant's
    reply: the assistant turns that follow, one or several in a row. One request
    per exchange: the judge sees the transcript (the same opening as every
    conversational metric, so the judge reads it once for all these requests) and
    is asked whether the reply responds to the user, in the light of the window:
    the turns from the start of the exchange ``window_size − 1`` exchanges
    earlier to the end of the reply (``window_size = 1``: the exchange alone; a
    window longer than the conversation starts at turn 1). ``relevant`` or
    ``irrelevant``. Score = relevant / exchanges.

    The unit and the window are deepeval's (``TurnRelevancyMetric`` since its
    multi-turn rewrite: "unit interactions", a window of ``window_size`` of them,
    the judged one included). An assistant turn before the user's first turn
    answers nobody: it is context of the first exchange, not judged
    (``details["unjudged"]``); deepeval also folds it into its first unit. Two
    differences: a reply of several turns is judged as a whole, where deepeval
    judges only its last turn; and the window is named in the question rather than
    cut out of the transcript, which keeps the transcript a prefix shared with the
    other metrics; the judge is told to ignore the rest. A conversation with no
    exchange is an error here (deepeval scores it 1).
    """

    kind = "turn_relevancy"
    prompt_folder = "turn_relevancy"

    window_size: int = Field(
        10, ge=1, le=100, description="How many exchanges the judge reads a reply with, its own included."
    )
    verdict_prompt: Path | None = Field(None, description="Your own prompt file for a reply's verdict.")

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        return self._prompt(case, self._exchanges(case), 0)

    def _exchanges(self, case: ConversationalTestCase) -> list[ExchangeTurns]:
        found = exchanges(case)
        if not found:
            raise MetricInputError(
                self.display_name, "turns", "no assistant turn answers a user turn: there is no exchange to judge"
            )
        return found

    def _prompt(self, case: ConversationalTestCase, found: list[ExchangeTurns], at: int) -> RenderedPrompt:
        """The question about exchange ``at``. Its variables number turns from 1: ``reply`` and ``asked`` (the
        exchange's assistant and user turns), ``turn`` (the reply's last), ``window`` (every turn the judge reads)
        and ``before`` (how many earlier exchanges the window holds)."""
        opens = max(0, at - self.window_size + 1)
        judged = found[at]
        return self.render(
            "verdict", self.verdict_prompt, case,
            reply=[i + 1 for i in judged.reply], asked=[i + 1 for i in judged.asked], turn=judged.reply[-1] + 1,
            window=list(range(found[opens].start + 1, judged.reply[-1] + 2)), before=at - opens,
        )

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        found = self._exchanges(case)
        verdicts: list[dict[str, Any]] = []
        parts: list[Verdicts] = []
        last: Exchange | None = None
        for at, judged in enumerate(found):
            part, last = self.one_verdict(judge, self._prompt(case, found, at), CHOICES)
            parts.append(part)
            reply = [i + 1 for i in judged.reply]
            verdicts.append({"exchange": at + 1, "turn": reply[-1], "reply": reply, "verdict": part.written[0]})
        read = Verdicts.joined(parts)
        counts = read.counts(CHOICES)
        replied = {i for e in found for i in e.reply}
        unjudged = [i + 1 for i in case.assistant_turns if i not in replied]  # turn numbers, as in verdicts
        return Judgement(
            score=counts["relevant"] / len(found),
            summary=(f"{format_count(counts['relevant'])} of {len(found)} assistant replies are relevant to what "
                     "the user said."),
            details={"verdicts": verdicts, "counts": counts, "window_size": self.window_size, "unjudged": unjudged,
                     **read.evidence()},
            conversation=last,
            reason_variables={"verdicts": verdicts},
        )
