"""localeval.stats: the intervals and tests runs and comparisons report, against values computed by
hand or known from the literature."""

from __future__ import annotations

import math

import pytest

from localeval import stats


def test_wilson_matches_the_closed_form() -> None:
    # Wilson's interval for 8 of 10 at 95%: centre (p + z²/2n) / (1 + z²/n), half-width
    # z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n).
    z, n, p = 1.959963984540054, 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    interval = stats.wilson(8, 10)
    assert interval is not None
    assert interval.estimate == 0.8
    assert interval.low == pytest.approx(centre - half, abs=1e-9)
    assert interval.high == pytest.approx(centre + half, abs=1e-9)


def test_wilson_is_honest_at_the_edges() -> None:
    none_passed = stats.wilson(0, 20)
    assert none_passed is not None and none_passed.low == 0.0 and 0.1 < none_passed.high < 0.2
    assert stats.wilson(0, 0) is None
    with pytest.raises(ValueError, match="within 0..3"):
        stats.wilson(4, 3)


def test_mean_interval_contains_the_mean_and_narrows_with_more_data() -> None:
    few = stats.mean_interval([0.2, 0.4, 0.6, 0.8] * 3)
    many = stats.mean_interval([0.2, 0.4, 0.6, 0.8] * 25)
    assert few is not None and many is not None
    assert few.low < 0.5 < few.high and many.low < 0.5 < many.high
    assert many.high - many.low < (few.high - few.low) / 2
    assert stats.mean_interval([0.7]) is None
    assert stats.mean_interval([0.7] * 10) == stats.Interval(0.7, 0.7, 0.7)


def test_too_few_values_get_no_interval_rather_than_a_falsely_narrow_one() -> None:
    # Two cases that both dropped by 0.1: every resample is -0.1, an interval of zero width.
    assert stats.paired_mean_change([0.5, 0.6], [0.4, 0.5]) is None
    assert stats.mean_interval([0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6]) is None  # 9 < MIN_VALUES
    assert stats.mean_interval([0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 0.5]) is not None


def test_mean_interval_is_the_same_on_every_call() -> None:
    values = [0.1, 0.9, 0.3, 0.35, 0.8, 0.55]
    assert stats.mean_interval(values) == stats.mean_interval(values)


def test_paired_change_sees_a_consistent_small_shift_that_unpaired_noise_would_hide() -> None:
    before = [0.1, 0.9, 0.3, 0.7, 0.5, 0.2, 0.8, 0.4, 0.6, 0.35]
    after = [b + 0.05 for b in before]
    change = stats.paired_mean_change(before, after)
    assert change is not None
    assert change.estimate == pytest.approx(0.05)
    assert change.excludes(0.0)
    with pytest.raises(ValueError, match="differ in length"):
        stats.paired_mean_change([0.1], [0.1, 0.2])


def test_paired_change_of_noise_includes_zero() -> None:
    before = [0.5, 0.6, 0.4, 0.55, 0.45, 0.5, 0.6, 0.4, 0.5, 0.5]
    after = [0.55, 0.55, 0.45, 0.5, 0.5, 0.45, 0.65, 0.35, 0.45, 0.55]
    change = stats.paired_mean_change(before, after)
    assert change is not None and not change.excludes(0.0)


def test_mcnemar_exact_p_values() -> None:
    # 10 flips all one way: two-sided binomial p = 2 / 2^10.
    assert stats.mcnemar([True] * 10, [False] * 10) == stats.McNemar(0, 10, 2 / 1024)
    balanced = stats.mcnemar([True, False] * 5, [False, True] * 5)
    assert (balanced.fixed, balanced.broken, balanced.p_value) == (5, 5, 1.0)
    assert stats.mcnemar([True, False], [True, False]) == stats.McNemar(0, 0, 1.0)
