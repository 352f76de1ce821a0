"""What a run announces while it works: a small, local publish/subscribe API.

The progress bar and the CLI's messages are subscribers like any other; users add
their own with :meth:`Events.subscribe` (a dashboard, a log line per case). Events
are plain frozen dataclasses delivered in this process, one at a time, in the order
they happen; nothing leaves the machine.

A listener runs on whichever thread finished the work (a run with an HTTP judge
measures on several threads), but never two listeners at once: delivery holds a lock.
A listener that raises stops the run, as any other bug would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from localeval.data.results import MetricResult, RunReport


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    cases: int
    metrics: tuple[str, ...]
    total: int  #: (case, metric) results the run will have
    resumed: int  #: of those, already in the journal: not computed again


@dataclass(frozen=True)
class MetricStarted:
    case_index: int
    metric: str


@dataclass(frozen=True)
class MetricFinished:
    case_index: int
    result: MetricResult
    duration_s: float
    model_calls: int  #: judge calls that reached the model for this result
    cache_hits: int  #: judge calls answered from the cache


@dataclass(frozen=True)
class Interrupted:
    """Ctrl-C: nothing new starts, and the ``in_flight`` calls already running are waited for and
    recorded (a resumed run does not send them again); a second Ctrl-C stops at once."""

    in_flight: int


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    duration_s: float
    report: RunReport


Event = RunStarted | MetricStarted | MetricFinished | Interrupted | RunFinished
Listener = Callable[[Event], None]


class Events:
    """Delivers each event to every subscriber, in subscription order."""

    def __init__(self, *listeners: Listener) -> None:
        self._listeners: list[Listener] = list(listeners)
        self._lock = threading.RLock()  # a listener may subscribe another

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; returns the function that removes it."""
        with self._lock:
            self._listeners.append(listener)
        return lambda: self._unsubscribe(listener)

    def emit(self, event: Event) -> None:
        with self._lock:
            for listener in list(self._listeners):
                listener(event)

    def _unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.remove(listener)
