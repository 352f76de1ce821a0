"""Knowledge retention: does the assistant keep what the user told it?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.errors import MetricInputError
from localeval.metrics.conversational.base import ConversationalMetric
from localeval.metrics.judged import Judgement
from localeval.metrics.verdicts import format_count
from localeval.prompts import RenderedPrompt

CHOICES = ("kept", "forgot", "contradicted", "nothing_to_retain")
#: The verdicts of turns that had something to retain: the score's denominator.
RETAINING = ("kept", "forgot", "contradicted")


class KnowledgeRetention(ConversationalMetric):
    """The share of the assistant's turns with something to retain that keep every fact the user gave before them.

    One request: the judge gives each assistant turn that follows a user turn a
    verdict, ``kept`` (consistent with every fact the user gave before it),
    ``forgot`` (asks again for it, or ignores it), ``contradicted``, or
    ``nothing_to_retain`` (the user had given no fact before it). Score = kept /
    (kept + forgot + contradicted): a turn with nothing to retain is no evidence
    of memory either way, so it is left out, as are the assistant turns before the
    user's first turn, which are not asked about (``details["unjudged"]``). A
    conversation with no turn that had anything to retain is unscored (an error
    naming the turns), not a perfect score: nothing in it tested the assistant's
    memory. Read weighted (``verdict_reading = "weighted"``), the score is the ratio of the expected
    counts, and whether any turn had something to retain is still what the judge wrote.

    deepeval extracts the facts of every user turn in one request each, then
    judges each assistant turn that has facts before it for "attrition"; its
    score is the same ratio, and 1 when no turn had facts before it. Here one
    request judges all turns against the transcript, and "forgot" and
    "contradicted" stay apart in the evidence, because they are different failures.
    """

    kind = "knowledge_retention"
    prompt_folder = "knowledge_retention"

    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        judged = [i + 1 for i in self._judged(case)]
        return self.render("verdicts", self.verdicts_prompt, case, judged=judged)

    def _judged(self, case: ConversationalTestCase) -> list[int]:
        """The assistant turns after the user's first turn: before it, the user has told the assistant nothing."""
        first_user = next((i for i, turn in enumerate(case.turns) if turn.role == "user"), len(case.turns))
        judged = [i for i in case.assistant_turns if i > first_user]
        if not judged:
            raise MetricInputError(
                self.display_name, "turns", "no assistant turn follows a user turn: the user told it nothing to retain"
            )
        return judged

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        indices = self._judged(case)
        verdicts, found, asked = self.per_turn_verdicts(judge, self.first_prompt(case), indices, CHOICES)
        counts = found.counts(CHOICES)
        retaining = sum(counts[c] for c in RETAINING)
        # Whether anything tested memory is what the judge wrote; weighted, the ratio is of expected counts.
        if not any(v in RETAINING for v in found.written) or not retaining:
            turns = ("turns " if len(indices) > 1 else "turn ") + ", ".join(str(i + 1) for i in indices)
            raise MetricInputError(
                self.display_name, "turns",
                f"the judge found the user gave nothing to retain before {turns}: nothing tested the assistant's memory",
            )
        nothing = counts["nothing_to_retain"]
        return Judgement(
            score=counts["kept"] / retaining,
            summary=(
                f"{format_count(counts['kept'])} of {format_count(retaining)} assistant turns keep what the user said "
                f"({format_count(counts['forgot'])} forgot, {format_count(counts['contradicted'])} contradicted)"
                + (f"; {format_count(nothing)} more had nothing to retain." if nothing else ".")
            ),
            details={"verdicts": verdicts, "counts": counts, "unjudged": _unjudged(case, indices),
                     **found.evidence()},
            conversation=asked,
            reason_variables={"verdicts": verdicts},
        )


def _unjudged(case: ConversationalTestCase, judged: list[int]) -> list[int]:
    """The assistant turns not asked about, numbered from 1 as in the verdicts."""
    return [i + 1 for i in case.assistant_turns if i not in judged]
