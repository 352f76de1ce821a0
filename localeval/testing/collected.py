"""What a pytest session judged, test by test: the judgements the assertions told, and their JUnit properties.

The pytest plugin listens (:mod:`localeval.testing.recording`) while each test runs and
keeps every :class:`~localeval.testing.recording.Judgement` as a :class:`JudgedCase`, with
the test that made it; the session's summary table and report are made from these (:mod:`.summary`,
:mod:`.session_report`). Nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from localeval.data.results import MetricResult
from localeval.metrics.base import Metric
from localeval.testing.recording import Judgement

#: The prefix of every JUnit property localeval writes.
PREFIX = "localeval"


@dataclass(frozen=True)
class JudgedCase:
    """One assertion's judgement, with the test that made it: its node id, where it is
    (``tests/test_chat.py:12``) and its name, parameters included (``test_answer[capital]``)."""

    test: str
    location: str
    name: str
    judgement: Judgement

    def measured(self) -> Iterator[tuple[Metric, MetricResult]]:
        """Each metric as measured, with its result."""
        return zip(self.judgement.metrics, self.judgement.results)


def junit_properties(judgement: Judgement, taken: set[str]) -> list[tuple[str, str]]:
    """Each metric's score, threshold, verdict and reason as ``(name, value)`` properties of a test.

    The names are ``localeval.<metric>.<field>``; a metric that the same test already
    judged (on another case: its name is in ``taken``, which this adds to) is
    ``<metric>#2``, ``<metric>#3``, …. ``passed`` is ``true``, ``false`` or ``error``
    (the metric could not score: ``score`` is empty, ``reason`` is the error). A metric
    that asks a judge has ``judge`` too, the judge's model.
    """
    properties = []
    for metric, result in zip(judgement.metrics, judgement.results):
        key = _free(result.metric, taken)
        values = {
            "score": "" if result.score is None else str(result.score),
            "threshold": str(result.threshold),
            "passed": "error" if result.errored else str(bool(result.passed)).lower(),
            "reason": result.error if result.errored else result.reason,
        }
        if metric.needs_judge and judgement.judge is not None:
            values["judge"] = judgement.judge.model
        properties += [(f"{PREFIX}.{key}.{name}", value or "") for name, value in values.items()]
    return properties


def _free(metric: str, taken: set[str]) -> str:
    key, n = metric, 1
    while key in taken:
        n += 1
        key = f"{metric}#{n}"
    taken.add(key)
    return key
