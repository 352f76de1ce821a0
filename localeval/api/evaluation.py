"""``localeval.evaluate``: a run from Python, as ``localeval run`` makes one.

The judges answer from the CLI's cache (a rerun makes no model call), the run shows its progress
(a bar on a terminal, a redrawn line in a notebook), gets a folder under the CLI's folder of runs
(its journal, then every report format: ``localeval runs``, ``view`` and ``compare`` see it), can be
resumed, and reports how far to trust its judges. The work itself is the engine's,
:func:`localeval.run.runner.evaluate`, which does none of that and stays the call for a program that
manages its own journal and judges. :func:`aevaluate` is the same run for code inside an event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal, ParamSpec

from rich.console import Console
from rich.markup import escape

from localeval.api.judges import CacheSpec, JudgeSpec, cache_config, load_judges
from localeval.api.runs import (
    MEMORY,
    cases_sha256,
    check_same_judges,
    open_python_run,
    python_config,
    start_python_run,
)
from localeval.backends.base import Backend, JudgeUsage
from localeval.data.case import Case
from localeval.data.dataset import Dataset, DatasetSource
from localeval.data.results import RunReport
from localeval.errors import ConfigError, LocalevalError
from localeval.metaeval.check import CheckStore
from localeval.metaeval.trust import assess, from_checks, judge_fingerprints, markup_notes
from localeval.metrics.base import Metric
from localeval.paths import Paths
from localeval.reports.formats import write_reports
from localeval.reports.progress import in_notebook, notebook_progress, progress_bar
from localeval.reports.terminal import print_line
from localeval.run import runner
from localeval.run.events import Events, Listener, MetricFinished
from localeval.run.execution import Executor, Record, ThreadExecutor, Work
from localeval.run.journal import Journal
from localeval.run.runner import RunOptions, check_inputs
from localeval.run.schedule import Task

Progress = bool | Literal["auto"]

#: Set by :func:`aevaluate` in the context its worker thread runs in: cancelling the awaiting task sets it.
_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("localeval_stop", default=None)


def evaluate(
    dataset: Dataset | Iterable[Case],
    metrics: Sequence[Metric],
    judge: JudgeSpec | None = None,
    *,
    judges: Mapping[str, JudgeSpec] | None = None,
    cache: CacheSpec = True,
    progress: Progress = "auto",
    save: bool = True,
    run_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
    tags: Sequence[str] = (),
    resume: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
    events: Events | None = None,
) -> RunReport:
    """Score every case with every metric, as ``localeval run`` does, and return the report.

    ``dataset``: a :class:`Dataset` or the cases themselves. ``judge``: the default judge, for the
    metrics that name none: a backend (``make_backend(...)``; yours to close), a model's name or
    ``.gguf`` path, or a table of a ``[backend]``'s options (``{"kind": "ollama", "model": ...}``);
    not given, the CLI's default model, loaded only if a metric asks a judge. ``judges``: the named
    ones, which a metric asks by its ``judge`` option. A judge built here is closed on return.

    ``cache``: True answers repeated judge calls from the CLI's cache folder (``LOCALEVAL_CACHE_DIR``,
    else ``~/.cache/localeval``), False asks the model every time, a path uses that folder.
    ``progress``: "auto" shows a bar on a terminal and a redrawn line in a notebook, nothing elsewhere;
    True also prints a line every 10 s where there is no terminal (a CI log); False shows nothing.
    ``save``: the run gets a folder, ``run_dir`` or one under the CLI's folder of runs
    (``LOCALEVAL_RUNS_DIR``, else ``<LOCALEVAL_HOME>/runs``), holding its journal and, at the end,
    every report format (report.json, report.html, junit.xml, ...); ``name`` and ``tags`` are how
    ``localeval runs`` shows and finds it. ``resume``: a run's id or folder, started by this function
    and stopped (an error, Ctrl-C): only the results it lacks are judged, with the same cases,
    metrics and judges (anything else is refused), into its folder.

    ``options`` (order, threads, fail-fast, an executor) and ``events`` (your listeners) go to the
    engine as they are. Bad input (a case without a field a metric needs, a misspelt model) raises a
    :class:`~localeval.errors.InputError` before any judge loads; Ctrl-C raises
    :class:`~localeval.run.runner.RunInterrupted` once what was in flight is journaled.
    """
    cases = dataset if isinstance(dataset, Dataset) else Dataset.from_cases(dataset)
    metrics = list(metrics)
    check_inputs(cases, metrics)  # before anything loads
    if progress not in (True, False, "auto"):
        raise ConfigError(f"progress: expected True, False or 'auto', not {progress!r}")
    if resume is not None and (name is not None or tags):
        raise ConfigError("name and tags are the resumed run's own: give them when you start a run")
    paths, saved = Paths.from_environ(os.environ), save or run_dir is not None or resume is not None
    console = _console(progress)
    with ExitStack() as stack:
        journal = stack.enter_context(open_python_run(resume, paths.runs, cases, metrics)) if resume else None
        default, named = load_judges(judge, judges or {}, metrics, cache_config(cache), paths, stack, console)
        fingerprints = judge_fingerprints(default, named)
        metrics = from_checks(metrics, fingerprints, CheckStore(paths.judge_checks))  # before any judge call
        _stop_if_cancelled()  # aevaluate cancelled while the judges loaded: no run begun, none left behind
        if journal is not None:
            check_same_judges(journal, metrics, fingerprints)
        elif saved:  # only now: a judge that cannot load leaves no run behind
            where = Path(run_dir) if run_dir is not None else None
            journal = stack.enter_context(start_python_run(where, paths.runs, cases, metrics, fingerprints,
                                                           name, tags))
        events = events or Events()
        listen = stack.enter_context(_progress(progress, console))
        if listen is not None:
            stack.callback(events.subscribe(listen))
        report = runner.evaluate(cases, metrics, default, judges=named, events=events, journal=journal,
                                 options=_engine_options(options, cases, metrics))
        report = _as_the_cli_reports(report, cases, metrics, default, named, paths, journal)
    if journal is not None:
        write_reports(report, journal.path.parent)
        if listen is not None:
            print_line(console, escape(f"Run {report.run_id}: {journal.path.parent}"))
    return report


def _as_the_cli_reports(report: RunReport, dataset: Dataset, metrics: list[Metric], default: Backend | None,
                        named: dict[str, Backend], paths: Paths, journal: Journal | None) -> RunReport:
    """The report with what ``localeval run`` adds to it: each judge's trust lines, the run's name and tags."""
    fingerprints = judge_fingerprints(default, named)
    update: dict[str, Any] = {
        "trust": assess(metrics, fingerprints, CheckStore(paths.judge_checks), markup_notes(default, named)),
        # cases built in code: their sha256, so that `localeval runs` and `compare` can tell two runs' data apart
        "dataset": report.dataset or DatasetSource(path=MEMORY, sha256=cases_sha256(dataset)),
    }
    if journal is not None:
        header = journal.header
        update.update(name=header.name, tags=header.tags, config_sha256=header.config_sha256)
    return report.model_copy(update=update)


def _engine_options(options: RunOptions | None, dataset: Dataset, metrics: list[Metric]) -> RunOptions:
    """The engine's options: the caller's, recording the run's metrics as its config unless they say
    otherwise, and, inside :func:`aevaluate`, stopping when its task is cancelled."""
    options = options or RunOptions()
    if not options.config:
        options = dataclasses.replace(options, config=python_config(dataset, metrics))
    stop = _STOP.get()
    if stop is None:
        return options
    return dataclasses.replace(options, executor=Stoppable(options.executor or ThreadExecutor(options.workers), stop))


class Cancelled(LocalevalError):
    """:func:`aevaluate` was cancelled before its run began (while its judges loaded): nothing was judged."""


def _stop_if_cancelled() -> None:
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise Cancelled("cancelled while the judges loaded: no run was started")


@dataclasses.dataclass(frozen=True)
class Stoppable:
    """An executor that starts nothing new once ``stop`` is set: the tasks in flight finish and are
    journaled, then the run ends as Ctrl-C ends it (:class:`~localeval.run.runner.RunInterrupted`)."""

    inner: Executor
    stop: threading.Event

    def execute(self, tasks: Sequence[Task], work: Work, record: Record) -> JudgeUsage:
        left = len(tasks)

        def recorded(finished: MetricFinished) -> bool:
            nonlocal left
            left -= 1
            return record(finished) or self.stop.is_set()

        if self.stop.is_set():
            raise KeyboardInterrupt
        used = self.inner.execute(tasks, work, recorded)
        if self.stop.is_set() and left:
            raise KeyboardInterrupt  # the engine's "interrupted": what finished is in the journal
        return used


def _console(progress: Progress) -> Console:
    """Where the run says what it does (a judge loading, its bar, its folder): a terminal's stderr, quiet
    with ``progress`` off. In a notebook, the cell's output as plain text: a cell's stderr reads as an
    error, and a kernel says FORCE_COLOR=1, which would make rich draw a terminal's spinner in the cell,
    cursor codes and all."""
    notebook = in_notebook()
    return Console(stderr=not notebook, force_terminal=False if notebook else None, force_jupyter=False,
                   quiet=progress is False)


@contextmanager
def _progress(progress: Progress, console: Console) -> Iterator[Listener | None]:
    """The run's progress listener, None where nothing is shown (see :func:`evaluate`'s ``progress``)."""
    if progress is False:
        yield None
    elif in_notebook():
        with notebook_progress() as listen:
            yield listen
    elif console.is_terminal or progress is True:
        with progress_bar(console) as listen:
            yield listen
    else:
        yield None


P = ParamSpec("P")


def _awaitable(run: Callable[P, RunReport]) -> Callable[P, Coroutine[Any, Any, RunReport]]:
    """``run`` on a worker thread, awaited without blocking the event loop; cancelling the awaiting task
    stops the run after the calls in flight (journaled, so ``resume=`` finishes it), then raises
    :class:`asyncio.CancelledError` once the judges are closed."""

    async def in_a_thread(*args: P.args, **kwargs: P.kwargs) -> RunReport:
        stop = threading.Event()
        context = contextvars.copy_context()
        context.run(_STOP.set, stop)
        worker = asyncio.get_running_loop().run_in_executor(None, functools.partial(context.run, run, *args, **kwargs))
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            stop.set()
            with contextlib.suppress(Exception):  # the run's end (interrupted) is the cancellation's
                await worker
            raise

    return in_a_thread


aevaluate = _awaitable(evaluate)
aevaluate.__name__ = aevaluate.__qualname__ = "aevaluate"
aevaluate.__doc__ = """:func:`evaluate` for code that runs an event loop (a web server, a notebook's ``await``): the
same arguments and report, the work on a worker thread so the loop goes on. Cancelling the awaiting
task stops the run after the judge calls in flight, which are journaled (``resume=`` finishes it)."""
