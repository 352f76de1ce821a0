"""Argument correctness: were the arguments of each tool call right for the input? Asks a judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.metrics.agent.calls import MAX_OUTPUT_CHARS, TOOL_FIELDS, call_views
from localeval.metrics.base import Verdict
from localeval.metrics.judged import Exchange, JudgedMetric, Judgement, ask
from localeval.prompts import load_prompt

CHOICES = ("yes", "no")
#: The longest reason the judge may give for one call's verdict.
CALL_REASON_CHARS = 200


def call_verdicts_schema(count: int) -> dict[str, Any]:
    """``{"verdicts": [{"verdict": "yes"|"no", "reason": "..."}, ...]}``: exactly ``count`` of them, in order.

    The verdict is an enum, and the reason is bounded so that a small model has to stop.
    """
    verdict = {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": list(CHOICES)},
            "reason": {"type": "string", "minLength": 1, "maxLength": CALL_REASON_CHARS},
        },
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "items": verdict, "minItems": count, "maxItems": count}},
        "required": ["verdicts"],
        "additionalProperties": False,
    }


def call_verdicts_tokens(count: int) -> int:
    """Room for ``count`` verdicts with reasons of the longest length, at one token a character.

    Digits and escapes cost a token each (or more) for a small model, and a reply cut off by the
    limit is an error: the budget is a cap, the judge stops when the JSON closes.
    """
    return 32 + count * (CALL_REASON_CHARS + 24)


class ArgumentCorrectness(JudgedMetric):
    """The share of the tool calls whose arguments the judge finds right for the input.

    The judge reads ``input`` and every call in ``tools_called`` (name,
    description, arguments, and its output, cut to ``max_output_chars``, since a
    later call's arguments may rightly come from an earlier call's output) and
    gives one verdict per call, in order: ``yes`` (the arguments are right for the
    input) or ``no``, each with a short reason. Score = calls judged ``yes`` /
    calls. A case that called no tool (``"tools_called": []``) scores 1.0 without
    asking the judge: no argument was wrong (``details["calls"] == 0`` says so;
    ``tool_correctness`` is the metric that notices missing calls). A case without
    ``tools_called`` at all is bad input.
    """

    kind = "argument_correctness"
    empty_allowed = TOOL_FIELDS
    prompt_folder = "argument_correctness"

    max_output_chars: int = Field(
        MAX_OUTPUT_CHARS, ge=0, description="The most characters of each tool's output the judge reads."
    )
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def required_fields(self) -> tuple[str, ...]:
        return ("input", "tools_called")

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        if not case.tools_called:  # nothing to judge, so nothing to ask or explain
            details = {"raw_score": 1.0, "calls": 0, "verdicts": [], "counts": {c: 0 for c in CHOICES}}
            return Verdict(score=1.0, reason="No tool was called, so no argument can be wrong.", details=details)
        return super().verdict(case, judge)

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        calls = call_views(list(case.tools_called or ()), self.max_output_chars)
        prompt = load_prompt(f"{self.prompt_folder}/verdicts", self.verdicts_prompt).render(
            input=case.input, calls=calls
        )
        reply = ask(judge, prompt, call_verdicts_schema(len(calls)), call_verdicts_tokens(len(calls)))
        judged = [
            {"call": i, "name": call["name"], "arguments": call["arguments"], "verdict": v["verdict"],
             "reason": v["reason"].strip()}
            for i, (call, v) in enumerate(zip(calls, reply.value["verdicts"]))
        ]
        counts = {c: sum(1 for item in judged if item["verdict"] == c) for c in CHOICES}
        return Judgement(
            score=counts["yes"] / len(judged),
            summary=f"{counts['yes']} of {len(judged)} tool calls have the right arguments for the input.",
            details={"calls": len(judged), "verdicts": judged, "counts": counts},
            conversation=Exchange(prompt, reply.text),
            reason_variables={"verdicts": judged},
        )
