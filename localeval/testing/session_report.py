"""A pytest session's judged cases as a localeval report, and how far to trust the judges that judged them.

:func:`run_report` assembles a :class:`~localeval.data.results.RunReport` (one case per
assertion, in the order they ran), which :func:`localeval.reports.write_reports` writes as
a run folder's files, so ``localeval report`` and ``localeval compare`` read it like a run's.
:func:`judge_trust` reads each judge's stored check (``localeval check-judge``) for the
metric families the session asked it about; a scripted judge has no check to read.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version

from localeval.backends.base import Fingerprint
from localeval.data.results import CaseResult, JudgeTrust, MetricResult, MetricSummary, RunReport, RunStats
from localeval.metaeval.check import CheckStore
from localeval.metaeval.trust import DEFAULT_JUDGE, assess
from localeval.metrics.base import Metric
from localeval.run.runner import case_inputs, new_run_id
from localeval.testing.collected import JudgedCase


def judge_names(cases: Sequence[JudgedCase]) -> dict[str, Fingerprint]:
    """Each judge a metric asked, by a name, model judges first, each in the order first asked: the first is
    ``backend`` (a run's default judge), the others their model's name (``model#2`` when two judges share one)."""
    names: dict[str, Fingerprint] = {}
    for case in sorted(cases, key=lambda case: case.judgement.scripted):  # stable: the order asked, within each
        judge = case.judgement.judge
        if judge is None or judge in names.values() or not any(m.needs_judge for m in case.judgement.metrics):
            continue
        name, n = (DEFAULT_JUDGE if not names else judge.model), 1
        while name in names:
            n += 1
            name = f"{judge.model}#{n}"
        names[name] = judge
    return names


def name_of(judge: Fingerprint, names: dict[str, Fingerprint]) -> str:
    """The name :func:`judge_names` gave ``judge``."""
    return next(name for name, named in names.items() if named == judge)


def judge_trust(cases: Sequence[JudgedCase], store: CheckStore) -> dict[str, JudgeTrust]:
    """Each model judge's trust, by its name, on the families of the metrics the session asked it about.

    A scripted judge has none: its replies are a script, not a model's verdicts.
    """
    names = judge_names(cases)
    asked: dict[str, dict[str, Metric]] = {}
    for case in cases:
        judge = case.judgement.judge
        if judge is None or case.judgement.scripted:
            continue
        for metric in case.judgement.metrics:
            if metric.needs_judge:  # the assertions ask the judge given, whatever judge a metric names
                unnamed = metric.model_copy(update={"judge_name": None})
                asked.setdefault(name_of(judge, names), {})[metric.model_dump_json()] = unnamed
    trust = {}
    for name, metrics in asked.items():
        for found in assess(list(metrics.values()), {DEFAULT_JUDGE: names[name]}, store):
            trust[name] = found.model_copy(update={"judge": name})
    return trust


def run_report(cases: Sequence[JudgedCase], trust: Sequence[JudgeTrust], created_at: str) -> RunReport:
    """The session's judged cases as a run's report: its default judge the first one asked, the others named."""
    judges = judge_names(cases)
    results = [r for case in cases for r in case.judgement.results]
    return RunReport(
        run_id=new_run_id(),
        created_at=created_at,
        localeval_version=version("localeval"),
        config={"runner": "pytest", "tests": len({case.test for case in cases})},
        backend=judges.pop(DEFAULT_JUDGE, None),
        judges=judges,
        cases=[_case_result(index, case) for index, case in enumerate(cases)],
        summary=_summaries(cases),
        stats=_stats(results),
        trust=list(trust),
    )


def _case_result(index: int, judged: JudgedCase) -> CaseResult:
    case = judged.judgement.case
    return CaseResult(
        index=index, name=case.name or judged.name, location=judged.location, inputs=case_inputs(case),
        results=list(judged.judgement.results),
    )


def _summaries(cases: Sequence[JudgedCase]) -> list[MetricSummary]:
    """One summary per metric name, in the order first judged (a metric's ``summarize`` from its first use)."""
    by_name: dict[str, tuple[Metric, list[MetricResult]]] = {}
    for case in cases:
        for metric, result in case.measured():
            by_name.setdefault(result.metric, (metric, []))[1].append(result)
    return [MetricSummary.of(name, results, metric.summarize(results)) for name, (metric, results) in by_name.items()]


def _stats(results: Sequence[MetricResult]) -> RunStats:
    # The assertions ask the judge directly, not through a run's counters: no calls or tokens to report.
    return RunStats(duration_s=sum(r.duration_s for r in results))
