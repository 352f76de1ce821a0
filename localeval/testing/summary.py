"""The table at the end of a pytest session: each metric's passes, failures, errors and mean score, by judge.

One row per metric and judge: the judge is its model's name (``-`` for a metric that asks
none), and ``check`` says what the judge's stored check measured on that metric's family
(:mod:`localeval.metaeval.trust`): ``checked on correctness: 88% of 24 pairs ordered``,
``AT CHANCE on …``, ``unchecked on …``; a scripted judge is ``scripted``: it has no check,
and needs none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from localeval.data.results import Counts, FamilyTrust, JudgeTrust, MetricResult
from localeval.metaeval.trust import parts
from localeval.metrics.base import Metric
from localeval.reports.terminal import visible
from localeval.reports.trust import share
from localeval.testing.collected import JudgedCase
from localeval.testing.session_report import judge_names, name_of

HEADER = ("metric", "passed", "failed", "errored", "mean", "judge", "check")


@dataclass(frozen=True)
class Row:
    """One metric with one judge over the session."""

    metric: str
    passed: int
    failed: int
    errored: int
    mean: float | None
    judge: str
    check: str

    def cells(self) -> tuple[str, ...]:
        mean = "-" if self.mean is None else f"{self.mean:.2f}"
        return (visible(self.metric), str(self.passed), str(self.failed), str(self.errored), mean,
                visible(self.judge), self.check)


def rows(cases: Sequence[JudgedCase], trust: Mapping[str, JudgeTrust]) -> list[Row]:
    """The table's rows, in the order the metrics were first judged; ``trust`` by judge name (:func:`judge_trust`)."""
    names = judge_names(cases)
    grouped: dict[tuple[str, str | None], tuple[str, list[MetricResult]]] = {}  # (metric, judge) -> check, results
    for case in cases:
        judge = case.judgement.judge
        for metric, result in case.measured():
            name = name_of(judge, names) if judge is not None and metric.needs_judge else None
            if (result.metric, name) not in grouped:
                grouped[result.metric, name] = (_check(metric, name, case.judgement.scripted, trust), [])
            grouped[result.metric, name][1].append(result)
    return [_row(metric, "-" if name is None else names[name].model, check, results)
            for (metric, name), (check, results) in grouped.items()]


def _row(metric: str, judge: str, check: str, results: Sequence[MetricResult]) -> Row:
    # Counts, not MetricSummary.of: the table needs no confidence intervals (nor scipy, at the session's end).
    counts = Counts.of(results)
    return Row(metric, counts.passed, counts.failed, counts.errored, counts.mean_score, judge, check)


def table_lines(table: Sequence[Row]) -> list[str]:
    """The rows as aligned text, a header first; numbers right-aligned."""
    lines = [HEADER, *(row.cells() for row in table)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    numeric = {1, 2, 3, 4}
    return [
        "  ".join(cell.rjust(w) if i in numeric else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths)))
        .rstrip()
        for line in lines
    ]


def _check(metric: Metric, judge: str | None, scripted: bool, trust: Mapping[str, JudgeTrust]) -> str:
    if judge is None:
        return "-"
    if scripted:
        return "scripted"
    names = {part.display_name for part in parts(metric)}
    found = trust.get(judge)
    families = [f for f in (found.families if found else []) if names & set(f.metrics)]
    return "; ".join(_family(f) for f in families) or "unchecked"


def _family(family: FamilyTrust) -> str:
    if not family.covered:
        return f"no check covers {family.family}"
    if family.at_chance:
        hint = family.other_reading
        better = "" if hint is None else f" ({hint.verdict_reading}: {share(hint.ordered)})"
        return f"AT CHANCE on {family.family}: {share(family.ordered)} of {family.pairs} pairs ordered{better}"
    if family.checked:
        return f"checked on {family.family}: {share(family.ordered)} of {family.pairs} pairs ordered"
    if family.outdated_prompts:
        return f"check outdated on {family.family}"
    return f"unchecked on {family.family}"
