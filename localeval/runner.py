"""Running metrics over a dataset and collecting the report."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib.metadata import version
from typing import Any

from localeval.backends.base import Backend
from localeval.cache import CachedBackend
from localeval.case import TestCase
from localeval.dataset import Dataset
from localeval.errors import BackendError, ConfigError, DatasetError, MetricInputError, PromptError
from localeval.metrics.base import Metric
from localeval.results import CaseResult, MetricResult, MetricSummary, RunReport, RunStats

#: Called after each (case, metric) result: (case index, result).
ResultCallback = Callable[[int, MetricResult], None]


def check_inputs(dataset: Dataset, metrics: Sequence[Metric]) -> None:
    """Fail before any model call when a case lacks a field a metric needs.

    Raises :class:`DatasetError` naming the file, line and field of the first problem.
    """
    names = [m.display_name for m in metrics]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"two metrics are named {duplicates[0]!r}; give each a distinct name")
    for case, location in zip(dataset.cases, dataset.locations):
        for metric in metrics:
            try:
                metric.check_case(case)
            except MetricInputError as err:
                path, _, line = location.rpartition(":")
                raise DatasetError(
                    f"metric '{err.metric}' needs it, and it is empty",
                    path=path or location,
                    line=int(line) if line.isdigit() else None,
                    field=err.field,
                ) from err


def evaluate(
    dataset: Dataset,
    metrics: Sequence[Metric],
    judge: Backend | None = None,
    *,
    config: dict[str, Any] | None = None,
    on_result: ResultCallback | None = None,
) -> RunReport:
    """Score every case with every metric, case by case (a case's metrics share its prompt prefix)."""
    check_inputs(dataset, metrics)
    start = time.perf_counter()
    metrics = [_prepared(m, judge) for m in metrics]
    cases: list[CaseResult] = []
    for index, (case, location) in enumerate(zip(dataset.cases, dataset.locations)):
        results = []
        for metric in metrics:
            result = metric.measure(case, judge)
            results.append(result)
            if on_result is not None:
                on_result(index, result)
        cases.append(
            CaseResult(
                index=index, name=case.name, location=location, inputs=case_inputs(case), results=results
            )
        )
    return RunReport(
        run_id=uuid.uuid4().hex[:12],
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        localeval_version=version("localeval"),
        config=config or {},
        backend=judge.fingerprint if judge is not None else None,
        cases=cases,
        summary=[
            MetricSummary.of(m.display_name, [c.results[i] for c in cases])
            for i, m in enumerate(metrics)
        ],
        stats=_stats(judge, time.perf_counter() - start),
    )


def case_inputs(case: TestCase) -> dict[str, Any]:
    """A case's fields as a report shows them: the empty ones left out."""
    return case.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


def _prepared(metric: Metric, judge: Backend | None) -> Metric:
    # A failure here (say, the judge cannot write G-Eval's steps) is not fatal: the
    # unprepared metric tries again per case and records the error in each result.
    try:
        return metric.prepare(judge)
    except (BackendError, PromptError):
        return metric


def _stats(judge: Backend | None, duration: float) -> RunStats:
    if isinstance(judge, CachedBackend):
        return RunStats(
            model_calls=judge.stats.model_calls, cache_hits=judge.stats.hits, duration_s=duration
        )
    return RunStats(duration_s=duration)
