"""Several targets side by side: each golden answered by every target, judged by the same metrics.

The cases a run judges are the goldens times the targets, golden-major (golden 1 by every
target, then golden 2, ...), so a journal's case indexes mean the same on resume. Each case
says its target (``metadata["target"]``, and ``CaseResult.target`` in the report); the
report gets every target's summaries (:func:`with_targets`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from localeval.data.case import Case
from localeval.data.dataset import Dataset
from localeval.data.results import MetricSummary, RunReport, TargetRecord
from localeval.metrics.base import Metric
from localeval.targets.generate import Outputs


@dataclass
class Generated:
    """What the targets produced for a run: the cases to judge, those without output, the records."""

    dataset: Dataset
    unanswered: dict[int, str]
    records: list[TargetRecord]
    case_targets: list[str | None] = field(default_factory=list)  #: per case; empty with one target

    def apply(self, report: RunReport, metrics: Sequence[Metric]) -> RunReport:
        """``report`` with the targets' records and, with several targets, each case's target and
        each target's summaries."""
        return with_targets(report, self.records, self.case_targets, metrics)


def one_target(outputs: Outputs) -> Generated:
    """One target: the goldens with its outputs, as they are."""
    return Generated(outputs.dataset, outputs.failed, [outputs.record])


def side_by_side(dataset: Dataset, outputs: Sequence[Outputs]) -> Generated:
    """Every golden once per target, in golden-major order."""
    cases: list[Case] = []
    locations: list[str] = []
    unanswered: dict[int, str] = {}
    targets: list[str | None] = []
    for index, location in enumerate(dataset.locations):
        for output in outputs:
            name = output.record.name
            if index in output.failed:
                unanswered[len(cases)] = f"{output.failed[index]} (target {name})"
            case = output.dataset.cases[index]
            cases.append(case.model_copy(update={"metadata": {**case.metadata, "target": name}}))
            locations.append(location)
            targets.append(name)
    expanded = Dataset(cases, locations, dataset.source)
    return Generated(expanded, unanswered, [o.record for o in outputs], targets)


def with_targets(report: RunReport, records: list[TargetRecord], case_targets: Sequence[str | None],
                 metrics: Sequence[Metric]) -> RunReport:
    """``report`` with the targets' records; with several, the case targets and per-target summaries."""
    if not case_targets:
        return report.model_copy(update={"targets": records})
    cases = [c.model_copy(update={"target": t}) for c, t in zip(report.cases, case_targets)]
    summaries = {}
    for record in records:
        mine = [c for c in cases if c.target == record.name]
        summaries[record.name] = [
            MetricSummary.of(m.display_name, results, m.summarize(results))
            for i, m in enumerate(metrics) for results in [[c.results[i] for c in mine]]
        ]
    return report.model_copy(update={"targets": records, "cases": cases, "target_summaries": summaries})
