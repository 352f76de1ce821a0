"""What a run shows while it works: a bar on a terminal, a line now and then in a log, a redrawn
line in a notebook.

Each is a run-event listener (:mod:`localeval.run.events`) yielded by a context manager, so a run
shows progress by subscribing it: ``localeval run`` does with :func:`progress_bar`,
:func:`localeval.evaluate` with the one that suits where it runs.
"""

from __future__ import annotations

import html
import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from localeval.data.results import MetricResult
from localeval.reports.terminal import print_line
from localeval.run.events import Event, Interrupted, Listener, MetricFinished, RunStarted

#: Outside a terminal (a CI log, a pipe) no bar is drawn: a line of progress is printed instead, at
#: most this often, as results finish. By time rather than by share done, so that the pace is the
#: same for 20 results and 20,000: a CI log (which stamps each line) shows a few lines a minute, a
#: 3-minute run about 18, an hour's 360, and no run is silent for long enough to look hung (or to
#: pass the 10 minutes without output after which some CI services stop a job), as a line every
#: 10% would be in a 2-hour run.
PROGRESS_PERIOD_S = 10.0


@contextmanager
def progress_bar(console: Console, clock: Callable[[], float] = time.monotonic) -> Iterator[Listener]:
    """Yields a run-event listener that shows progress: a bar on a terminal; elsewhere a line at
    most every :data:`PROGRESS_PERIOD_S` seconds (``clock``'s), as results finish.

    Shows results done of the total (those resumed from the journal count as done),
    the rate, the time left, and how many failed and errored so far.
    """
    columns = (
        TextColumn("[bold]judging"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TextColumn("[red]{task.fields[failed]} failed[/] [yellow]{task.fields[errored]} errored[/]"),
        TimeRemainingColumn(),
    )
    piped = not console.is_terminal
    with Progress(*columns, console=console, transient=True, disable=piped) as bar:
        task = bar.add_task("judging", total=None, rate="", failed=0, errored=0)
        counts = _Counts(started=clock())
        pace = Pace(clock, counts.started)

        def listen(event: Event) -> None:
            if isinstance(event, RunStarted):
                counts.total, counts.done = event.total, event.resumed
                counts.started = pace.last = clock()
                bar.update(task, total=event.total, completed=event.resumed)
            elif isinstance(event, MetricFinished):
                counts.add(event.result)
                rate = counts.computed / max(clock() - counts.started, 1e-9)
                bar.update(task, advance=1, rate=f"{rate:.2f}/s", failed=counts.failed, errored=counts.errored)
                if piped and pace.due():
                    print_line(console, escape(counts.line(rate)))
            elif isinstance(event, Interrupted):
                print_finishing(console, event.in_flight, "results")

        yield listen


@dataclass
class Pace:
    """When a piped console's next line of progress is due: at most every :data:`PROGRESS_PERIOD_S`
    seconds of ``clock``, counted from ``last`` (the start, then the last line printed)."""

    clock: Callable[[], float]
    last: float

    def due(self) -> bool:
        """Whether a line is due now; if so, the period starts again."""
        now = self.clock()
        if now - self.last < PROGRESS_PERIOD_S:
            return False
        self.last = now
        return True


@dataclass
class _Counts:
    """What a run has done so far, for its progress."""

    started: float  #: when (by the progress clock) it started
    total: int = 0
    done: int = 0  #: resumed ones included
    computed: int = 0
    failed: int = 0
    errored: int = 0

    def add(self, result: MetricResult) -> None:
        self.done += 1
        self.computed += 1
        if result.errored:
            self.errored += 1
        elif not result.passed:
            self.failed += 1

    def line(self, rate: float) -> str:
        """"judging: 60/200 (30%), 2.00/s, 5 failed, 1 errored, about 1 min 10 s left"."""
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        left = self.total - self.done
        eta = f", about {_duration(left / rate)} left" if left > 0 and rate > 0 else ""
        return f"judging: {self.done}/{self.total}{share}, {rate:.2f}/s, {self.failed} failed, {self.errored} errored{eta}"


def _duration(seconds: float) -> str:
    """"40 s", "1 min 10 s", "2 h 5 min"."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def print_finishing(console: Console, in_flight: int, what: str) -> None:
    """The line a first Ctrl-C prints while the work in flight finishes (to be saved)."""
    print_line(console, escape(f"Interrupted: finishing {in_flight} {what} in flight; Ctrl-C again to stop now"))


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (rich's test: IPython's kernel shell, Colab, Databricks)."""
    return Console().is_jupyter


#: A notebook's line is redrawn at most this often (each redraw is a message to the browser), and at the end.
NOTEBOOK_PERIOD_S = 0.5


@contextmanager
def notebook_progress(show: Callable[..., Any] | None = None,
                      clock: Callable[[], float] = time.monotonic) -> Iterator[Listener]:
    """Yields a run-event listener that shows progress in a Jupyter notebook's cell: an HTML progress
    bar and the line a log gets, redrawn in place at most every :data:`NOTEBOOK_PERIOD_S`, and at the end.

    ``show`` is IPython's ``display`` (the default): a display id lets the cell's output be updated
    without a widget library (rich's live display needs ipywidgets in a notebook).
    """
    if show is None:  # a notebook has IPython: nothing to install
        show = importlib.import_module("IPython.display").display
    cell = _NotebookCell(show, clock)
    try:
        yield cell.listen
    finally:
        if cell.handle is not None:  # where the run stopped, or that it finished
            cell.draw()


class _NotebookCell:
    """One run's progress line in a notebook cell: shown once, then updated through its display handle."""

    def __init__(self, show: Callable[..., Any], clock: Callable[[], float]) -> None:
        self.show, self.clock = show, clock
        self.counts = _Counts(started=clock())
        self.handle: Any = None
        self.drawn_at = float("-inf")
        self.note = ""

    def listen(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.counts.total, self.counts.done = event.total, event.resumed
            self.counts.started = self.clock()
            self.draw()
        elif isinstance(event, MetricFinished):
            self.counts.add(event.result)
            if self.clock() - self.drawn_at >= NOTEBOOK_PERIOD_S:
                self.draw()
        elif isinstance(event, Interrupted):
            self.note = f"interrupted: finishing {event.in_flight} results in flight"
            self.draw()

    def draw(self) -> None:
        self.drawn_at = self.clock()
        rate = self.counts.computed / max(self.drawn_at - self.counts.started, 1e-9)
        line = NotebookLine(self.counts.done, self.counts.total, self.counts.line(rate), self.note)
        if self.handle is None:
            self.handle = self.show(line, display_id=True)
        else:
            self.handle.update(line)


@dataclass(frozen=True)
class NotebookLine:
    """A notebook's progress line: HTML for the notebook, the plain line for anything else."""

    done: int
    total: int
    text: str
    note: str = ""

    def _repr_html_(self) -> str:
        bar = f'<progress value="{self.done}" max="{self.total}"></progress>' if self.total else "<progress></progress>"
        return f"{bar} <code>{html.escape(str(self))}</code>"

    def __str__(self) -> str:
        return self.text + (f" ({self.note})" if self.note else "")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """The plain line where a front end shows text (IPython's pretty printer)."""
        printer.text(str(self))
