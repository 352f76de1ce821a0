"""Running metrics over a dataset: scheduling, concurrency, the journal, and the report.

``evaluate`` measures every (case, metric) pair once, in the order
:mod:`localeval.run.schedule` gives, with an executor (:mod:`localeval.run.execution`):
by default on as many threads as the judge serves requests at once (one for the
in-process model), or on a Ray cluster. Each finished result goes to the journal
(when the run has one) before anything else happens, then to the event
subscribers, from the thread that called ``evaluate``: only this process writes
the journal, whichever executor measured. Results already in the journal are
not computed again. The report lists the results in input order whatever order
they were computed in.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from localeval.backends.base import Backend, JudgeUsage
from localeval.data.case import Case
from localeval.data.dataset import Dataset
from localeval.data.results import (
    CaseResult,
    MetricResult,
    MetricSummary,
    RunReport,
    RunStats,
)
from localeval.errors import (
    BackendError,
    ConfigError,
    DatasetError,
    InputError,
    LocalevalError,
    MetricInputError,
    PromptError,
)
from localeval.metrics.base import Metric
from localeval.run.events import (
    Events,
    MetricFinished,
    RunFinished,
    RunStarted,
)
from localeval.run.execution import Executor, ThreadExecutor, Work
from localeval.run.journal import Journal
from localeval.run.panel import JudgePanel
from localeval.run.schedule import Order, Task, plan

Done = dict[tuple[int, str], MetricResult]


@dataclass(frozen=True)
class RunOptions:
    """How to run: the order of the calls, threads, and whether the first error stops the run."""

    order: Order = "prefix"
    workers: int | None = None  #: threads per judge; None: as many as it serves at once (1 in-process)
    executor: Executor | None = None  #: where tasks are measured; None: threads here (ThreadExecutor(workers))
    fail_fast: bool = False
    config: dict[str, Any] = field(default_factory=dict)  #: recorded in the report


class RunInterrupted(LocalevalError):
    """Ctrl-C: the run stopped; what finished is in the journal."""

    def __init__(self, run_id: str, finished: int, total: int) -> None:
        super().__init__(f"run {run_id} interrupted after {finished} of {total} results")
        self.run_id, self.finished, self.total = run_id, finished, total


class RunStopped(LocalevalError):
    """The run could not go on (its journal could not be written, its executor failed): what finished
    is in the journal, so ``--resume`` finishes it. The cause is chained (``__cause__``)."""

    def __init__(self, run_id: str, finished: int, total: int, reason: str, journal: Path | None) -> None:
        super().__init__(f"the run stopped after {finished} of {total} results: {reason}")
        self.run_id, self.finished, self.total, self.journal = run_id, finished, total, journal


def check_inputs(dataset: Dataset, metrics: Sequence[Metric], skip: Collection[int] = ()) -> None:
    """Fail before any model call when a case lacks a field a metric needs, or a metric judges the
    other kind of case (conversations, single-turn cases).

    Raises :class:`DatasetError` naming the file, line and field of the first problem.
    ``skip``: indexes of cases not judged (a target wrote no output for them).
    """
    names = [m.display_name for m in metrics]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"two metrics are named {duplicates[0]!r}; give each a distinct name")
    dataset.require_cases()  # a run over nothing would report that every metric passed
    for index, (case, location) in enumerate(zip(dataset.cases, dataset.locations)):
        if index in skip:
            continue
        for metric in metrics:
            try:
                metric.check_case(case)
            except MetricInputError as err:
                path, _, line = location.rpartition(":")
                raise DatasetError(
                    f"metric '{err.metric}' {err.problem}",
                    path=path or location,
                    line=int(line) if line.isdigit() else None,
                    field=err.field,
                ) from err


def evaluate(
    dataset: Dataset,
    metrics: Sequence[Metric],
    judge: Backend | None = None,
    *,
    judges: Mapping[str, Backend] | None = None,
    options: RunOptions | None = None,
    events: Events | None = None,
    journal: Journal | None = None,
    unanswered: Mapping[int, str] | None = None,
) -> RunReport:
    """Score every case with every metric; see the module's docstring for how.

    ``judge`` is the default judge; ``judges`` are the named ones, which a metric
    asks by its ``judge`` option (:mod:`localeval.run.panel`). ``unanswered`` maps
    the indexes of cases that have no output to judge (the target failed) to why:
    each of their results is that error, counted, not judged.
    """
    options = options or RunOptions()
    events = events or Events()
    unanswered = unanswered or {}
    unresolved = [m for m in metrics if m.awaiting_check is not None]
    if unresolved:  # before any judge call: which threshold or reading would decide the results?
        raise ConfigError(
            f"metric '{unresolved[0].display_name}': {unresolved[0].awaiting_check} is read from the judge's check "
            "by `localeval run` and localeval.evaluate; here, pass the metrics through "
            "localeval.metaeval.trust.from_checks first"
        )
    check_inputs(dataset, metrics, skip=unanswered)
    panel = JudgePanel.of(metrics, judge, judges)
    before = panel.usage()
    start = time.perf_counter()
    run_id, created_at = _identity(journal)
    done: Done = dict(journal.done) if journal is not None else {}
    done.update(_unanswered(metrics, unanswered))
    names = tuple(m.display_name for m in metrics)
    tasks = [t for t in plan(dataset.cases, metrics, options.order) if (t.case, names[t.metric]) not in done]
    total = len(dataset) * len(metrics)
    events.emit(RunStarted(run_id, len(dataset), names, total, total - len(tasks)))
    pending = {t.metric for t in tasks}  # a metric with nothing left to measure needs no preparing
    prepared = [_prepared(m, panel.judge_of(m)) if i in pending else m for i, m in enumerate(metrics)]
    execution = _Execution(Work(dataset.cases, prepared, panel, events), journal, done, options.fail_fast)
    remote = execution.run(tasks, options.executor or ThreadExecutor(options.workers), run_id)
    cases = _case_results(dataset, metrics, done, execution.stopped)
    report = RunReport(
        run_id=run_id,
        created_at=created_at,
        localeval_version=version("localeval"),
        config=options.config,
        dataset=dataset.source,
        backend=panel.default.fingerprint if panel.default is not None else None,
        judges=panel.fingerprints(),
        cases=cases,
        summary=_summaries(cases, metrics),
        stats=_stats(panel, panel.usage() - before + remote, time.perf_counter() - start,
                     resumed=total - len(tasks) - len(unanswered) * len(metrics)),
    )
    events.emit(RunFinished(run_id, report.stats.duration_s, report))
    return report


class _Execution:
    """The driver's part of one run: hands the tasks to the executor, then journals, keeps and
    announces each result it gets back."""

    def __init__(self, work: Work, journal: Journal | None, done: Done, fail_fast: bool) -> None:
        self.work, self.journal, self.done, self.fail_fast = work, journal, done, fail_fast
        self.stopped: Task | None = None  #: the task whose error stopped a fail-fast run

    def run(self, tasks: list[Task], executor: Executor, run_id: str) -> JudgeUsage:
        """Measure ``tasks``; returns what the judges cost outside this process (see :class:`Executor`)."""
        total = len(self.work.cases) * len(self.work.metrics)
        try:
            return executor.execute(tasks, self.work, self._record)
        except KeyboardInterrupt:
            raise RunInterrupted(run_id, len(self.done), total) from None
        except InputError:  # refused before it measured (a worker's judge is not the driver's): as it is
            raise
        # SystemExit too: a library may exit in the executor (a cluster that lost a part of itself)
        except (Exception, SystemExit) as err:  # noqa: BLE001 -- the run's end, said in one line, resumable
            reason = str(err) if isinstance(err, LocalevalError) else _unexpected(err)
            journal = self.journal.path if self.journal is not None else None
            raise RunStopped(run_id, len(self.done), total, reason, journal) from err

    def _record(self, finished: MetricFinished) -> bool:
        """Journal the result, keep it, then announce it; True when the run must stop."""
        result = finished.result
        if self.journal is not None:
            self.journal.append(finished.case_index, result)
        self.done[(finished.case_index, result.metric)] = result
        self.work.events.emit(finished)
        if result.errored and self.fail_fast and self.stopped is None:
            names = [m.display_name for m in self.work.metrics]
            self.stopped = Task(finished.case_index, names.index(result.metric))
        return self.stopped is not None


def _unexpected(err: BaseException) -> str:
    """An exception nobody expected, as part of a line: its type and its message's first line."""
    said = next((line for line in str(err).splitlines() if line.strip()), "")
    return f"unexpected {type(err).__name__}" + (f": {said}" if said else "")


def _unanswered(metrics: Sequence[Metric], unanswered: Mapping[int, str]) -> Done:
    """An error result for every metric of every case without an output (not journaled: the journal
    holds the target's error itself)."""
    return {
        (index, m.display_name): MetricResult(metric=m.display_name, kind=m.kind, threshold=m.threshold, error=why)
        for index, why in unanswered.items() for m in metrics
    }


def _identity(journal: Journal | None) -> tuple[str, str]:
    if journal is not None:
        return journal.header.run_id, journal.header.created_at
    return new_run_id(), now()


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def case_inputs(case: Case) -> dict[str, Any]:
    """A case's fields as a report shows them: the empty ones left out."""
    return case.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


def _case_results(dataset: Dataset, metrics: Sequence[Metric], done: Done, stopped: Task | None) -> list[CaseResult]:
    return [
        CaseResult(
            index=index, name=case.name, location=location, inputs=case_inputs(case),
            results=[done.get((index, m.display_name)) or _not_run(m, dataset, stopped) for m in metrics],
        )
        for index, (case, location) in enumerate(zip(dataset.cases, dataset.locations))
    ]


def _not_run(metric: Metric, dataset: Dataset, stopped: Task | None) -> MetricResult:
    where = f"case {stopped.case + 1} ({dataset.locations[stopped.case]})" if stopped else "an earlier error"
    return MetricResult(
        metric=metric.display_name, kind=metric.kind, threshold=metric.threshold,
        error=f"not run: --fail-fast stopped the run at the error of {where}",
    )


def _summaries(cases: list[CaseResult], metrics: Sequence[Metric]) -> list[MetricSummary]:
    summaries = []
    for i, metric in enumerate(metrics):
        results = [c.results[i] for c in cases]
        summaries.append(MetricSummary.of(metric.display_name, results, metric.summarize(results)))
    return summaries


def _prepared(metric: Metric, judge: Backend | None) -> Metric:
    # A failure here (say, the judge cannot write G-Eval's steps) is not fatal: the
    # unprepared metric tries again per case and records the error in each result.
    try:
        return metric.prepare(judge)
    except (BackendError, PromptError):
        return metric


def _stats(panel: JudgePanel, used: JudgeUsage, duration: float, resumed: int) -> RunStats:
    if not panel.judges:
        return RunStats(duration_s=duration, resumed=resumed)
    return RunStats(
        model_calls=used.model_calls, cache_hits=used.cache_hits, prompt_tokens=used.prompt_tokens,
        completion_tokens=used.completion_tokens, duration_s=duration, resumed=resumed,
    )
