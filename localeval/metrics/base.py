"""The metric contract: immutable configuration; ``measure`` returns a result, stores nothing."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from localeval.backends.base import Backend
from localeval.data.case import Case, ConversationalTestCase, TestCase
from localeval.data.results import MetricResult
from localeval.errors import (
    BackendError,
    MetricInputError,
    PartFailed,
    PromptError,
    ScoreError,
)


@dataclass(frozen=True)
class Verdict:
    """What a metric's scoring step returns: a score in [0, 1], a reason, the evidence.

    ``details["raw_score"]``, when a metric puts it there, is its own number before
    scaling or strict mode; the result carries it as ``MetricResult.raw_score``.

    ``passed`` is for a metric whose verdict is more than its score against its
    threshold (a composite also needs its parts to pass); None, the default, leaves
    it to :meth:`Metric.passes`.
    """

    score: float
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    passed: bool | None = None


def check_score(metric: str, score: object) -> None:
    """Raise :class:`ScoreError` unless ``score`` is a number in [0, 1] (a user's metric may return anything)."""
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
        raise ScoreError(f"metric '{metric}' gave the score {score!r}; a score is a number from 0 to 1")


def field_text(value: Any) -> str:
    """A test-case field as a prompt shows it: a list as "- item" lines (tools by name), None as ""."""
    if isinstance(value, list):
        return "\n".join(f"- {getattr(item, 'name', item)}" for item in value)
    return "" if value is None else str(value)


class Metric(BaseModel):
    """Base of every metric. Subclasses set ``kind`` and implement ``verdict``.

    A metric is configuration only: one instance may judge many cases, from
    several threads, because nothing about a case is kept on ``self``.

    ``case_type`` is the kind of case it judges: :class:`TestCase` (one input, one
    output) or :class:`ConversationalTestCase`. :meth:`check_case` refuses the
    other kind, so a run names the metric before any judge call. The hooks
    (``verdict``, ``prompt_start``) take ``case`` as ``Any``: each metric narrows
    it to its ``case_type``, which ``measure`` has checked.
    """

    kind: ClassVar[str]
    case_type: ClassVar[type[TestCase] | type[ConversationalTestCase]] = TestCase
    needs_judge: ClassVar[bool] = False
    #: Required fields for which an empty value is a value (``"tools_called": []``: nothing was
    #: called); absent (None) is still bad input.
    empty_allowed: ClassVar[tuple[str, ...]] = ()
    #: Passes when score <= threshold instead of >= (hallucination: a share of contradictions).
    lower_is_better: ClassVar[bool] = False
    #: How this metric turns the judge's replies into a score, as a number: raise it with any change that
    #: would change a score from the same replies (a formula, a rule for idk, a default). A judge check records
    #: it, and one made with another version no longer speaks for the metric (as one made with other prompts).
    scoring_version: ClassVar[int] = 1

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = Field(None, description="Shown in reports; defaults to the kind.")
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="Passes when score >= threshold.")
    threshold_source: str = Field(
        "configured",
        description="Where the threshold came from: 'configured' (given, or the metric's default); "
        "'calibrated' asks for the judge's checked threshold, which a run puts here with its provenance.",
    )
    judge_name: str | None = Field(
        None, alias="judge", description="The judge this metric asks: a [judges.NAME] table; None: [backend]."
    )

    @model_validator(mode="before")
    @classmethod
    def _calibrated_threshold(cls, data: Any) -> Any:
        """``threshold = "calibrated"``: the default threshold until a run reads the judge's check."""
        if isinstance(data, dict) and data.get("threshold") == "calibrated":
            default = cls.model_fields["threshold"].default
            return {**data, "threshold": default, "threshold_source": "calibrated"}
        return data

    @property
    def threshold_unresolved(self) -> bool:
        """The threshold is to be calibrated and no run has read the judge's check yet."""
        return self.threshold_source == "calibrated"

    @property
    def awaiting_check(self) -> str | None:
        """The option still to be read from the judge's check (``threshold 'calibrated'``), else None:
        a run reads it before any judge call (:func:`localeval.metaeval.trust.from_checks`)."""
        return "threshold 'calibrated'" if self.threshold_unresolved else None

    @property
    def display_name(self) -> str:
        return self.name or self.kind

    def required_fields(self) -> tuple[str, ...]:
        """Test-case fields that must be non-empty for this metric to score."""
        return ()

    def prepare(self, judge: Backend | None) -> Metric:
        """This metric ready to judge many cases: work shared by all of them done once.

        The default has none. G-Eval writes its evaluation steps here. A run calls
        it once before the first case; ``measure`` works without it too.
        """
        return self

    def verdict(self, case: Any, judge: Backend | None) -> Verdict:
        raise NotImplementedError

    def prompt_start(self, case: Any) -> str:
        """The text this metric's first judge call on ``case`` starts with, or a stand-in for it.

        A run sorts its calls by it, so that calls sharing a long prefix (the same
        document, the same criteria) run back to back and an in-process judge reads
        the shared part once. The default, the metric's kind and then its fields in
        order, suits a prompt that shows a fixed instruction and then those fields.
        """
        values = [field_text(case.field_value(name)) for name in self.required_fields()]
        return "\n".join([self.kind, *values])

    @classmethod
    def summarize(cls, results: list[MetricResult]) -> dict[str, Any]:
        """What this metric says about a whole run beyond pass rate and mean score, from its results.

        The run report keeps it in the metric's summary (``MetricSummary.details``).
        The default says nothing more; the arena ranks its contestants here.
        """
        return {}

    def passes(self, score: float) -> bool:
        return score <= self.threshold if self.lower_is_better else score >= self.threshold

    def measure(self, case: Case, judge: Backend | None = None) -> MetricResult:
        """Score one case. Expected failures become an error result, not an exception."""
        start = time.perf_counter()
        awaiting = self.awaiting_check  # a threshold or a reading nobody chose would decide the result
        if awaiting is not None:
            return self._result(error=f"metric '{self.display_name}': {awaiting} was never read from the judge's "
                                      "check (localeval.metaeval.trust.from_checks)", start=start)
        try:
            self.check_case(case)
            if self.needs_judge and judge is None:
                raise BackendError(f"metric '{self.display_name}' needs a judge backend")
            verdict = self.verdict(case, judge)
            check_score(self.display_name, verdict.score)
        except (MetricInputError, BackendError, PromptError, ScoreError, PartFailed) as err:
            details = err.details if isinstance(err, PartFailed) else {}
            return self._result(error=f"{type(err).__name__}: {err}", details=details, start=start)
        details = dict(verdict.details)
        raw = details.pop("raw_score", verdict.score)
        return self._result(
            score=verdict.score,
            raw_score=raw,
            passed=self.passes(verdict.score) if verdict.passed is None else verdict.passed,
            reason=verdict.reason,
            details=details,
            start=start,
        )

    def check_case(self, case: Case) -> None:
        """Raise :class:`MetricInputError` for a case of the other kind, or naming the first required
        field that is absent, or empty where ``empty_allowed`` does not allow it."""
        if not isinstance(case, self.case_type):
            conversations = self.case_type is ConversationalTestCase
            judged, given = ("conversations", "single-turn test cases") if conversations else (
                "single-turn test cases", "conversations")
            raise MetricInputError(
                self.display_name, "turns" if conversations else "input",
                f"metric '{self.display_name}' judges {judged}, not {given}",
                problem=f"judges {judged}, and this dataset holds {given}",
            )
        for name in self.required_fields():
            value = case.field_value(name)
            if value is None or (value in ("", []) and name not in self.empty_allowed):
                raise MetricInputError(self.display_name, name, absent=value is None)

    def _result(self, *, start: float, **fields: Any) -> MetricResult:
        return MetricResult(
            metric=self.display_name,
            kind=self.kind,
            threshold=self.threshold,
            threshold_source=self.threshold_source,
            lower_is_better=self.lower_is_better,
            duration_s=time.perf_counter() - start,
            **fields,
        )
