"""What changed between two runs, and whether the change is real. Pure: two reports in, a
:class:`Comparison` out; the terminal (``terminal.py``), the JSON (``Comparison.to_json``) and
the HTML page (``compare_html.py``) all show this one model.

**Matching.** Cases are matched by name (and target, in runs with several targets) when every
case of both runs has a name and no name repeats within a run; otherwise by position. Cases
only in one run are listed. Two runs with no case in common are refused (``InputError``):
there is nothing to compare. Each report records its dataset's sha256; when they differ,
``same_dataset`` is False and every view says so, but cases are still matched as above.

**Per case** (:class:`CaseComparison`): both outputs (``actual_output``; for a conversation,
its turns as ``role: content`` lines) and their word diff when they differ
(:mod:`~localeval.reports.textdiff`), and each metric's result before and after, with the
change that counts, the first of these that applies:

========== ===============================================================
errored    scored in A, errored in B
recovered  errored in A, scored in B
regression passed in A, failed in B
fix        failed in A, passed in B
score      same verdict, but the score moved by more than the tolerance
added      the result is only in B (a case only in B: ``cases_only_in_b``)
removed    the result is only in A (a case only in A: ``cases_only_in_a``)
========== ===============================================================

**Per metric** (:class:`~localeval.reports.verdict.MetricComparison`): the mean change with
its 95% interval, the pass rates with McNemar's test of the flips, and a verdict: the rule is in
:mod:`~localeval.reports.verdict`.

**Regression gates** (``localeval compare --fail-on-regression``): ``mean``, a metric whose
mean change is worse beyond its interval (:attr:`Comparison.worse_means`); ``flip``, a result
that passed in A and fails or errors in B (:attr:`Comparison.broken`).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from localeval.data.dataset import DatasetSource
from localeval.data.results import CaseResult, MetricResult, RunReport
from localeval.errors import InputError
from localeval.reports.textdiff import DiffSpan, word_diff
from localeval.reports.verdict import MetricComparison, measure_metric

#: The comparison JSON's format version (``localeval compare --json``).
COMPARISON_FORMAT = 1

ChangeKind = Literal["errored", "recovered", "regression", "fix", "score", "added", "removed"]
#: What ``--fail-on-regression`` fails on: a mean worse beyond its interval, a pass → fail (or error) flip, either.
Gate = Literal["mean", "flip", "any"]
GATES: tuple[Gate, ...] = ("mean", "flip", "any")
#: Each change in words, as every view shows it.
CHANGE_WORDS: dict[ChangeKind, str] = {
    "regression": "pass → fail",
    "fix": "fail → pass",
    "errored": "scored → error",
    "recovered": "error → scored",
    "score": "score moved",
    "added": "only in B",
    "removed": "only in A",
}


class ResultChange(BaseModel):
    """One metric's result on one matched case, before (A) and after (B)."""

    model_config = ConfigDict(frozen=True)

    metric: str
    score_a: float | None = None
    score_b: float | None = None
    passed_a: bool | None = None
    passed_b: bool | None = None
    error_a: str | None = None
    error_b: str | None = None
    kind: ChangeKind | None = None  #: None: nothing that counts changed

    @property
    def delta(self) -> float | None:
        """B's score minus A's, when both scored."""
        if self.score_a is None or self.score_b is None:
            return None
        return self.score_b - self.score_a


class CaseComparison(BaseModel):
    """One case found in both runs: its outputs, their diff, and each metric's result before and after."""

    model_config = ConfigDict(frozen=True)

    label: str  #: the name (`` @ target`` with several targets), or ``#N`` and the name when matched by position
    name: str | None = None
    target: str | None = None
    index_a: int
    index_b: int
    output_a: str | None = None
    output_b: str | None = None
    diff: list[DiffSpan] = []  #: the word diff of the outputs; empty when they are equal
    results: list[ResultChange]

    @property
    def output_changed(self) -> bool:
        return self.output_a != self.output_b

    @property
    def changed(self) -> bool:
        """Whether the output or any result changed (beyond the tolerance)."""
        return self.output_changed or any(r.kind is not None for r in self.results)


class Change(BaseModel):
    """One difference between run A and run B, as the changes table lists it."""

    model_config = ConfigDict(frozen=True)

    kind: ChangeKind
    case: str
    metric: str | None = None  #: None: the whole case is only in one run
    score_a: float | None = None
    score_b: float | None = None
    error: str | None = None

    @property
    def delta(self) -> float | None:
        """B's score minus A's, when both scored."""
        if self.score_a is None or self.score_b is None:
            return None
        return self.score_b - self.score_a


class Comparison(BaseModel):
    """Run A (before) and run B (after), case by case and metric by metric."""

    model_config = ConfigDict(frozen=True)

    format_version: int = COMPARISON_FORMAT
    localeval_version: str = ""
    run_a: str
    run_b: str
    matched_by: Literal["name", "index"]
    tolerance: float
    cases_in_a: int
    cases_in_b: int
    dataset_a: DatasetSource | None = None  #: None in reports from before it was recorded
    dataset_b: DatasetSource | None = None
    cases: list[CaseComparison]  #: the matched cases, in A's order
    cases_only_in_a: list[str] = []
    cases_only_in_b: list[str] = []
    metrics: list[MetricComparison]
    metrics_only_in_a: list[str] = []
    metrics_only_in_b: list[str] = []

    def to_json(self) -> str:
        return self.model_dump_json(indent=2) + "\n"

    @property
    def cases_compared(self) -> int:
        return len(self.cases)

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

    def dataset_note(self) -> tuple[Literal["warning", "note"], str] | None:
        """A warning when the runs judged different data, a note when that cannot be told; else None."""
        same = self.same_dataset
        if same:
            return None
        sides = (("A", self.dataset_a, self.cases_in_a), ("B", self.dataset_b, self.cases_in_b))
        if same is None:
            older = [side for side, dataset, _ in sides if dataset is None]
            which = "neither report records it" if len(older) == 2 else f"the report of {older[0]} does not record it"
            return "note", (f"cannot tell whether both runs judged the same dataset: {which} "
                            "(written by an older localeval).")
        judged = "; ".join(
            f"{side}: {n} case{'' if n == 1 else 's'}"
            + ("" if dataset is None else f" of {dataset.path}, sha256 {dataset.sha256}")
            for side, dataset, n in sides
        )
        matched = "the same position" if self.matched_by == "index" else "the same name"
        return "warning", f"the runs judged different datasets ({judged}); each row compares the cases at {matched}."

    @property
    def changes(self) -> list[Change]:
        """Every result that changed, case by case in A's order, then the cases only in A and only in B."""
        found = [
            Change(kind=r.kind, case=case.label, metric=r.metric, score_a=r.score_a, score_b=r.score_b,
                   error=r.error_b if r.kind == "errored" else None)
            for case in self.cases for r in case.results if r.kind is not None
        ]
        found += [Change(kind="removed", case=label) for label in self.cases_only_in_a]
        return found + [Change(kind="added", case=label) for label in self.cases_only_in_b]

    def count(self, kind: ChangeKind) -> int:
        """How many results changed so (for ``added``/``removed``, the whole cases too)."""
        return sum(1 for c in self.changes if c.kind == kind)

    @property
    def outputs_changed(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.output_changed]

    @property
    def broken(self) -> list[tuple[CaseComparison, ResultChange]]:
        """The results that passed in A and fail or error in B: the ``flip`` gate."""
        return [(c, r) for c in self.cases for r in c.results
                if r.passed_a is True and r.kind in ("regression", "errored")]

    @property
    def worse_means(self) -> list[MetricComparison]:
        """The metrics whose mean moved the bad way beyond its 95% interval: the ``mean`` gate."""
        return [m for m in self.metrics if m.worse_beyond_interval]

    def gate_failures(self, gate: Gate) -> list[str]:
        """Why ``gate`` fails, one line for each metric or result that fails it; empty when it holds."""
        lines = []
        if gate in ("mean", "any"):
            lines += [f"{m.metric}: the mean got worse beyond its 95% interval ({m.reason()})" for m in self.worse_means]
        if gate in ("flip", "any"):
            lines += [f"{case.label}: {r.metric} went from pass to {'error' if r.kind == 'errored' else 'fail'}"
                      for case, r in self.broken]
        return lines


def compare(a: RunReport, b: RunReport, *, tolerance: float = 0.0) -> Comparison:
    """Run ``a`` (before) against run ``b`` (after); a score change counts when ``|b - a| > tolerance``.

    Raises ``InputError`` for a tolerance outside [0, 1] and for runs with no case in common."""
    if not 0.0 <= tolerance <= 1.0:
        raise InputError(f"tolerance must be between 0 and 1, got {tolerance}")
    by_name = names_are_keys(a) and names_are_keys(b)
    cases_b = {case_key(c, by_name): c for c in b.cases}
    matched = [(ca, cases_b[case_key(ca, by_name)]) for ca in a.cases if case_key(ca, by_name) in cases_b]
    if not matched:
        raise InputError(_nothing_matched(a, b, by_name))
    keys_a = {case_key(c, by_name) for c in a.cases}
    names_a, names_b = [s.metric for s in a.summary], [s.metric for s in b.summary]
    common = [m for m in names_a if m in names_b]
    cases = [_case(ca, cb, by_name, common, tolerance) for ca, cb in matched]
    return Comparison(
        localeval_version=version("localeval"),
        run_a=a.run_id,
        run_b=b.run_id,
        matched_by="name" if by_name else "index",
        tolerance=tolerance,
        cases_in_a=len(a.cases),
        cases_in_b=len(b.cases),
        dataset_a=a.dataset,
        dataset_b=b.dataset,
        cases=cases,
        cases_only_in_a=[_label(c, by_name) for c in a.cases if case_key(c, by_name) not in cases_b],
        cases_only_in_b=[_label(c, by_name) for c in b.cases if case_key(c, by_name) not in keys_a],
        metrics=[_metric(m, matched, cases) for m in common],
        metrics_only_in_a=[m for m in names_a if m not in names_b],
        metrics_only_in_b=[m for m in names_b if m not in names_a],
    )


def _nothing_matched(a: RunReport, b: RunReport, by_name: bool) -> str:
    by = "name and target" if any(c.target for c in a.cases) else "name"
    return (f"runs {a.run_id} ({len(a.cases)} cases) and {b.run_id} ({len(b.cases)} cases) have no case "
            f"in common{f' by {by}' if by_name else ''}: nothing to compare")


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


def _case(ca: CaseResult, cb: CaseResult, by_name: bool, metrics: list[str], tolerance: float) -> CaseComparison:
    output_a, output_b = case_output(ca), case_output(cb)
    results_a, results_b = _by_metric(ca), _by_metric(cb)
    return CaseComparison(
        label=_label(ca, by_name), name=ca.name, target=ca.target, index_a=ca.index, index_b=cb.index,
        output_a=output_a, output_b=output_b, diff=_diff(output_a, output_b),
        results=[_result(m, results_a.get(m), results_b.get(m), tolerance) for m in metrics
                 if m in results_a or m in results_b],
    )


def _diff(before: str | None, after: str | None) -> list[DiffSpan]:
    if before is None or after is None or before == after:
        return []
    return word_diff(before, after)


def _result(metric: str, ra: MetricResult | None, rb: MetricResult | None, tolerance: float) -> ResultChange:
    kind: ChangeKind | None
    if ra is None or rb is None:
        kind = "added" if ra is None else "removed"
    else:
        kind = classify(ra, rb, tolerance)
    return ResultChange(
        metric=metric, kind=kind,
        score_a=ra.score if ra else None, score_b=rb.score if rb else None,
        passed_a=ra.passed if ra else None, passed_b=rb.passed if rb else None,
        error_a=ra.error if ra else None, error_b=rb.error if rb else None,
    )


def case_output(case: CaseResult) -> str | None:
    """What the case's model said: its ``actual_output``, or a conversation's turns as ``role: content`` lines."""
    output = case.inputs.get("actual_output")
    if isinstance(output, str):
        return output
    turns = case.inputs.get("turns")
    if isinstance(turns, list):
        return "\n".join(_turn(t) for t in turns)
    return None


def _turn(turn: Any) -> str:
    if isinstance(turn, dict):
        return f"{turn.get('role', '?')}: {turn.get('content', '')}"
    return str(turn)


def _metric(metric: str, matched: list[tuple[CaseResult, CaseResult]], cases: list[CaseComparison]) -> MetricComparison:
    pairs = [(_by_metric(ca).get(metric), _by_metric(cb).get(metric)) for ca, cb in matched]
    kinds = [r.kind for c in cases for r in c.results if r.metric == metric]
    return measure_metric(metric, [(ra, rb) for ra, rb in pairs if ra is not None and rb is not None], kinds)


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
