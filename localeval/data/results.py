"""What an evaluation produces: metric results, per-case results, and the run report."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localeval.backends.base import Fingerprint, JudgeUsage
from localeval.data.dataset import DatasetSource
from localeval.data.strict_json import REPORT_DEPTH, json_document
from localeval.errors import InputError, first_problem
from localeval.files import write_text_atomically
from localeval.stats import CONFIDENCE, Interval, mean_interval, wilson

#: The JSON report's format version. Readers refuse versions they do not know.
#: 2 added MetricResult.raw_score, lower_is_better and usage, RunStats' token counts and
#: RunReport.dataset; version 1 reports are read and brought up to 2 (:func:`upgrade_v1`).
REPORT_FORMAT = 2
READABLE_FORMATS = (1, 2)


class MetricResult(BaseModel):
    """One metric's verdict on one case.

    A metric that could not score (missing input, backend failure) has
    ``score`` and ``passed`` set to None and says why in ``error``; it never
    invents a number.
    """

    model_config = ConfigDict(frozen=True)

    metric: str = Field(description="The metric's name in this run.")
    kind: str = Field(description="The registered metric type, e.g. 'geval'.")
    score: float | None = Field(None, ge=0.0, le=1.0)
    raw_score: float | None = Field(
        None, description="The metric's own number before scaling or strict mode (G-Eval: on its score range)."
    )
    passed: bool | None = None
    threshold: float
    threshold_source: str = Field(
        "configured", description="Where the threshold came from: 'configured', or 'calibrated: …' with the check."
    )
    lower_is_better: bool = Field(False, description="Passes at score <= threshold instead of >=.")
    reason: str = ""
    details: dict[str, Any] = Field(default_factory=dict, description="The evidence.")
    error: str | None = None
    duration_s: float = 0.0
    usage: JudgeUsage | None = Field(None, description="What this result cost the judge; None when not measured.")

    @property
    def errored(self) -> bool:
        return self.error is not None


class CaseResult(BaseModel):
    """Every metric's result for one test case, in the order the metrics were given."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str | None = None
    location: str | None = Field(None, description="Where the case came from: 'file:line'.")
    inputs: dict[str, Any] = Field(
        default_factory=dict, description="The test case's non-empty fields, as judged."
    )
    results: list[MetricResult]
    target: str | None = Field(None, description="With several targets: the target whose output was judged.")


class ConfidenceInterval(BaseModel):
    """Where a run's figure would most likely lie over many more cases like these: its confidence interval."""

    model_config = ConfigDict(frozen=True)

    low: float
    high: float
    confidence: float = CONFIDENCE
    method: str = Field(description="'wilson' (a pass rate) or 'bootstrap BCa' (a mean; 9,999 seeded resamples).")

    @classmethod
    def of(cls, interval: Interval | None, method: str) -> ConfidenceInterval | None:
        return None if interval is None else cls(low=interval.low, high=interval.high, method=method)


class Counts(NamedTuple):
    """One metric's results counted: what a summary, a run listing and pytest's table all show."""

    passed: int
    failed: int
    errored: int
    scores: list[float]  #: the scored results' scores, for a mean and its interval

    @classmethod
    def of(cls, results: Sequence[MetricResult]) -> Counts:
        scored = [r for r in results if not r.errored]
        passed = sum(1 for r in scored if r.passed)
        return cls(passed, len(scored) - passed, len(results) - len(scored),
                   [r.score for r in scored if r.score is not None])

    @property
    def pass_rate(self) -> float | None:
        """passed / (passed + failed); None if none scored."""
        scored = self.passed + self.failed
        return self.passed / scored if scored else None

    @property
    def mean_score(self) -> float | None:
        return statistics.fmean(self.scores) if self.scores else None


class MetricSummary(BaseModel):
    """Aggregates of one metric over the run."""

    model_config = ConfigDict(frozen=True)

    metric: str
    cases: int
    passed: int
    failed: int
    errored: int
    pass_rate: float | None = Field(description="passed / (passed + failed); None if none scored.")
    mean_score: float | None = None
    pass_rate_interval: ConfidenceInterval | None = Field(
        None, description="pass_rate's 95% Wilson interval; None if none scored, and in reports written before it.")
    mean_score_interval: ConfidenceInterval | None = Field(
        None, description="mean_score's 95% bootstrap interval; None under 10 scores (stats.MIN_VALUES), and in older reports.")
    details: dict[str, Any] = Field(
        default_factory=dict, description="What the metric says about the whole run (the arena: its ranking)."
    )

    @classmethod
    def of(cls, metric: str, results: list[MetricResult], details: dict[str, Any] | None = None) -> MetricSummary:
        counts = Counts.of(results)
        return cls(
            metric=metric,
            cases=len(results),
            passed=counts.passed,
            failed=counts.failed,
            errored=counts.errored,
            pass_rate=counts.pass_rate,
            mean_score=counts.mean_score,
            pass_rate_interval=ConfidenceInterval.of(wilson(counts.passed, counts.passed + counts.failed), "wilson"),
            mean_score_interval=ConfidenceInterval.of(mean_interval(counts.scores), "bootstrap BCa"),
            details=details or {},
        )


class RunStats(BaseModel):
    """What the run cost. Counts are None when the run had no judge to count (or, in version 1
    reports, when the judge was not behind the cache)."""

    model_calls: int | None = None
    cache_hits: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    duration_s: float = 0.0
    resumed: int = Field(0, description="Results read back from the run's journal, not computed again.")


class TargetRecord(BaseModel):
    """What a report says about the target: who wrote the outputs, from which prompt, at what cost."""

    model_config = ConfigDict(frozen=True)

    name: str
    fingerprint: Fingerprint
    template_sha256: str = Field(description="sha256 of the prompt templates' text (see PromptTemplate.sha256).")
    settings: dict[str, object] = Field(default_factory=dict, description="temperature, max_tokens, seed, stop.")
    generated: int = Field(0, description="Outputs written in this run (by the model or from the cache).")
    resumed: int = Field(0, description="Outputs read back from the run's journal.")
    errored: int = 0
    given: int = Field(0, description="Cases that had an actual_output already: not generated.")
    duration_s: float = 0.0
    usage: JudgeUsage | None = Field(None, description="Model calls, cache hits and tokens of this run's generation.")
    errors: dict[int, str] = Field(default_factory=dict, description="Case index -> why it has no output.")


class ReadingHint(BaseModel):
    """The other way to read a family's verdicts (``verdict_reading``), and what the judge's check measured of it."""

    model_config = ConfigDict(frozen=True)

    verdict_reading: Literal["written", "weighted"]
    ordered: float = Field(description="Share of the planted pairs ordered read that way.")
    pairs: int


class FamilyTrust(BaseModel):
    """What a judge's check says of one metric family a run used (see ``localeval check-judge``)."""

    model_config = ConfigDict(frozen=True)

    family: str
    metrics: list[str] = Field(description="The run's metrics this family's check speaks for.")
    checked: bool = Field(description="The judge was checked on this family.")
    covered: bool = Field(True, description="False: no planted pairs exist for this kind of metric (named here).")
    ordered: float | None = Field(None, description="Share of planted pairs whose good variant scored better.")
    pairs: int = 0
    bad_failed: int = Field(0, description="Planted-bad variants that failed at the metric's default threshold.")
    good_passed: int = 0
    calibrated_threshold: float | None = None
    held_out_accuracy: float | None = Field(None, description="The calibrated threshold's accuracy on held-out pairs.")
    at_chance: bool = Field(False, description="Ordered fewer than 75% of the pairs: its verdicts here mean little.")
    other_reading: ReadingHint | None = Field(
        None, description="At chance here, but the check found the family's verdicts read the other way better than "
                          "chance: that reading and what it ordered.")
    outdated_prompts: list[str] = Field(
        default_factory=list,
        description="What the check used that has changed since (shipped prompts by name, 'KIND scoring' for the "
                    "metric's scoring_version): it no longer speaks for this family.")


class JudgeTrust(BaseModel):
    """How far to trust one judge of a run: its check, family by family, or that it has none."""

    model_config = ConfigDict(frozen=True)

    judge: str = Field(description="'backend' (the default judge) or the name of a [judges.NAME] table.")
    model: str
    checked_at: str | None = Field(None, description="When its check ran; None: never checked.")
    shipped_check: bool = Field(
        False, description="The check is the one localeval ships for this model file, not one of this judge."
    )
    families: list[FamilyTrust] = Field(default_factory=list)
    check_command: str = Field(description="The command that checks this judge.")
    markup: str | None = Field(
        None, description="Why this judge's backend cannot promise that chat markup in a case stays text; None: it can.")

    @property
    def at_chance(self) -> list[str]:
        return [f.family for f in self.families if f.at_chance]

    @property
    def unchecked(self) -> list[str]:
        return [f.family for f in self.families if f.covered and not f.checked and not f.outdated_prompts]

    @property
    def outdated(self) -> list[str]:
        return [f.family for f in self.families if f.outdated_prompts]

    @property
    def uncovered(self) -> list[str]:
        return [f.family for f in self.families if not f.covered]


#: A gate's rule: the least pass rate, or the least mean score, of a metric.
GateRule = Literal["min_pass_rate", "min_mean"]


class GateResult(BaseModel):
    """One gate of a run ([gate] or --min-pass-rate / --min-mean) against what the run reached."""

    model_config = ConfigDict(frozen=True)

    metric: str
    rule: GateRule
    required: float
    actual: float | None = Field(description="The run's pass rate or mean score; None: no case was scored.")
    passed: bool
    scored: int = Field(description="The cases the figure is over: those the metric scored (not errored).")
    low: float | None = Field(None, description="min_pass_rate: the 95% Wilson interval of the pass rate, for "
                                                "information (the gate compares the rate itself).")
    high: float | None = None


class RunReport(BaseModel):
    """The versioned JSON report of one run."""

    format_version: int = REPORT_FORMAT
    run_id: str
    created_at: str
    localeval_version: str
    config: dict[str, Any] = Field(default_factory=dict)
    dataset: DatasetSource | None = Field(None, description="The dataset file and its sha256.")
    backend: Fingerprint | None = Field(None, description="The default judge ([backend]).")
    judges: dict[str, Fingerprint] = Field(default_factory=dict, description="The named judges ([judges.NAME]).")
    cases: list[CaseResult]
    summary: list[MetricSummary]
    stats: RunStats = RunStats()
    targets: list[TargetRecord] = Field(
        default_factory=list, description="The targets that wrote the outputs ([target] or [[targets]])."
    )
    target_summaries: dict[str, list[MetricSummary]] = Field(
        default_factory=dict, description="With several targets: each target's summaries, by target name."
    )
    trust: list[JudgeTrust] = Field(
        default_factory=list, description="Each judge's check on the metric families this run used."
    )
    name: str | None = Field(None, description="The run's name (--name, or the config's name).")
    tags: list[str] = Field(default_factory=list, description="The run's tags (--tag, or the config's tags).")
    config_sha256: str | None = Field(
        None, description="sha256 of the settings that can change a score (RunConfig.scoring_sha256): runs of the "
                          "same config and dataset share it.")
    gates: list[GateResult] = Field(default_factory=list, description="Each gate and whether the run reached it.")

    @property
    def any_failed(self) -> bool:
        return any(s.failed for s in self.summary)

    @property
    def any_errored(self) -> bool:
        return any(s.errored for s in self.summary)

    def to_json(self) -> str:
        """The report as the JSON text of ``report.json``."""
        return self.model_dump_json(indent=2) + "\n"

    def save(self, path: Path) -> None:
        """Write the report atomically: a crash never leaves half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> RunReport:
        """A ``report.json`` read back, strictly (:mod:`localeval.data.strict_json`): what the reports
        could not write again (a key given twice, a lone surrogate, nesting past ``REPORT_DEPTH``) is an
        ``InputError`` naming the line and the field."""
        try:
            raw = json_document(path.read_text(encoding="utf-8"), str(path), max_depth=REPORT_DEPTH)
        except OSError as err:
            raise InputError(f"{path}: cannot read report ({err.strerror})") from err
        except UnicodeDecodeError as err:
            raise InputError(f"{path}: cannot read report (not UTF-8: {err.reason})") from None
        except json.JSONDecodeError as err:
            raise InputError(f"{path}:{err.lineno}: not JSON ({err.msg})") from err
        version = raw.get("format_version") if isinstance(raw, dict) else None
        if version not in READABLE_FORMATS:
            known = " or ".join(map(str, READABLE_FORMATS))
            raise InputError(f"{path}: report format {version!r} is not {known}")
        try:
            return cls.model_validate(upgrade_v1(raw) if version == 1 else raw)
        except ValidationError as err:
            where, message = first_problem(err)
            raise InputError(f"{path}: field '{where}': {message}") from err


def upgrade_v1(raw: dict[str, Any]) -> dict[str, Any]:
    """A version 1 report as version 2: what version 2 records as fields, read back from the results.

    Version 1 kept the raw score in ``details["raw_score"]`` (where a metric had one) and did
    not record the pass rule: it is inferred from a result that shows it (a failure, or a pass
    off the threshold) and applied to every result of that metric.
    """
    cases = [dict(case, results=[dict(r) for r in case.get("results", [])]) for case in raw.get("cases", [])]
    results = [r for case in cases for r in case["results"]]
    lower = {r.get("metric") for r in results if _shows_lower_is_better(r)}
    for result in results:
        details = dict(result.get("details") or {})
        result["raw_score"] = details.pop("raw_score", result.get("score"))
        result["details"] = details
        result["lower_is_better"] = result.get("metric") in lower
    return {**raw, "format_version": REPORT_FORMAT, "cases": cases}


def _shows_lower_is_better(result: dict[str, Any]) -> bool:
    score, passed, threshold = result.get("score"), result.get("passed"), result.get("threshold")
    if score is None or passed is None or threshold is None or score == threshold:
        return False
    return bool((score > threshold) != passed)
