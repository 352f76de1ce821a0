"""Where the assertions tell what they judged: nobody, unless a listener is set (the pytest plugin sets one).

Every assertion of :mod:`localeval.testing.assertions` measures its metrics and then
calls :func:`tell` with a :class:`Judgement` (the case, the metrics as measured, their
results, the judge's fingerprint), whether the assertion then passes or fails. Outside
pytest no listener is set and :func:`tell` does nothing, so the assertions need no pytest.
The pytest plugin sets one around each test (:func:`listening`): it records the scores
as the test's JUnit properties and keeps them for the session's summary and report.

One listener at a time, for the whole process: a test that asserts from several threads
tells the same listener, which must take calls from any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localeval.backends.base import Fingerprint
    from localeval.data.case import Case
    from localeval.data.results import MetricResult
    from localeval.metrics.base import Metric

#: The kind in a judge's fingerprint that says its replies are scripted (:class:`~localeval.testing.ScriptedJudge`).
SCRIPTED_KIND = "scripted"


@dataclass(frozen=True)
class Judgement:
    """One assertion's measurements: ``results[i]`` is ``metrics[i]`` (as measured) on ``case``."""

    case: Case
    metrics: Sequence[Metric]
    results: Sequence[MetricResult]
    judge: Fingerprint | None

    @property
    def scripted(self) -> bool:
        """The judge answered from a script, not a model (a scripted judge standing in for a backend is not)."""
        return self.judge is not None and self.judge.kind == SCRIPTED_KIND


Listener = Callable[[Judgement], None]

_listener: Listener | None = None


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Send every judgement to ``listener`` inside the block; the one set before comes back after it."""
    global _listener
    before, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = before


def tell(judgement: Judgement) -> None:
    """Give ``judgement`` to the listener, if one is set."""
    listener = _listener
    if listener is not None:
        listener(judgement)
