"""Spearman ρ's bootstrap interval in meta-eval: right where it can be known, about as wide as theory says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from localeval.metaeval.correlations import pooled, summary_level


def bivariate(n: int, rho: float, seed: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = rho * x + math.sqrt(1 - rho * rho) * rng.standard_normal(n)
    return x.tolist(), y.tolist()


def fisher_interval(rho: float, n: int) -> tuple[float, float]:
    """Spearman's 95% interval by Fisher's z with Bonett and Wright's standard error (2000)."""
    z, se = math.atanh(rho), math.sqrt((1 + rho * rho / 2) / (n - 3))
    return math.tanh(z - 1.959964 * se), math.tanh(z + 1.959964 * se)


def test_a_perfect_ranking_has_no_room_either_side():
    xs = [float(i) for i in range(30)]
    c = pooled(xs, [2 * x + 1 for x in xs])
    assert c.spearman == pytest.approx(1.0)
    assert c.spearman_interval == pytest.approx((1.0, 1.0))


@pytest.mark.parametrize(("rho", "n", "seed"), [(0.0, 300, 1), (0.5, 200, 2), (0.8, 120, 3)])
def test_the_interval_holds_the_estimate_and_is_as_wide_as_theory_says(rho, n, seed):
    xs, ys = bivariate(n, rho, seed)
    c = pooled(xs, ys)
    assert c.spearman is not None and c.spearman_interval is not None
    low, high = c.spearman_interval
    assert low < c.spearman < high
    theory = fisher_interval(c.spearman, n)
    assert low == pytest.approx(theory[0], abs=0.04) and high == pytest.approx(theory[1], abs=0.04)


def test_independent_scores_give_an_interval_around_zero():
    xs, ys = bivariate(300, 0.0, 7)
    low, high = pooled(xs, ys).spearman_interval or (math.nan, math.nan)
    assert low < 0 < high and high - low < 0.3


def test_the_same_data_gives_the_same_interval():
    xs, ys = bivariate(60, 0.4, 5)
    assert pooled(xs, ys).spearman_interval == pooled(xs, ys).spearman_interval


def test_too_few_items_or_a_constant_judge_have_no_interval():
    xs, ys = bivariate(9, 0.5, 4)
    assert pooled(xs, ys).spearman is not None and pooled(xs, ys).spearman_interval is None
    assert pooled([1.0] * 20, list(range(20))).spearman_interval is None


def test_summary_level_resamples_the_groups_not_the_items():
    # 12 groups of 5: in six the judge ranks as people do (ρ = 1), in six in reverse (ρ = -1).
    human = [float(i % 5) for i in range(60)]
    judge = [h if i // 5 % 2 == 0 else -h for i, h in enumerate(human)]
    groups = [i // 5 for i in range(60)]
    c = summary_level(judge, human, groups)
    assert (c.groups, c.spearman) == (12, pytest.approx(0.0))
    low, high = c.spearman_interval or (math.nan, math.nan)
    # The mean of 12 values of ±1: the bootstrap's spread is about 1.96 / sqrt(12) = 0.57 each side.
    assert -0.75 < low < -0.4 and 0.4 < high < 0.75


def test_summary_level_needs_ten_groups_for_an_interval():
    human = [float(i % 5) for i in range(45)]
    c = summary_level(human, human, [i // 5 for i in range(45)])
    assert (c.groups, c.spearman, c.spearman_interval) == (9, pytest.approx(1.0), None)
