"""G-Eval: criteria → evaluation steps → a probability-weighted score.

Scoring methods, chosen explicitly and recorded in every result:

* ``logprobs`` (default): the expected value Σ p(s)·s of the judge's distribution
  over the valid scores, read in one forward pass right after the prompt's
  prefill (``Score: ``), renormalized over the valid scores. The covered mass
  (what the valid scores had before renormalizing) is reported, and one below
  ``min_covered_mass`` is an error: the judge was not writing a score there.
* ``top``: the most likely valid score of the same distribution (the paper's
  "-Probs" ablation); at a tie, the lowest of the tied scores.
* ``sampling``: the mean of ``samples`` scores sampled at ``temperature`` as
  schema-constrained JSON, seeds ``seed``, ``seed + 1``, … (so cacheable);
  fewer than half valid is an error. The fallback for backends without
  log-probabilities — taken only when ``allow_fallback`` is set, and recorded.

``strict_mode`` scores 1 only when the judge favours 1: p(1) > 0.5 (``logprobs``),
1 strictly more likely than 0 (``top``), a sampled mean above 0.5 (``sampling``).
An exact tie is not a verdict of 1, so every method scores it 0, and fails it.

The reason, when asked for, is written by the judge *after* scoring, as a
follow-up to the score prompt, and is told the score, so the score never
depends on it (:mod:`localeval.metrics.judged`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from localeval.backends.base import Backend, JsonRequest
from localeval.data.case import CASE_FIELDS
from localeval.distribution import scale_to_unit
from localeval.errors import PromptError, SchemaViolation, TruncatedOutput
from localeval.metrics.base import field_text
from localeval.metrics.criteria import (
    MAX_STEPS,
    STEPS_SCHEMA,
    CriteriaMetric,
    Scoring,
    field_label,
    join_labels,
    read_distribution,
    sampled_mean,
)
from localeval.metrics.judged import Exchange, Judgement, format_score
from localeval.prompts import RenderedPrompt, load_prompt

MAX_SCORE = 100

#: The order of the score prompt. ``criteria_first``: criteria, steps and rubric, then the case, as
#: in the G-Eval paper; the instructions are a prefix every case shares, so a run over many cases
#: reads them once. ``case_first``: the case, then the instructions; several G-Evals of one case
#: share the case as their prefix, so a run scoring one case on several criteria reads it once.
Layout = Literal["criteria_first", "case_first"]


class RubricItem(BaseModel):
    """What an output scoring within ``score_range`` looks like."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score_range: tuple[int, int]
    expected_outcome: str


class GEval(CriteriaMetric):
    """Judge a case against free-text criteria with a local model.

    The options it shares with the arena (criteria, steps, scoring, sampling) are
    :class:`~localeval.metrics.criteria.CriteriaMetric`'s.

    A variant for another kind of case (:class:`~localeval.metrics.conversational.geval.ConversationalGEval`)
    sets ``score_template``, ``parameter_names`` and overrides :meth:`shown_fields`.
    """

    kind = "geval"
    prompt_folder = "geval"
    #: The score prompt (under prompts/); the steps and reason prompts are G-Eval's for every variant.
    score_template: ClassVar[str] = "geval/score"
    #: What ``evaluation_params`` and ``field_labels`` may name.
    parameter_names: ClassVar[tuple[str, ...]] = CASE_FIELDS
    parameter_noun: ClassVar[str] = "test-case fields"
    #: Kept from before the shared base, so G-Eval's reason requests (and cached replies) stay the same.
    reason_tokens = 256

    evaluation_params: tuple[str, ...] = Field(
        ("input", "actual_output"), description="The test-case fields the judge sees."
    )
    rubric: tuple[RubricItem, ...] = ()
    layout: Layout = Field(
        "criteria_first", description="criteria_first (many cases, one criterion) or case_first (many criteria)."
    )
    score_range: tuple[int, int] = Field((1, 5), description="Lowest and highest integer score.")
    strict_mode: bool = Field(
        False, description="Binary: scores 0/1, 1 only when the judge favours 1 (a tie is 0); threshold 1."
    )
    score_prompt: Path | None = Field(None, description="Your own prompt file for the score.")

    @classmethod
    def strict_options(cls) -> dict[str, Any]:
        """Strict mode scores 0 or 1 and passes only on 1."""
        return {"score_range": (0, 1), "threshold": 1.0}

    @model_validator(mode="after")
    def _check(self) -> GEval:
        for option, names in (("evaluation_params", self.evaluation_params), ("field_labels", self.field_labels)):
            unknown = [p for p in names if p not in self.parameter_names]
            if unknown:
                raise ValueError(f"{option} must name {self.parameter_noun}, got {unknown}")
        if not self.evaluation_params:
            raise ValueError("evaluation_params must name at least one test-case field")
        low, high = self.score_range
        if not 0 <= low < high <= MAX_SCORE:
            raise ValueError(f"score_range must satisfy 0 <= low < high <= {MAX_SCORE}, got {low}-{high}")
        for item in self.rubric:
            a, b = item.score_range
            if not low <= a <= b <= high:
                raise ValueError(f"rubric range {a}-{b} is outside score_range {low}-{high}")
        # A score in two ranges would get two expected outcomes: the judge is told two things of one score.
        ranges = sorted(item.score_range for item in self.rubric)
        for (a, b), (c, d) in zip(ranges, ranges[1:]):
            if c <= b:  # sorted by start: any overlap shows between neighbours
                both = f"{c}" if c == min(b, d) else f"{c}-{min(b, d)}"
                raise ValueError(f"rubric ranges {a}-{b} and {c}-{d} overlap (both hold {both})")
        return self

    def required_fields(self) -> tuple[str, ...]:
        return self.evaluation_params

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        """The score, with the evaluation steps written first if this metric was not prepared."""
        return self.prepare(judge)._score_prepared(case, judge)

    def prompt_start(self, case: Any) -> str:
        """The score prompt itself: the case's fields come first, so calls on one case share them."""
        try:
            prompt = load_prompt(self.score_template, self.score_prompt).render(**self._variables(case))
        except PromptError:
            return super().prompt_start(case)  # the run reports it when it measures the case
        return "\n".join(m.content for m in prompt.messages)

    # -- scoring -----------------------------------------------------------------------

    def _score_prepared(self, case: Any, judge: Backend) -> Judgement:
        variables = self._variables(case)
        prompt = load_prompt(self.score_template, self.score_prompt).render(**variables)
        method, fallback = self.scoring_on(judge)
        if method == "sampling":
            raw, evidence = self._sample(prompt, judge)
        else:
            raw, evidence = self._distribution(prompt, judge, method)
        low, high = self.score_range
        details = {
            "method": method,
            **({"fallback": fallback} if fallback else {}),
            "score_range": [low, high],
            **evidence,
            "evaluation_steps": list(self.evaluation_steps or ()),
            "steps_source": self.steps_source,
        }
        return Judgement(
            score=raw,
            summary=_summary(method, raw, evidence, low, high),
            details=details,
            # The reason continues from "Score: <raw>": the score as the judge is told it.
            conversation=Exchange(prompt, format_score(raw)),
            reason_variables=variables,
        )

    def final_score(self, raw: float) -> float:
        """The raw score scaled from ``score_range`` to [0, 1]; strict mode: 1.0 only when raw > 0.5.

        A tie (p(1) = 0.5) is 0, as ``top`` breaks it toward the lower score: one rule for every method.
        """
        low, high = self.score_range
        return float(raw > 0.5) if self.strict_mode else scale_to_unit(raw, low, high)

    def _distribution(self, prompt: RenderedPrompt, judge: Backend, method: Scoring) -> tuple[float, dict[str, Any]]:
        scores = self._scores()
        dist = read_distribution(judge, prompt, scores, self.min_covered_mass, what="the valid scores",
                                 position="score", prune_below=self.prune_below)
        top = most_likely_score(dist.probabilities, scores)
        raw = dist.expected_value(scores) if method == "logprobs" else top
        evidence = {
            "expected_score": dist.expected_value(scores),
            "most_likely_score": top,
            "distribution": dist.probabilities,
            "covered_mass": dist.covered_mass,
            "unread_mass": dist.unread_mass,
        }
        return raw, evidence

    def _sample(self, prompt: RenderedPrompt, judge: Backend) -> tuple[float, dict[str, Any]]:
        low, high = self.score_range
        schema = {
            "type": "object",
            "properties": {"score": {"type": "integer", "enum": list(range(low, high + 1))}},
            "required": ["score"],
            "additionalProperties": False,
        }
        samples: list[int | None] = []
        for i in range(self.samples):
            request = JsonRequest(
                messages=prompt.messages, json_schema=schema, max_tokens=32,
                temperature=self.temperature, seed=self.seed + i,
            )
            try:
                samples.append(int(judge.generate_json(request).value["score"]))
            except (SchemaViolation, TruncatedOutput):
                samples.append(None)
        mean = sampled_mean(samples)
        return mean, {"samples": samples, "temperature": self.temperature}

    def _scores(self) -> dict[str, float]:
        low, high = self.score_range
        return {str(s): float(s) for s in range(low, high + 1)}

    # -- prompts -----------------------------------------------------------------------

    def shown_fields(self, case: Any) -> dict[str, str]:
        """What the judge sees of ``case``: each label (e.g. "Actual Output") and its text, in order."""
        return {self._label(p): field_text(case.field_value(p)) for p in self.evaluation_params}

    def _variables(self, case: Any) -> dict[str, Any]:
        """What the score and reason prompts see."""
        low, high = self.score_range
        fields = self.shown_fields(case)
        return {
            "fields": fields,
            "criteria": self.criteria or "",
            "steps": self.evaluation_steps or (),
            "rubric": [(r.score_range[0], r.score_range[1], r.expected_outcome) for r in self.rubric],
            "parameters": join_labels(list(fields)),
            "layout": self.layout,
            "low": low,
            "high": high,
        }

    def shown_labels(self) -> list[str]:
        """The labels of what the judge sees, as the steps prompt names them."""
        return [self._label(p) for p in self.evaluation_params]

    def _label(self, field: str) -> str:
        return field_label(field, self.field_labels)


def most_likely_score(probabilities: dict[str, float], scores: dict[str, float]) -> float:
    """The score the judge finds most likely; a tie goes to the lowest tied score.

    Not the candidates' order (a backend may return them in any): a tie is no
    verdict for the higher score, the same rule as strict mode's p(1) > 0.5.
    """
    best = max(probabilities.values())
    return min(scores[c] for c, p in probabilities.items() if p == best)


def _summary(method: str, raw: float, evidence: dict[str, Any], low: int, high: int) -> str:
    if method == "sampling":
        valid = [s for s in evidence["samples"] if s is not None]
        return f"Mean of {len(valid)} valid sampled scores: {raw:.2f} on {low}-{high}."
    return (
        f"{'Expected' if method == 'logprobs' else 'Most likely'} score {raw:.2f} on {low}-{high} "
        f"(the valid scores covered {evidence['covered_mass']:.0%} of the judge's probability)."
    )



#: Names other modules and tests take from here; the shared ones live in :mod:`localeval.metrics.criteria`.
__all__ = ["MAX_STEPS", "STEPS_SCHEMA", "GEval", "Layout", "RubricItem", "Scoring", "most_likely_score", "sampled_mean"]
