"""Confidence intervals and tests for what a run and a comparison of two runs report. Pure: numbers
in, numbers out; every statistic comes from ``scipy.stats`` (imported on first use, so importing
localeval loads neither scipy nor numpy).

- :func:`wilson` a proportion's interval (a pass rate, a win rate): Wilson's score interval, which
  stays inside [0, 1] and is honest at 0 and n.
- :func:`mean_interval` a mean's interval by the bootstrap (BCa), and :func:`paired_mean_change`
  the mean change between two runs over the same cases: the bootstrap of the per-case differences
  (a paired bootstrap), so a case's own difficulty cancels out.
- :func:`mcnemar` the exact McNemar test of pass/fail flips between two runs over the same cases:
  a two-sided binomial test on the discordant pairs.

Resampling is seeded (:data:`SEED`): the same numbers give the same interval on every machine and
every rerun, so a report never changes by chance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 20261125

#: The fewest values a bootstrap interval is given for. Below it the resamples can only vary as much as
#: the few values happen to (two cases that both dropped by 0.1 give an interval of zero width), so the
#: interval is far too narrow to say anything: no interval, and no verdict from it.
MIN_VALUES = 10
SEED = 20261125
#: Resamples drawn at a time: memory stays ~100 × n floats (9999 × n at once is 80 MB at 1,000 values and
#: 800 MB at 10,000), and the draws, so the interval, are the same as in one batch.
_BATCH = 100


class Interval(NamedTuple):
    """A point estimate with its confidence interval (``low`` ≤ ``estimate`` ≤ ``high``)."""

    estimate: float
    low: float
    high: float

    def excludes(self, value: float) -> bool:
        """Whether ``value`` lies outside the interval: the data can tell the estimate from it."""
        return value < self.low or value > self.high


class McNemar(NamedTuple):
    """Pass/fail flips over the same cases: ``fixed`` failed before and passed after, ``broken`` the
    reverse; ``p_value`` the exact two-sided test that flips either way are equally likely."""

    fixed: int
    broken: int
    p_value: float


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval | None:
    """The proportion ``successes / n`` with its Wilson score interval; None when ``n`` is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within 0..{n}, got {successes}")
    from scipy import stats  # lazily: importing localeval must not load scipy

    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(successes / n, float(ci.low), float(ci.high))


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """The mean of ``values`` with its bootstrap (BCa) interval; None for fewer than :data:`MIN_VALUES`.

    All values equal: the interval is that value (no resample can differ)."""
    if len(values) < MIN_VALUES:
        return None
    if min(values) == max(values):
        return Interval(values[0], values[0], values[0])
    mean = math.fsum(values) / len(values)
    low, high = _bootstrap(values, confidence)
    return Interval(mean, min(low, mean), max(high, mean))


def paired_mean_change(before: Sequence[float], after: Sequence[float],
                       confidence: float = CONFIDENCE) -> Interval | None:
    """The mean of ``after[i] - before[i]`` over the same cases, with its paired bootstrap interval;
    None for fewer than :data:`MIN_VALUES` pairs."""
    if len(before) != len(after):
        raise ValueError(f"paired values differ in length: {len(before)} and {len(after)}")
    return mean_interval([b - a for a, b in zip(before, after, strict=True)], confidence)


def mcnemar(passed_before: Sequence[bool], passed_after: Sequence[bool]) -> McNemar:
    """The exact McNemar test of pass/fail over the same cases, before and after."""
    if len(passed_before) != len(passed_after):
        raise ValueError(f"paired verdicts differ in length: {len(passed_before)} and {len(passed_after)}")
    fixed = sum(1 for a, b in zip(passed_before, passed_after, strict=True) if not a and b)
    broken = sum(1 for a, b in zip(passed_before, passed_after, strict=True) if a and not b)
    if fixed + broken == 0:
        return McNemar(0, 0, 1.0)
    from scipy import stats

    return McNemar(fixed, broken, float(stats.binomtest(fixed, fixed + broken, 0.5).pvalue))


def _bootstrap(values: Sequence[float], confidence: float) -> tuple[float, float]:
    import numpy as np  # lazily, as scipy
    from scipy import stats

    data = (np.asarray(values, dtype=float),)
    with warnings.catch_warnings():  # BCa warns on a degenerate jackknife; fall back below
        warnings.simplefilter("ignore")
        result = stats.bootstrap(data, np.mean, confidence_level=confidence, n_resamples=RESAMPLES,
                                 batch=_BATCH, method="BCa", rng=np.random.default_rng(SEED))
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if not (math.isfinite(low) and math.isfinite(high)):
            result = stats.bootstrap(data, np.mean, confidence_level=confidence, n_resamples=RESAMPLES,
                                     method="percentile", rng=np.random.default_rng(SEED))
            low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return low, high
