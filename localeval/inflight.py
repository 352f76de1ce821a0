"""Calls in flight on threads, and what Ctrl-C does to them.

The one mechanism behind the runner's :class:`~localeval.run.execution.ThreadExecutor`
and target generation (:mod:`localeval.targets.generate`): the caller starts calls,
each under a key, and takes each result back on its own thread as it finishes (to
journal it). On Ctrl-C the caller starts nothing new and :meth:`InFlight.drain`
waits for the calls in flight and hands their results over as usual: their
servers work on them anyway, and a resumed run then does not send them again
(an unseeded sampled judge call is not cached, so only the journal keeps it).

A second Ctrl-C while waiting stops at once: the calls still in flight are
abandoned, their results lost. Each call runs on a daemon thread of its own, so
an abandoned call does not hold the process's exit (a ``ThreadPoolExecutor``'s
threads are joined at exit, which would wait for them after all).
"""

from __future__ import annotations

import itertools
import queue
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

K = TypeVar("K")
T = TypeVar("T")


class InFlight(Generic[K, T]):
    """Calls running on daemon threads, each under a key; see the module's docstring.

    Not itself thread-safe: one thread starts the calls and takes their results.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._finished: queue.SimpleQueue[tuple[K, T | None, BaseException | None]] = queue.SimpleQueue()
        self._ready = threading.Semaphore(0)  # released once per result put in _finished
        self._running = 0
        self._numbers = itertools.count(1)

    def __len__(self) -> int:
        """Calls started whose result has not been handed over yet."""
        return self._running

    def start(self, key: K, call: Callable[[], T]) -> None:
        """Run ``call`` on a thread of its own; its result is handed over with ``key``."""
        thread = threading.Thread(target=self._run, args=(key, call), name=f"{self._name}-{next(self._numbers)}",
                                  daemon=True)
        with ctrl_c_held():  # a call that runs is counted, so a Ctrl-C then waits for it too
            thread.start()
            self._running += 1

    def hand_next(self, hand: Callable[[K, T], object]) -> None:
        """Wait for the next call to finish and ``hand`` over its key and result.

        Ctrl-C interrupts the wait (the result, if any, stays for :meth:`drain`), not
        the handing over (:func:`ctrl_c_held`). A call that raised raises here.
        """
        self._ready.acquire()
        with ctrl_c_held():
            key, value, error = self._finished.get()  # there since _ready was released
            self._running -= 1
            if error is not None:
                raise error
            hand(key, value)  # type: ignore[arg-type]  # value is None only with an error

    def drain(self, hand: Callable[[K, T], object], announce: Callable[[int], object]) -> None:
        """After a Ctrl-C: ``announce`` how many calls are in flight, then wait for each and ``hand``
        it over (one that raised is skipped). A second Ctrl-C raises :class:`KeyboardInterrupt` at
        once, the rest abandoned."""
        if self._running:
            announce(self._running)
        while self._running:
            key, value, error = self._finished.get()  # a second Ctrl-C interrupts this wait
            self._running -= 1
            if error is None:  # one that raised is a bug the run would report; it is stopping anyway
                with ctrl_c_held():
                    hand(key, value)  # type: ignore[arg-type]  # value is None only with an error

    def _run(self, key: K, call: Callable[[], T]) -> None:
        try:
            value = call()
        except BaseException as err:  # noqa: BLE001 -- raised again on the caller's thread
            self._finished.put((key, None, err))
        else:
            self._finished.put((key, value, None))
        self._ready.release()


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Hold Ctrl-C back until the block ends, then deliver it as usual: a result is then journaled
    and counted together, or not at all.

    Python runs signal handlers on the main thread only: elsewhere, or where SIGINT's handler is
    not Python's, this holds nothing back.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # to the handler it was meant for
