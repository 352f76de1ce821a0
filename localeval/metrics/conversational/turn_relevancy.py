"""Turn relevancy: does each assistant turn respond to the turns just before it?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.errors import MetricInputError
from localeval.metrics.conversational.base import ConversationalMetric, one_verdict
from localeval.metrics.items import tally
from localeval.metrics.judged import Exchange, Judgement
from localeval.prompts import RenderedPrompt

CHOICES = ("relevant", "irrelevant")


class TurnRelevancy(ConversationalMetric):
    """The share of the assistant's turns that are relevant to the ``window_size`` turns before them.

    One request per assistant turn that has a turn before it: the judge sees the
    transcript (the same opening as every conversational metric, so the judge reads
    it once for all these requests) and is asked about turn *i* against turns
    *i − window_size* … *i − 1*: ``relevant`` or ``irrelevant``.
    Score = relevant / judged turns.

    deepeval also judges an assistant turn against a sliding window, sending only
    the window. Two differences: an assistant turn that opens the conversation has
    an empty window, so nothing can make it relevant or not; it is not judged here
    (listed in ``details["unjudged"]``) where deepeval counts it. And the window is
    named in the question rather than cut out of the transcript, which keeps the
    transcript a prefix shared with the other metrics; the judge is told to ignore
    the rest.
    """

    kind = "turn_relevancy"
    prompt_folder = "turn_relevancy"

    window_size: int = Field(10, ge=1, le=100, description="How many turns before an assistant turn it is judged against.")
    verdict_prompt: Path | None = Field(None, description="Your own prompt file for a turn's verdict.")

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        judged = _judged(case)
        return self._prompt(case, judged[0] if judged else case.assistant_turns[0])

    def _prompt(self, case: ConversationalTestCase, index: int) -> RenderedPrompt:
        window = list(range(max(0, index - self.window_size) + 1, index + 1))  # numbered from 1
        return self.render("verdict", self.verdict_prompt, case, turn=index + 1, window=window)

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        judged = _judged(case)
        if not judged:
            raise MetricInputError(
                self.display_name, "turns", "no assistant turn follows another turn: there is nothing to judge it against"
            )
        verdicts: list[dict[str, Any]] = []
        last: Exchange | None = None
        for index in judged:
            verdict, last = one_verdict(judge, self._prompt(case, index), CHOICES)
            verdicts.append({"turn": index + 1, "verdict": verdict})
        counts = tally([v["verdict"] for v in verdicts], CHOICES)
        unjudged = [i + 1 for i in case.assistant_turns if i not in judged]  # turn numbers, as in verdicts
        return Judgement(
            score=counts["relevant"] / len(judged),
            summary=f"{counts['relevant']} of {len(judged)} assistant turns are relevant to the turns before them.",
            details={"verdicts": verdicts, "counts": counts, "window_size": self.window_size, "unjudged": unjudged},
            conversation=last,
            reason_variables={"verdicts": verdicts},
        )


def _judged(case: ConversationalTestCase) -> list[int]:
    """The assistant turns with at least one turn before them."""
    return [i for i in case.assistant_turns if i > 0]
