"""What the metrics that judge against free-text criteria share (G-Eval, the arena).

* evaluation steps written once from the criteria (:func:`generate_steps`, the
  prompt ``geval/steps``), so a run over many cases judges them by the same steps;
* the choice of scoring method: log-probabilities when the backend gives them,
  sampling otherwise only when the user allows the fallback, recorded
  (:func:`scoring_method`);
* the mean of sampled verdicts (:func:`sampled_mean`) and how fields are named in
  prompts (:func:`field_label`, :func:`join_labels`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from localeval.backends.base import Backend, DistributionRequest, JsonRequest
from localeval.distribution import CandidateDistribution
from localeval.errors import BackendError
from localeval.prompts import RenderedPrompt, load_prompt

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

Scoring = Literal["logprobs", "top", "sampling"]


def generate_steps(judge: Backend, criteria: str | None, parameters: str, prompt: Path | None = None) -> tuple[str, ...]:
    """Evaluation steps for ``criteria`` that use only ``parameters`` (the fields' labels), by the judge."""
    rendered = load_prompt("geval/steps", prompt).render(
        criteria=criteria, parameters=parameters, max_steps=MAX_STEPS
    )
    reply = judge.generate_json(JsonRequest(messages=rendered.messages, json_schema=STEPS_SCHEMA, max_tokens=768))
    steps = tuple(s.strip() for s in reply.value["steps"] if s.strip())
    if not steps:
        raise BackendError("the judge wrote no evaluation steps")
    return steps


def scoring_method(requested: Scoring, allow_fallback: bool, judge: Backend) -> tuple[Scoring, str | None]:
    """The method to score with on ``judge``, and the fallback taken (None when none was).

    A method that reads log-probabilities needs a backend that gives them; without
    them, sampling is used only when ``allow_fallback`` says so, and the result
    records it. Otherwise it is an error naming both ways out.
    """
    if requested == "sampling" or judge.capabilities.distribution:
        return requested, None
    if not allow_fallback:
        raise BackendError(
            f"scoring '{requested}' needs log-probabilities, which this backend "
            f"({judge.fingerprint.kind}) does not give; set scoring = 'sampling', or "
            "allow_fallback = true to fall back to it"
        )
    return "sampling", f"{requested} -> sampling: the backend gives no log-probabilities"


def sampled_mean(samples: Sequence[float | None]) -> float:
    """The mean of the valid samples (None: invalid); an error when fewer than half are valid."""
    valid = [s for s in samples if s is not None]
    if not samples or len(valid) * 2 < len(samples):
        raise BackendError(f"only {len(valid)} of {len(samples)} sampled scores were valid")
    return statistics.fmean(valid)


def field_label(field: str, labels: Mapping[str, str]) -> str:
    """How a prompt names a test-case field: the user's label, else 'Expected Output' for expected_output."""
    return labels.get(field) or field.replace("_", " ").title()


def join_labels(labels: Sequence[str]) -> str:
    """'Input', 'Input and Context', 'Input, Context and Expected Output'."""
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def read_distribution(judge: Backend, prompt: RenderedPrompt, candidates: Iterable[str], min_covered_mass: float,
                      *, what: str, position: str) -> CandidateDistribution:
    """The judge's distribution over ``candidates`` right after the prompt's prefill.

    Below ``min_covered_mass`` the judge was not writing one of them there, and the reading is
    an error naming ``what`` the candidates are ("the valid scores") and the ``position`` ("score").
    """
    reply = judge.candidate_distribution(
        DistributionRequest(messages=prompt.messages, prefill=prompt.prefill, candidates=tuple(candidates))
    )
    dist = reply.distribution
    if dist.covered_mass < min_covered_mass:
        raise BackendError(
            f"{what} covered {dist.covered_mass:.1%} of the judge's probability at the {position} "
            f"position (min_covered_mass {min_covered_mass:.0%}): the judge was not writing a {position} "
            "there; check the prompt and the model's chat format"
        )
    return dist
