"""G-Eval: criteria → evaluation steps → a probability-weighted score.

The score is the expected value Σ p(s)·s of the judge's distribution over the
valid scores, read in one forward pass at the position right after the prompt's
prefill (``Score: ``), renormalized over the valid scores; the covered mass is
reported beside it. When only criteria are given, the judge first writes the
evaluation steps as schema-constrained JSON (cached like every judge call).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from localeval.backends.base import Backend, DistributionRequest, JsonRequest
from localeval.case import CASE_FIELDS, TestCase
from localeval.distribution import CandidateDistribution, scale_to_unit
from localeval.errors import BackendError
from localeval.metrics.base import Metric, Verdict
from localeval.prompts import load_prompt

MAX_STEPS = 8

STEPS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 300},
            "minItems": 1,
            "maxItems": MAX_STEPS,
        }
    },
    "required": ["steps"],
    "additionalProperties": False,
}


class GEval(Metric):
    """Judge a case against free-text criteria with a local model."""

    kind = "geval"
    needs_judge = True

    criteria: str | None = Field(None, description="What a good output is, in plain words.")
    evaluation_steps: tuple[str, ...] | None = Field(
        None, description="How to check the criteria; generated from them when absent."
    )
    evaluation_params: tuple[str, ...] = Field(
        ("input", "actual_output"), description="The test-case fields the judge sees."
    )
    score_range: tuple[int, int] = Field((1, 5), description="Lowest and highest score.")
    steps_prompt: Path | None = Field(None, description="Your own prompt file for the steps.")
    score_prompt: Path | None = Field(None, description="Your own prompt file for the score.")

    @model_validator(mode="after")
    def _check(self) -> GEval:
        if not self.criteria and not self.evaluation_steps:
            raise ValueError("give criteria or evaluation_steps")
        unknown = [p for p in self.evaluation_params if p not in CASE_FIELDS]
        if unknown or not self.evaluation_params:
            raise ValueError(f"evaluation_params must be test-case fields, got {unknown or '[]'}")
        low, high = self.score_range
        if not 0 <= low < high <= 9:
            # Each score must be one token; "10" begins with "1". Wider ranges need
            # the multi-token scoring that is still to come.
            raise ValueError(f"score_range must satisfy 0 <= low < high <= 9, got {low}-{high}")
        return self

    def required_fields(self) -> tuple[str, ...]:
        return self.evaluation_params

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        if judge is None:
            raise BackendError("G-Eval needs a judge backend")
        steps, steps_source = self._steps(judge)
        low, high = self.score_range
        prompt = load_prompt("geval/score", self.score_prompt).render(
            fields={_label(p): _text(case.field_value(p)) for p in self.evaluation_params},
            criteria=self.criteria or "(see the steps)",
            steps=steps,
            parameters=_parameters(self.evaluation_params),
            low=low,
            high=high,
        )
        scores = {str(s): float(s) for s in range(low, high + 1)}
        reply = judge.candidate_distribution(
            DistributionRequest(messages=prompt.messages, prefill=prompt.prefill, candidates=tuple(scores))
        )
        expected = reply.distribution.expected_value(scores)
        return Verdict(
            score=scale_to_unit(expected, low, high),
            reason=_reason(reply.distribution, expected, low, high),
            details={
                "method": "logprobs",
                "expected_score": expected,
                "score_range": [low, high],
                "distribution": reply.distribution.probabilities,
                "covered_mass": reply.distribution.covered_mass,
                "evaluation_steps": list(steps),
                "steps_source": steps_source,
            },
        )

    def _steps(self, judge: Backend) -> tuple[tuple[str, ...], str]:
        if self.evaluation_steps:
            return self.evaluation_steps, "given"
        prompt = load_prompt("geval/steps", self.steps_prompt).render(
            criteria=self.criteria,
            parameters=_parameters(self.evaluation_params),
            max_steps=MAX_STEPS,
        )
        reply = judge.generate_json(
            JsonRequest(messages=prompt.messages, json_schema=STEPS_SCHEMA, max_tokens=768)
        )
        steps = tuple(s.strip() for s in reply.value["steps"] if s.strip())
        if not steps:
            raise BackendError("the judge wrote no evaluation steps")
        return steps, "generated"


def _label(field: str) -> str:
    return field.replace("_", " ").title()


def _parameters(params: tuple[str, ...]) -> str:
    labels = [_label(p) for p in params]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(f"- {getattr(v, 'name', v)}" for v in value)
    return str(value)


def _reason(dist: CandidateDistribution, expected: float, low: int, high: int) -> str:
    return (
        f"Expected score {expected:.2f} on {low}-{high} (most likely {dist.most_likely()}, "
        f"p={dist.probabilities[dist.most_likely()]:.2f}; the scores covered "
        f"{dist.covered_mass:.0%} of the judge's probability)."
    )
