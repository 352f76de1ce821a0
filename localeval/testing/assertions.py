"""Assertions for tests of LLM outputs: measure metrics on a case, fail with a readable message.

Use them in any test runner; under pytest, the ``localeval_judge`` fixture of
:mod:`localeval.testing.pytest_plugin` gives the judge::

    from localeval.testing import Expect, assert_evaluation, assert_passes

    def test_answer(localeval_judge):
        case = TestCase(input="Who wrote Hamlet?", actual_output="Shakespeare.")
        assert_passes(case, GEval(criteria="The answer is correct."), localeval_judge)

A failed assertion raises one ``AssertionError`` that lists every metric that did
not meet its expectation, one line each::

    case 'hamlet': 1 of 2 metrics did not meet expectations
      correctness: score 0.40 < threshold 0.50 (failed; passes when score >= threshold) — reason: ...

Whether a result passed is the metric's verdict (``MetricResult.passed``), so a
metric where lower is better (hallucination) passes at ``score <= threshold``.
A metric that could not score (``MetricResult.error``) meets no expectation.

:class:`ScriptedJudge` answers from canned replies, to unit-test your own metrics
without a model (see :mod:`localeval.testing.scripted`).

The assertions take a single-turn :class:`~localeval.data.case.TestCase` or a
:class:`~localeval.data.case.ConversationalTestCase`; a metric given the other kind
meets no expectation, and the message says why.

Each assertion tells what it measured, passed or not, to :mod:`localeval.testing.recording`:
outside pytest nobody listens; under pytest the plugin records each metric's score,
threshold, verdict and reason as the test's JUnit properties and in the session's summary.

Importing this module does not import pytest; :func:`cases` does, when called.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from localeval.backends.base import Backend
from localeval.data.case import Case, ConversationalTestCase
from localeval.data.dataset import Dataset, Format, UnknownFields
from localeval.data.results import MetricResult
from localeval.errors import BackendError, PromptError
from localeval.metrics.base import Metric
from localeval.testing.recording import Judgement, tell
from localeval.testing.scripted import ScriptedJudge, ScriptExhausted

if TYPE_CHECKING:
    from _pytest.mark.structures import ParameterSet

__all__ = [
    "Expect",
    "ScriptExhausted",
    "ScriptedJudge",
    "assert_evaluation",
    "assert_fails",
    "assert_passes",
    "assert_score",
    "assert_test",
    "cases",
    "clear_prepared",
    "describe",
    "prepared",
]

#: How many prepared metrics :func:`prepared` keeps (G-Eval's steps, say), oldest dropped first.
PREPARED_MAX = 256


@dataclass(frozen=True)
class Expect:
    """What a test expects of one metric's result on a case.

    ``passed``: True, the metric must pass; False, it must score and fail; None
    (the default), either. ``min`` and ``max`` bound the score, inclusive;
    ``exact`` wants the score within ``delta`` of it. Every expectation also wants
    a score: a metric that errored meets none, even ``Expect(metric)``.
    """

    metric: Metric
    passed: bool | None = None
    min: float | None = None
    max: float | None = None
    exact: float | None = None
    delta: float = 1e-9

    def __post_init__(self) -> None:
        if self.exact is not None and (self.min is not None or self.max is not None):
            raise ValueError("Expect: give exact, or min and/or max, not both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"Expect: min {self.min} is greater than max {self.max}")
        if self.delta < 0:
            raise ValueError(f"Expect: delta must not be negative, got {self.delta}")

    def met_by(self, result: MetricResult) -> bool:
        """Whether ``result`` meets this expectation (an error never does)."""
        if result.score is None:
            return False
        if self.passed is not None and result.passed is not self.passed:
            return False
        if self.exact is not None:
            return abs(result.score - self.exact) <= self.delta
        low = self.min if self.min is not None else float("-inf")
        high = self.max if self.max is not None else float("inf")
        return low <= result.score <= high

    def wants(self) -> str:
        """This expectation as a message clause ("expected to fail", "expected a score in [0.3, 0.9]").

        Empty for a plain pass: the verdict beside it says enough.
        """
        bound = ""
        if self.exact is not None:
            bound = f"a score of {_given(self.exact)} ± {self.delta:g}"
        elif self.min is not None and self.max is not None:
            bound = f"a score in [{_given(self.min)}, {_given(self.max)}]"
        elif self.min is not None:
            bound = f"a score >= {_given(self.min)}"
        elif self.max is not None:
            bound = f"a score <= {_given(self.max)}"
        outcome = {True: "to pass", False: "to fail", None: ""}[self.passed]
        if not bound:
            return "expected to fail" if self.passed is False else ""
        return f"expected {outcome} and {bound}" if outcome else f"expected {bound}"

    @property
    def marks(self) -> tuple[float, ...]:
        """The numbers a score is compared with here, so it is shown precisely enough beside them."""
        return tuple(v for v in (self.min, self.max, self.exact) if v is not None)


def assert_evaluation(
    case: Case, expectations: Sequence[Expect | Metric], judge: Backend | None = None
) -> list[MetricResult]:
    """Measure each metric on ``case`` and check it against its expectation; return the results.

    A bare metric in ``expectations`` means ``Expect(metric, passed=True)``. Every
    metric is measured before anything is checked, and the ``AssertionError``
    lists every one that fell short. Metrics that need a judge get ``judge``
    (``ValueError`` if it is None); each is prepared once per process and judge
    (see :func:`prepared`).
    """
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    wanted = [e if isinstance(e, Expect) else Expect(e, passed=True) for e in expectations]
    if not wanted:
        raise ValueError("assert_evaluation: no metrics given")
    _check_judge(wanted, judge)
    measured = [prepared(e.metric, judge) for e in wanted]
    results = [metric.measure(case, judge) for metric in measured]
    tell(Judgement(case, measured, results, None if judge is None else judge.fingerprint))
    lines = [
        describe(result, e.metric, e.wants(), e.marks)
        for e, result in zip(wanted, results)
        if not e.met_by(result)
    ]
    if lines:
        noun = "metric" if len(wanted) == 1 else "metrics"
        header = f"case {_case_label(case)}: {len(lines)} of {len(wanted)} {noun} did not meet expectations"
        raise AssertionError("\n".join([header, *(f"  {line}" for line in lines)]))
    return results


def assert_test(
    case: Case, metrics: Metric | Sequence[Metric], judge: Backend | None = None
) -> list[MetricResult]:
    """Assert that every metric passes on ``case``; the message lists every one that did not."""
    __tracebackhide__ = True
    return assert_evaluation(case, [metrics] if isinstance(metrics, Metric) else metrics, judge)


def assert_passes(case: Case, metric: Metric, judge: Backend | None = None) -> MetricResult:
    """Assert that ``metric`` scores ``case`` and passes; return its result."""
    __tracebackhide__ = True
    return assert_evaluation(case, [Expect(metric, passed=True)], judge)[0]


def assert_fails(case: Case, metric: Metric, judge: Backend | None = None) -> MetricResult:
    """Assert that ``metric`` scores ``case`` and fails; an error is not a failure. Return its result."""
    __tracebackhide__ = True
    return assert_evaluation(case, [Expect(metric, passed=False)], judge)[0]


def assert_score(
    case: Case,
    metric: Metric,
    judge: Backend | None = None,
    *,
    min: float | None = None,
    max: float | None = None,
    exact: float | None = None,
    delta: float = 1e-9,
) -> MetricResult:
    """Assert that ``metric``'s score on ``case`` is in [min, max], or within ``delta`` of ``exact``.

    Pass or fail does not matter here, only the score; give at least one bound.
    """
    __tracebackhide__ = True
    if min is None and max is None and exact is None:
        raise ValueError("assert_score: give min, max or exact")
    expect = Expect(metric, min=min, max=max, exact=exact, delta=delta)
    return assert_evaluation(case, [expect], judge)[0]


def describe(result: MetricResult, metric: Metric, wanted: str = "", marks: Sequence[float] = ()) -> str:
    """One line about a result: its score against the threshold and the pass rule, then the reason.

    ``wanted`` (e.g. "expected to fail") follows the verdict when given. The score
    has two decimals, or as many more as keep it on its side of the threshold
    and of ``marks`` (the bounds it was held to): 0.4996 is not shown as 0.50.
    """
    rule = f"passes when score {'<=' if _lower_is_better(metric) else '>='} threshold"
    threshold = _given(result.threshold)
    if result.score is None:
        error = _one_line(result.error or "")
        return f"{result.metric}: error, no score (threshold {threshold}; {rule}) — error: {error}"
    score = _score(result.score, result.threshold, *marks)
    sign = "<" if result.score < result.threshold else ">" if result.score > result.threshold else "="
    verdict = "passed" if result.passed else "failed"
    state = f"score {score} {sign} threshold {threshold} ({verdict}; {rule})"
    if wanted:
        state += f", {wanted}"
    reason = _one_line(result.reason)
    return f"{result.metric}: {state} — reason: {reason}" if reason else f"{result.metric}: {state}"


# -- preparing metrics once per process -------------------------------------------------

_PREPARED: OrderedDict[tuple[str, str, str], Metric] = OrderedDict()
_PREPARED_LOCK = threading.Lock()


def prepared(metric: Metric, judge: Backend | None) -> Metric:
    """``metric.prepare(judge)``, remembered for this metric's configuration and the judge's fingerprint.

    So a G-Eval used by many tests writes its evaluation steps once. A failure to
    prepare is not remembered: the unprepared metric tries again when it measures,
    and its result records the error (as in a run).
    """
    if metric.awaiting_check is not None and judge is not None:
        metric = _from_checks(metric, judge)
    fingerprint = judge.fingerprint.model_dump_json() if judge is not None else ""
    kind = type(metric)
    key = (f"{kind.__module__}.{kind.__qualname__}", metric.model_dump_json(), fingerprint)
    with _PREPARED_LOCK:
        if key in _PREPARED:
            _PREPARED.move_to_end(key)
            return _PREPARED[key]
    try:
        ready = metric.prepare(judge)
    except (BackendError, PromptError):
        return metric
    with _PREPARED_LOCK:
        _PREPARED[key] = ready
        while len(_PREPARED) > PREPARED_MAX:
            _PREPARED.popitem(last=False)
    return ready


def _from_checks(metric: Metric, judge: Backend) -> Metric:
    """The metric with the reading and threshold the judge's stored check chose (a ``ConfigError`` when it has
    none)."""
    from localeval.metaeval.check import CheckStore
    from localeval.metaeval.trust import from_checks, judge_name
    from localeval.paths import Paths

    store = CheckStore(Paths.from_environ(os.environ).judge_checks)
    return from_checks([metric], {judge_name(metric): judge.fingerprint}, store)[0]


def clear_prepared() -> None:
    """Forget every prepared metric (for tests of preparation itself)."""
    with _PREPARED_LOCK:
        _PREPARED.clear()


# -- parametrizing tests over a dataset ------------------------------------------------


def cases(
    path: str | os.PathLike[str],
    *,
    format: Format | None = None,
    fields: Mapping[str, str] | None = None,
    list_delimiter: str = "|",
    unknown_fields: UnknownFields = "error",
) -> list[ParameterSet]:
    """The cases of a dataset file as ``pytest.param`` values, for ``@pytest.mark.parametrize``.

    Each id is the case's ``name``, or else where it is ("qa.jsonl:3"). The options
    are :meth:`Dataset.load`'s, and so are the errors: a ``DatasetError`` naming
    the file, line and field. A relative ``path`` is relative to the working
    directory; ``Path(__file__).with_name("qa.jsonl")`` finds a file beside the test.
    """
    import pytest

    dataset = Dataset.load(
        path, format=format, fields=fields, list_delimiter=list_delimiter, unknown_fields=unknown_fields
    )
    return [
        pytest.param(case, id=case.name or _short_location(location))
        for case, location in zip(dataset.cases, dataset.locations)
    ]


# -- helpers ---------------------------------------------------------------------------


def _check_judge(expectations: Sequence[Expect], judge: Backend | None) -> None:
    if judge is not None:
        return
    for expect in expectations:
        if expect.metric.needs_judge:
            raise ValueError(
                f"metric '{expect.metric.display_name}' needs a judge: pass judge=... "
                "(under pytest, the localeval_judge fixture)"
            )


def _lower_is_better(metric: Metric) -> bool:
    # Only metrics where a low score is good set it (hallucination); see Metric.lower_is_better.
    return bool(getattr(metric, "lower_is_better", False))


def _given(value: float) -> str:
    """A number someone chose (a threshold, a bound) exactly, with at least two decimals: 0.50, 0.0015."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(value)


def _score(score: float, *marks: float) -> str:
    """A score with two decimals, or as many more as keep it on the same side of each mark."""
    for places in range(2, 17):
        text = f"{score:.{places}f}"
        if all(_sign(float(text) - mark) == _sign(score - mark) for mark in marks):
            return text
    return repr(score)


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _case_label(case: Case) -> str:
    if case.name:
        return repr(case.name)
    # A conversation without a name is known by how it starts.
    text = _one_line(case.turns[0].content if isinstance(case, ConversationalTestCase) else case.input)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _short_location(location: str) -> str:
    path, _, line = location.rpartition(":")
    return f"{Path(path).name}:{line}" if path else location
