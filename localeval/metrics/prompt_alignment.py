"""Prompt alignment: does the output follow the instructions it was given?"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.items import ItemsMetric
from localeval.metrics.judged import Judgement
from localeval.metrics.verdicts import format_count, share

CHOICES = ("yes", "no")


class PromptAlignment(ItemsMetric):
    """The share of ``instructions`` (listed in the metric) that ``actual_output`` follows.

    The judge reads ``input`` and ``actual_output`` and gives each instruction a
    verdict in one request: ``yes`` (followed, or it does not apply to this
    input) or ``no`` (broken). Score = followed / instructions.
    """

    kind = "prompt_alignment"
    prompt_folder = "prompt_alignment"

    instructions: list[str] = Field(
        min_length=1, description="What the output must do, one instruction each: 'Answer in French.'"
    )
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    @field_validator("instructions")
    @classmethod
    def _no_blank(cls, instructions: list[str]) -> list[str]:
        stripped = [i.strip() for i in instructions]
        if not all(stripped):
            raise ValueError("an instruction is blank")
        if len(set(stripped)) != len(stripped):
            raise ValueError("an instruction is listed twice")
        return stripped

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "actual_output")

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        prompt = self.render(
            "verdicts", self.verdicts_prompt, input=case.input, actual_output=case.actual_output,
            instructions=self.instructions,
        )
        verdicts, asked = self.judge_verdicts(judge, prompt, len(self.instructions), CHOICES)
        judged = [{"instruction": i, "verdict": v} for i, v in zip(self.instructions, verdicts.written)]
        counts = verdicts.counts(CHOICES)
        return Judgement(
            score=share(verdicts.weights, "yes", empty=1.0),
            summary=f"The output follows {format_count(counts['yes'])} of {len(self.instructions)} instructions.",
            details={"verdicts": judged, "counts": counts, **verdicts.evidence()},
            conversation=asked,
            reason_variables={"verdicts": judged},
        )
