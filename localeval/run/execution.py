"""Where a run's (case, metric) tasks are measured: the executor seam of the runner.

The runner (:mod:`localeval.run.runner`) plans the tasks and records every result
(journal, events) on the thread that called it. An :class:`Executor` only
measures: it takes the tasks in plan order and hands each finished result to
``record``, one at a time, on that same thread. Two executors exist:

- :class:`ThreadExecutor` (the default): threads in this process, one lane per
  judge with as many tasks in flight as the judge serves at once (one for the
  in-process llama.cpp model, which then runs on the calling thread).
- :class:`localeval.run.ray_executor.RayExecutor`: Ray actors, each holding its own
  judges, on a Ray cluster (``pip install 'localeval[ray]'``).

Both measure a task with :meth:`Work.measure`, so a result is the same whoever
computes it.
"""

from __future__ import annotations

import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from localeval.backends.base import JudgeUsage
from localeval.data.case import Case
from localeval.data.results import MetricResult
from localeval.inflight import InFlight, ctrl_c_held
from localeval.metrics.base import Metric
from localeval.run.events import Events, Interrupted, MetricFinished, MetricStarted
from localeval.run.panel import JudgePanel
from localeval.run.schedule import Task, group_size, groups

#: Called with each finished result; True when the run must stop (a fail-fast run's error):
#: the executor then starts nothing new, and records what is already running as it finishes.
Record = Callable[[MetricFinished], bool]


@dataclass(frozen=True)
class Work:
    """What a task needs to be measured: the cases, the (prepared) metrics, and their judges."""

    cases: Sequence[Case]
    metrics: Sequence[Metric]
    panel: JudgePanel
    events: Events

    def measure(self, task: Task) -> MetricFinished:
        """The result of one task, as the event that announces it (not yet sent).

        Emits :class:`MetricStarted` first. A metric that raises (a bug, say a user's)
        gives that case an error, not the run an end.
        """
        metric, case = self.metrics[task.metric], self.cases[task.case]
        self.events.emit(MetricStarted(task.case, metric.display_name))
        judge = self.panel.judge_of(metric)
        before = self.panel.thread_usage()
        try:
            result = metric.measure(case, judge)
        except Exception as err:  # noqa: BLE001 -- that case's error, not the run's end
            result = unexpected(metric, err)
        if judge is not None:
            result = result.model_copy(update={"usage": self.panel.thread_usage() - before})
        usage = result.usage or JudgeUsage()
        return MetricFinished(task.case, result, result.duration_s, usage.model_calls, usage.cache_hits)


class Executor(Protocol):
    """Measures tasks and hands each result to ``record`` on the calling thread."""

    def execute(self, tasks: Sequence[Task], work: Work, record: Record) -> JudgeUsage:
        """Measure ``tasks`` (in plan order), calling ``record`` once per result as each finishes.

        Returns what the judges cost outside this process's panel (zero when they ran
        here: the panel counted it). Ctrl-C raises :class:`KeyboardInterrupt`, after the tasks
        already running are finished and recorded (announced with :class:`Interrupted`; a
        second Ctrl-C stops at once).
        """
        ...


#: A worker of a judge's lane: the lane (the judge's name) and the worker's number in it.
Slot = tuple[str | None, int]


@dataclass(frozen=True)
class ThreadExecutor:
    """Threads in this process: per judge, ``workers`` tasks in flight (None: as many as it serves
    at once); one in all runs on the calling thread.

    With several in flight, each worker takes a group of neighbouring tasks in plan order
    (:func:`localeval.run.schedule.groups`, as the Ray executor does) and sends them one after the
    other: calls that share a prompt prefix (a document, a transcript) follow each other on one
    worker, so a fleet sends each to the endpoint that read the one before (its prefix cache
    warm) instead of to two endpoints at once.
    """

    workers: int | None = None

    def execute(self, tasks: Sequence[Task], work: Work, record: Record) -> JudgeUsage:
        lanes = self._lanes(tasks, work)
        if sum(limit for limit, _ in lanes.values()) <= 1:
            for task in tasks:
                finished = work.measure(task)
                with ctrl_c_held():  # journaled and counted together, or not at all
                    if record(finished):
                        break
        else:
            self._parallel(lanes, work, record)
        return JudgeUsage()

    def _lanes(self, tasks: Sequence[Task], work: Work) -> dict[str | None, tuple[int, deque[list[Task]]]]:
        """Per judge (by name): how many of its tasks may be in flight, and its tasks in plan order
        cut into groups."""
        lanes: dict[str | None, tuple[int, list[Task]]] = {}
        for task in tasks:
            metric = work.metrics[task.metric]
            judge = work.panel.judge_of(metric)
            limit = self.workers or (judge.capabilities.parallel_requests if judge is not None else 1)
            lanes.setdefault(metric.judge_name if judge is not None else "", (limit, []))[1].append(task)
        return {name: (limit, deque(groups(queue, group_size(len(queue), limit))))
                for name, (limit, queue) in lanes.items()}

    @staticmethod
    def _parallel(lanes: dict[str | None, tuple[int, deque[list[Task]]]], work: Work, record: Record) -> None:
        """Keep each lane's workers busy, each with its group's next task; on Ctrl-C start nothing new
        and record the tasks in flight as they finish (:mod:`localeval.inflight`; a second Ctrl-C
        stops at once)."""
        stopped = False
        groups_of: dict[Slot, Iterator[Task]] = {}
        calls: InFlight[Slot, MetricFinished] = InFlight("localeval")
        busy: set[Slot] = set()

        def finish(slot: Slot, finished: MetricFinished) -> None:
            nonlocal stopped
            busy.discard(slot)
            stopped = record(finished) or stopped

        def next_task(slot: Slot, pending: deque[list[Task]]) -> Task | None:
            task = next(groups_of.get(slot, iter(())), None)
            while task is None and pending:
                groups_of[slot] = iter(pending.popleft())
                task = next(groups_of[slot], None)
            return task

        try:
            while True:
                for name, (limit, pending) in lanes.items():
                    for slot in ((name, n) for n in range(limit)):
                        if not stopped and slot not in busy and (task := next_task(slot, pending)):
                            calls.start(slot, partial(work.measure, task))
                            busy.add(slot)
                if not calls:
                    return
                calls.hand_next(finish)
        except KeyboardInterrupt:
            calls.drain(finish, lambda count: work.events.emit(Interrupted(count)))
            raise


def unexpected(metric: Metric, err: Exception) -> MetricResult:
    """The result of a metric that raised: an error with the traceback's end in its details."""
    return MetricResult(
        metric=metric.display_name, kind=metric.kind, threshold=metric.threshold,
        error=f"unexpected {type(err).__name__}: {err}",
        details={"traceback": traceback.format_exc(limit=-8)},
    )
