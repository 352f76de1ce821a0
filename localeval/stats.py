"""Confidence intervals and tests for what a run and a comparison of two runs report. Pure: numbers
in, numbers out; every statistic comes from ``scipy.stats`` (imported on first use, so importing
localeval loads neither scipy nor numpy).

- :func:`wilson` a proportion's interval (a pass rate, a win rate): Wilson's score interval, which
  stays inside [0, 1] and is honest at 0 and n.
- :func:`mean_interval` a mean's interval by the bootstrap (BCa), and :func:`paired_mean_change`
  the mean change between two runs over the same cases: the bootstrap of the per-case differences
  (a paired bootstrap), so a case's own difficulty cancels out.
- :func:`win_rate` a win rate with ties as half a win, its interval Wilson's on the decided comparisons;
  :func:`resampled_intervals` the bootstrap of any statistic over resampled cases (a refitted ranking).
- :func:`mcnemar` the exact McNemar test of pass/fail flips between two runs over the same cases:
  a two-sided binomial test on the discordant pairs.

Resampling is seeded (:data:`SEED`): the same numbers give the same interval on every machine and
every rerun, so a report never changes by chance.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

CONFIDENCE = 0.95
RESAMPLES = 9999
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


def win_rate(wins: int, ties: int, losses: int, confidence: float = CONFIDENCE) -> Interval | None:
    """The share of comparisons won, a tie counting half a win, with its interval; None without any.

    Wilson's interval counts whole successes, and a tie is half of one. A tie says nothing about which
    side is better (the sign test sets ties aside for that reason), so the interval is Wilson's on the
    decided comparisons, ``wins / (wins + losses)``, carried onto the win rate with the ties' share as
    observed: ``rate = ties / 2n + (wins + losses) / n × decided share``. It excludes 0.5 exactly when
    Wilson's interval of the decided share does. All ties: 0.5, which no decided comparison moves.
    """
    if min(wins, ties, losses) < 0:
        raise ValueError(f"counts cannot be negative, got {wins} wins, {ties} ties, {losses} losses")
    n = wins + ties + losses
    if n == 0:
        return None
    rate = (wins + ties / 2) / n
    share = wilson(wins, wins + losses, confidence)
    if share is None:
        return Interval(rate, rate, rate)
    floor, weight = ties / (2 * n), (wins + losses) / n
    return Interval(rate, floor + weight * share.low, floor + weight * share.high)


def resampled_intervals(units: int, statistic: Callable[[Any], Any], resamples: int = RESAMPLES,
                        confidence: float = CONFIDENCE) -> list[tuple[float, float]] | None:
    """Each value ``statistic`` computes, with its percentile bootstrap interval over ``units`` (cases)
    resampled with replacement (seeded); None for fewer than two units.

    ``statistic`` is vectorized: it gets a numpy array of unit indices, one resample per row
    (``resamples × units``; one row: the units themselves), and returns its values one column per
    row (``values × resamples``), a value it cannot compute on a resample as NaN, whose interval is
    then NaN. Percentile, not BCa: BCa's jackknife costs a statistic per unit, and its correction is
    unstable for a statistic that jumps (a fit smoothed on some resamples only).
    """
    if units < 2:
        return None
    import numpy as np  # lazily, as scipy
    from scipy import stats

    def values(indices: Any, axis: int = -1) -> Any:
        rows = np.atleast_2d(np.moveaxis(indices, axis, -1))
        found = np.asarray(statistic(rows), dtype=float)
        return found if indices.ndim > 1 else found[:, 0]

    with warnings.catch_warnings():  # a value equal on every resample: scipy warns, the interval is that value
        warnings.simplefilter("ignore")
        result = stats.bootstrap((np.arange(units),), values, vectorized=True, n_resamples=resamples, batch=_BATCH,
                                 confidence_level=confidence, method="percentile", rng=np.random.default_rng(SEED))
    lows, highs = np.atleast_1d(result.confidence_interval.low), np.atleast_1d(result.confidence_interval.high)
    return [(float(low), float(high)) for low, high in zip(lows, highs, strict=True)]


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
                                     batch=_BATCH, method="percentile", rng=np.random.default_rng(SEED))
            low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return low, high
