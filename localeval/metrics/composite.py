"""Composite metrics: one score from several metrics' scores (the min of faithfulness and relevancy...).

Each part is measured on the case as it would be alone; the composite's score is
the ``aggregate`` of the parts' scores, each read so that higher is better (a
lower-is-better part such as hallucination counts as 1 - score). The parts'
results are the evidence. A part that cannot score makes the composite's result
an error that names it: a composite never scores on fewer parts than it has.

A composite passes when every part passes on its own (by the part's threshold and
pass rule) and the aggregate reaches the composite's threshold. Without the first
condition, "the min of faithfulness and relevancy" at 0.6 would pass a threshold
of 0.5 while faithfulness, at threshold 0.9, fails: the composite would hide the
failure it was built to catch. ``require_parts_pass = false`` drops it, for an
aggregate that is meant to let a strong part make up for a weak one.
"""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import Field, SerializeAsAny, ValidationInfo, field_validator, model_validator

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase, TestCase
from localeval.data.results import MetricResult
from localeval.errors import PartFailed
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.registry import build_metric

Aggregate = Literal["min", "max", "mean", "weighted_mean"]


class Composite(Metric):
    """Scores ``aggregate`` over ``metrics``; config: ``metrics = [{metric = "faithfulness"}, ...]``."""

    kind = "composite"

    metrics: list[SerializeAsAny[Metric]] = Field(min_length=1, description="The parts, measured in order.")
    aggregate: Aggregate = "min"
    weights: list[float] | None = Field(None, description="weighted_mean: one non-negative weight per part.")
    require_parts_pass: bool = Field(
        True, description="Pass only when every part passes too; false: the aggregate alone decides."
    )

    @field_validator("metrics", mode="before")
    @classmethod
    def _build(cls, parts: Any, info: ValidationInfo) -> Any:
        if not isinstance(parts, list):
            return parts
        built = []
        for i, part in enumerate(parts, start=1):
            if isinstance(part, dict):
                options = dict(part)
                kind = options.pop("metric", None)
                if not isinstance(kind, str):
                    raise ValueError(f"part {i}: the 'metric' key (its type, e.g. 'faithfulness') is missing")  # noqa: TRY004 -- pydantic reports ValueError
                part = build_metric(kind, options, where=f"part {i}", folder=(info.context or {}).get("base"))
            built.append(part)
        return built

    @model_validator(mode="after")
    def _check(self) -> Composite:
        names = [m.display_name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"two parts are named alike ({', '.join(names)}); give each a distinct name")
        if self.aggregate == "weighted_mean":
            if self.weights is None or len(self.weights) != len(self.metrics):
                raise ValueError("weighted_mean needs one weight per part in 'weights'")
            if min(self.weights) < 0 or sum(self.weights) <= 0:
                raise ValueError("weights must be non-negative and not all zero")
        elif self.weights is not None:
            raise ValueError(f"'weights' is only for aggregate = 'weighted_mean', not {self.aggregate!r}")
        if len({m.case_type for m in self.metrics}) > 1:
            raise ValueError("the parts judge different kinds of case (single-turn test cases and conversations)")
        return self

    @property
    def needs_judge(self) -> bool:  # type: ignore[override]
        return any(m.needs_judge for m in self.metrics)

    @property
    def case_type(self) -> type[TestCase] | type[ConversationalTestCase]:  # type: ignore[override]
        """The kind of case the parts judge (all the same: checked when built)."""
        return self.metrics[0].case_type

    def required_fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for m in self.metrics for f in m.required_fields()))

    def prepare(self, judge: Backend | None) -> Composite:
        return self.model_copy(update={"metrics": [m.prepare(judge) for m in self.metrics]})

    def prompt_start(self, case: Any) -> str:
        return self.metrics[0].prompt_start(case)

    def verdict(self, case: Any, judge: Backend | None) -> Verdict:
        results = [m.measure(case, judge) for m in self.metrics]
        details: dict[str, Any] = {"aggregate": self.aggregate, "parts": [r.model_dump() for r in results]}
        failed = next((r for r in results if r.errored), None)
        if failed is not None:
            raise PartFailed(f"part '{failed.metric}' could not score: {failed.error}", details)
        scores = [r.score for r in results if r.score is not None]  # none is None: none errored
        oriented = [1.0 - s if m.lower_is_better else s for m, s in zip(self.metrics, scores)]
        score = combine(self.aggregate, oriented, self.weights)
        parts = ", ".join(f"{r.metric} {r.score:.2f}" for r in results)
        reason = f"{self.aggregate} of {parts}"
        failing = [(r, s) for r, s in zip(results, scores) if not r.passed] if self.require_parts_pass else []
        if failing:
            details["failed_parts"] = [r.metric for r, _ in failing]
            reason += "; failed on its own: " + ", ".join(_failure(r, s) for r, s in failing)
        return Verdict(score=score, reason=reason, details=details, passed=self.passes(score) and not failing)


def _failure(result: MetricResult, score: float) -> str:
    """``faithfulness 0.60 < threshold 0.90``: why a part failed, by its own pass rule."""
    sign = ">" if result.lower_is_better else "<"
    return f"{result.metric} {score:.2f} {sign} threshold {result.threshold:.2f}"


def combine(aggregate: Aggregate, scores: list[float], weights: list[float] | None = None) -> float:
    """The aggregate of higher-is-better scores in [0, 1]."""
    if aggregate == "min":
        return min(scores)
    if aggregate == "max":
        return max(scores)
    if aggregate == "mean":
        return statistics.fmean(scores)
    if weights is None:
        raise ValueError("weighted_mean needs weights")
    return sum(w * s for w, s in zip(weights, scores)) / sum(weights)
