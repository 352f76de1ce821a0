"""What the metrics that judge against free-text criteria share (G-Eval, the arena).

* their options, declared once in :class:`CriteriaMetric`: the criteria or the
  evaluation steps, how fields are labelled, the scoring method and its fallback,
  the sampling settings, the steps prompt;
* evaluation steps written once from the criteria (:func:`generate_steps`, the
  prompt ``geval/steps``), so a run over many cases judges them by the same steps;
* the choice of scoring method: log-probabilities when the backend gives them,
  sampling otherwise only when the user allows the fallback, recorded
  (:func:`scoring_method`);
* the mean of sampled verdicts (:func:`sampled_mean`) and how fields are named in
  prompts (:func:`field_label`, :func:`join_labels`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from localeval.backends.base import Backend, DistributionRequest, JsonRequest
from localeval.distribution import MAX_PRUNE_BELOW, PRUNE_BELOW, CandidateDistribution
from localeval.errors import BackendError
from localeval.metrics.judged import JudgedMetric
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
    steps = tuple(step for step in (unnumbered(s) for s in reply.value["steps"]) if step)
    if not steps:
        raise BackendError("the judge wrote no evaluation steps")
    return steps


#: A list marker a judge may start a step with, though the prompts and reports number the steps
#: themselves: "1.", "2)", "Step 3:", "-", "*", "•" (and the space after it).
_ENUMERATOR = re.compile(r"(?:(?:step\s*)?\d{1,2}\s*[.):]|[-*•])\s+", re.IGNORECASE)


def unnumbered(step: str) -> str:
    """A generated step without the enumerator it was written with, so it is not numbered twice
    ("1. 1. Check …"); "1.5 litres is …" keeps its number (no space after the point)."""
    step = step.strip()
    marker = _ENUMERATOR.match(step)
    return step[marker.end():].strip() if marker else step


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


#: A metric's ``prune_below`` option: how unlikely a reply prefix may be and still be read.
PruneBelow = Annotated[float, Field(
    ge=0.0, le=MAX_PRUNE_BELOW, description="A reply prefix less likely than this is not read when a score is read as whole "
    "answers (a 0-10 or 0-100 score reads one position per prefix); the score then moves by less than "
    "unread_mass / covered_mass of its range (both in details). 1e-9: every prefix that counts.",
)]


def read_distribution(judge: Backend, prompt: RenderedPrompt, candidates: Iterable[str], min_covered_mass: float,
                      *, what: str, position: str, prune_below: float = PRUNE_BELOW) -> CandidateDistribution:
    """The judge's distribution over ``candidates`` right after the prompt's prefill.

    Below ``min_covered_mass`` the judge was not writing one of them there, and the reading is
    an error naming ``what`` the candidates are ("the valid scores") and the ``position`` ("score").
    ``prune_below``: the request's (see :class:`DistributionRequest`).
    """
    reply = judge.candidate_distribution(
        DistributionRequest(messages=prompt.messages, prefill=prompt.prefill, candidates=tuple(candidates),
                            prune_below=prune_below)
    )
    dist = reply.distribution
    if dist.covered_mass < min_covered_mass:
        raise BackendError(
            f"{what} covered {dist.covered_mass:.1%} of the judge's probability at the {position} "
            f"position (min_covered_mass {min_covered_mass:.0%}): the judge was not writing a {position} "
            "there; check the prompt and the model's chat format"
        )
    return dist


class CriteriaMetric(JudgedMetric):
    """The options of a metric that judges against free-text criteria, declared once (G-Eval, the arena).

    A subclass adds what it judges (``evaluation_params``, its rubric), may narrow
    ``scoring`` to the methods it has, and names the fields the steps prompt lists
    (:meth:`shown_labels`); :meth:`prepare` writes the steps once per run.
    """

    criteria: str | None = Field(None, description="What a good (or a better) output is, in plain words.")
    evaluation_steps: tuple[str, ...] | None = Field(
        None, description="How to check the criteria; generated once per run from them when absent."
    )
    steps_source: Literal["given", "generated"] = Field(
        "given", description="Set by prepare(); not an option to give."
    )
    field_labels: dict[str, str] = Field(
        default_factory=dict, description="How the prompt names a field, e.g. input -> 'Source Document'."
    )
    scoring: Scoring = Field(
        "logprobs",
        description="logprobs: from the judge's distribution; top (G-Eval): its most likely score; "
        "sampling: the mean of sampled verdicts.",
    )
    allow_fallback: bool = Field(
        False, description="Use sampling when the backend has no log-probabilities (recorded)."
    )
    min_covered_mass: float = Field(
        0.1, ge=0.0, le=1.0, description="Below this, a verdict read from log-probabilities is an error."
    )
    prune_below: PruneBelow = PRUNE_BELOW
    # 20, the G-Eval paper's n, for both: G-Eval had 20 and the arena 10 (per order). G-Eval's is kept
    # because its sampled scores are the ones recorded (the alignment tables sample 20, meta-eval's and
    # the synthesizer's filter use the default) and it is the metric most configs sample with; an arena
    # that samples now reads 20 verdicts per order. Scores read from log-probabilities (the default,
    # and the golden example run's) do not depend on it.
    samples: int = Field(20, ge=1, le=200, description="sampling: verdicts sampled per score (the arena: per order).")
    temperature: float = Field(1.0, gt=0.0, description="sampling: the temperature of every sample.")
    seed: int = Field(0, description="sampling: the first sample's seed, the next ones count up (so they are cached).")
    steps_prompt: Path | None = Field(None, description="Your own prompt file for the steps.")

    @model_validator(mode="after")
    def _criteria_or_steps(self) -> Self:
        if not self.criteria and not self.evaluation_steps:
            raise ValueError("give criteria or evaluation_steps")
        return self

    def shown_labels(self) -> list[str]:
        """What the judge sees, as the steps prompt names it ("Input", "Actual Output")."""
        raise NotImplementedError

    def prepare(self, judge: Backend | None) -> Self:
        """This metric with its evaluation steps written, so a run generates them once."""
        if self.evaluation_steps or judge is None:
            return self
        steps = generate_steps(judge, self.criteria, join_labels(self.shown_labels()), self.steps_prompt)
        return self.model_copy(update={"evaluation_steps": steps, "steps_source": "generated"})

    def scoring_on(self, judge: Backend) -> tuple[Scoring, str | None]:
        """The method this metric scores with on ``judge``, and the fallback taken (:func:`scoring_method`)."""
        return scoring_method(self.scoring, self.allow_fallback, judge)
