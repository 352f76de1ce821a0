"""What changed between two runs: regressions, fixes, moved scores, new errors. Pure, no I/O.

Cases are matched by name when every case of both runs has a name and no name
repeats within a run; otherwise by index (position in the dataset). Metrics
are matched by name. Each (case, metric) pair yields at most one change, the
first of these that applies:

========== ===============================================================
errored    scored in A, errored in B
recovered  errored in A, scored in B
regression passed in A, failed in B
fix        failed in A, passed in B
score      same verdict, but the score moved by more than the tolerance
added      the result is only in B (a case only in B has ``metric=None``)
removed    the result is only in A (a case only in A has ``metric=None``)
========== ===============================================================

A metric in only one run is listed in ``metrics_only_in_a``/``_b`` rather
than as one change per case.

Each report records the dataset file it judged and its sha256; ``same_dataset``
says whether the two runs judged the same data, since cases matched by index
across different files compare unrelated cases.
"""

from __future__ import annotations

import statistics
from typing import Literal

from pydantic import BaseModel, ConfigDict

from localeval.data.dataset import DatasetSource
from localeval.data.results import CaseResult, MetricResult, RunReport
from localeval.errors import InputError

ChangeKind = Literal["errored", "recovered", "regression", "fix", "score", "added", "removed"]


class Change(BaseModel):
    """One difference between run A and run B."""

    model_config = ConfigDict(frozen=True)

    kind: ChangeKind
    case: str
    metric: str | None = None
    score_a: float | None = None
    score_b: float | None = None
    error: str | None = None

    @property
    def delta(self) -> float | None:
        """B's score minus A's, when both scored."""
        if self.score_a is None or self.score_b is None:
            return None
        return self.score_b - self.score_a


class MetricComparison(BaseModel):
    """One metric's changes, and its mean score over the cases scored in both runs."""

    model_config = ConfigDict(frozen=True)

    metric: str
    compared: int
    regressions: int = 0
    fixes: int = 0
    score_changes: int = 0
    errored: int = 0
    recovered: int = 0
    mean_a: float | None = None
    mean_b: float | None = None
    mean_delta: float | None = None


class Comparison(BaseModel):
    """Every change from run A to run B, and a summary per metric."""

    model_config = ConfigDict(frozen=True)

    run_a: str
    run_b: str
    matched_by: Literal["name", "index"]
    tolerance: float
    cases_compared: int
    changes: list[Change]
    metrics: list[MetricComparison]
    metrics_only_in_a: list[str]
    metrics_only_in_b: list[str]
    cases_in_a: int
    cases_in_b: int
    dataset_a: DatasetSource | None = None  #: what run A judged; None in reports from before it was recorded
    dataset_b: DatasetSource | None = None

    @property
    def same_dataset(self) -> bool | None:
        """Whether both runs judged the same data; None when that cannot be told.

        Different sha256s, or different numbers of cases, mean different data.
        Without a sha256 (an older report), equal case counts prove nothing.
        """
        if self.cases_in_a != self.cases_in_b:
            return False
        if self.dataset_a is None or self.dataset_b is None:
            return None
        return self.dataset_a.sha256 == self.dataset_b.sha256

    def count(self, kind: ChangeKind) -> int:
        """How many changes of ``kind`` there are (for ``added``/``removed``, results and cases)."""
        return sum(1 for c in self.changes if c.kind == kind)

    @property
    def cases_only_in_a(self) -> list[str]:
        return [c.case for c in self.changes if c.kind == "removed" and c.metric is None]

    @property
    def cases_only_in_b(self) -> list[str]:
        return [c.case for c in self.changes if c.kind == "added" and c.metric is None]

    @property
    def has_regressions(self) -> bool:
        """Whether any result went from pass to fail: the exit-code question."""
        return any(c.kind == "regression" for c in self.changes)

    @property
    def has_new_errors(self) -> bool:
        """Whether any result that scored in A errored in B."""
        return any(c.kind == "errored" for c in self.changes)


def compare(a: RunReport, b: RunReport, *, tolerance: float = 0.0) -> Comparison:
    """The changes from run ``a`` to run ``b``; a score change counts when ``|b - a| > tolerance``."""
    if not 0.0 <= tolerance <= 1.0:
        raise InputError(f"tolerance must be between 0 and 1, got {tolerance}")
    by_name = names_are_keys(a) and names_are_keys(b)
    cases_a = {case_key(c, by_name): c for c in a.cases}
    cases_b = {case_key(c, by_name): c for c in b.cases}
    names_a, names_b = [s.metric for s in a.summary], [s.metric for s in b.summary]
    common = [m for m in names_a if m in names_b]
    changes: list[Change] = []
    pairs: dict[str, list[tuple[MetricResult, MetricResult]]] = {m: [] for m in common}
    for key, case_a in cases_a.items():
        case_b = cases_b.get(key)
        label = _label(case_a, by_name)
        if case_b is None:
            changes.append(Change(kind="removed", case=label))
            continue
        results_a, results_b = _by_metric(case_a), _by_metric(case_b)
        for metric in common:
            ra, rb = results_a.get(metric), results_b.get(metric)
            if ra is not None and rb is not None:
                pairs[metric].append((ra, rb))
            change = _change(label, metric, ra, rb, tolerance)
            if change is not None:
                changes.append(change)
    changes += [Change(kind="added", case=_label(c, by_name)) for k, c in cases_b.items() if k not in cases_a]
    return Comparison(
        run_a=a.run_id,
        run_b=b.run_id,
        matched_by="name" if by_name else "index",
        tolerance=tolerance,
        cases_compared=sum(1 for k in cases_a if k in cases_b),
        changes=changes,
        metrics=[_metric_summary(m, pairs[m], changes) for m in common],
        metrics_only_in_a=[m for m in names_a if m not in names_b],
        metrics_only_in_b=[m for m in names_b if m not in names_a],
        dataset_a=a.dataset,
        dataset_b=b.dataset,
        cases_in_a=len(a.cases),
        cases_in_b=len(b.cases),
    )


def classify(ra: MetricResult, rb: MetricResult, tolerance: float) -> ChangeKind | None:
    """The change from result ``ra`` to ``rb`` of one case and metric, or None if none counts."""
    sa = None if ra.errored else ra.score
    sb = None if rb.errored else rb.score
    if sa is None or sb is None:
        if sa is None and sb is None:
            return None
        return "recovered" if sb is not None else "errored"
    if ra.passed and not rb.passed:
        return "regression"
    if rb.passed and not ra.passed:
        return "fix"
    return "score" if abs(sb - sa) > tolerance else None


def _change(
    label: str, metric: str, ra: MetricResult | None, rb: MetricResult | None, tolerance: float
) -> Change | None:
    if ra is None:
        return None if rb is None else Change(kind="added", case=label, metric=metric, score_b=rb.score)
    if rb is None:
        return Change(kind="removed", case=label, metric=metric, score_a=ra.score)
    kind = classify(ra, rb, tolerance)
    if kind is None:
        return None
    error = rb.error if kind == "errored" else None
    return Change(kind=kind, case=label, metric=metric, score_a=ra.score, score_b=rb.score, error=error)


def _metric_summary(
    metric: str, pairs: list[tuple[MetricResult, MetricResult]], changes: list[Change]
) -> MetricComparison:
    kinds = [c.kind for c in changes if c.metric == metric]
    both = [(ra.score, rb.score) for ra, rb in pairs if ra.score is not None and rb.score is not None]
    mean_a = statistics.fmean(s for s, _ in both) if both else None
    mean_b = statistics.fmean(s for _, s in both) if both else None
    return MetricComparison(
        metric=metric,
        compared=len(pairs),
        regressions=kinds.count("regression"),
        fixes=kinds.count("fix"),
        score_changes=kinds.count("score"),
        errored=kinds.count("errored"),
        recovered=kinds.count("recovered"),
        mean_a=mean_a,
        mean_b=mean_b,
        mean_delta=statistics.fmean(sb - sa for sa, sb in both) if both else None,
    )


def names_are_keys(report: RunReport) -> bool:
    """Whether cases can be matched by name: every case of the run has one, and none repeats
    (with several targets, none repeats for the same target)."""
    names = [(c.name, c.target) for c in report.cases]
    return all(name for name, _ in names) and len(set(names)) == len(names)


def case_key(case: CaseResult, by_name: bool) -> str:
    """The key two runs' cases are matched by: the name, or "#index"; with several targets, and the target."""
    return (case.name if by_name and case.name else f"#{case.index}") + _at(case)


def _label(case: CaseResult, by_name: bool) -> str:
    if by_name and case.name:
        return case.name + _at(case)
    return f"#{case.index + 1}" + (f" {case.name}" if case.name else "") + _at(case)


def _at(case: CaseResult) -> str:
    """" @ target" for a case of a run with several targets (compare works per target), else ""."""
    return f" @ {case.target}" if case.target else ""


def _by_metric(case: CaseResult) -> dict[str, MetricResult]:
    return {r.metric: r for r in case.results}
