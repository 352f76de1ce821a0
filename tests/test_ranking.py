"""Win rates, the Bradley–Terry fit, their intervals and the pair verdict (localeval/metrics/ranking.py),
and the statistics they take from localeval/stats.py, with exact numbers."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from localeval.metrics.ranking import (
    FALLBACK_SMOOTHING,
    Record,
    better_side,
    bradley_terry,
    head_to_head,
    rank,
    records,
    soft_wins,
    win_probability,
)
from localeval.stats import SEED, resampled_intervals, win_rate

Z = NormalDist().inv_cdf(0.975)


def wilson_bounds(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval by its closed form."""
    centre, half = k + Z * Z / 2, Z * math.sqrt(k * (n - k) / n + Z * Z / 4)
    return (centre - half) / (n + Z * Z), (centre + half) / (n + Z * Z)


def one_case_each(comparisons: list[tuple[str, str, float]]) -> list[list[tuple[str, str, float]]]:
    return [[c] for c in comparisons]


def test_two_contestants_have_the_closed_form_strengths() -> None:
    # P(a beats b) = σ(s_a - s_b) = 0.8 ⇒ s_a - s_b = log 4, shifted to mean 0.
    strengths = bradley_terry(["a", "b"], [("a", "b", 0.8)])
    assert strengths["a"] == pytest.approx(math.log(4) / 2, abs=1e-12)
    assert strengths["b"] == pytest.approx(-math.log(4) / 2, abs=1e-12)


def test_preferences_drawn_from_strengths_give_those_strengths_back() -> None:
    truth = {"x": 1.0, "y": 0.0, "z": -1.0}
    comparisons = [(a, b, win_probability(truth[a], truth[b])) for a, b in (("x", "y"), ("x", "z"), ("y", "z"))]
    fitted = bradley_terry(list(truth), comparisons)
    assert fitted == {n: pytest.approx(s, abs=1e-9) for n, s in truth.items()}


def test_the_fit_meets_the_likelihood_equations_observed_wins_equal_expected_wins() -> None:
    comparisons = [("x", "y", 0.8), ("x", "z", 0.6), ("y", "z", 0.5), ("x", "y", 0.3)]
    names = ["x", "y", "z"]
    s = bradley_terry(names, comparisons)
    wins = soft_wins(names, comparisons)
    for name in names:
        observed = sum(w for (a, _), w in wins.items() if a == name)
        opponents = [b if a == name else a for a, b, _ in comparisons if name in (a, b)]
        expected = sum(win_probability(s[name], s[other]) for other in opponents)
        assert observed == pytest.approx(expected, abs=1e-9)
    assert sum(s.values()) == pytest.approx(0.0, abs=1e-12)


def test_rank_orders_best_first_by_strength_with_win_rates_from_the_outcomes() -> None:
    comparisons = [("x", "y", 0.8), ("x", "z", 0.6), ("y", "z", 0.5)]
    ranking = rank(["y", "x", "z"], one_case_each(comparisons), [("x", "y", "x"), ("x", "z", None), ("y", "z", None)])
    assert [s.name for s in ranking.standings] == ["x", "z", "y"]
    assert [s.rank for s in ranking.standings] == [1, 2, 3]
    assert [(s.wins, s.ties, s.losses, s.comparisons) for s in ranking.standings] == [
        (1, 1, 0, 2), (0, 2, 0, 2), (0, 1, 1, 2)
    ]
    assert [s.win_rate for s in ranking.standings] == [0.75, 0.5, 0.25]
    x = ranking.standings[0]
    assert (x.win_rate_low, x.win_rate_high) == (pytest.approx(0.25 + 0.5 * wilson_bounds(1, 1)[0]), 0.75)
    assert ranking.smoothing == 0.0


def test_a_strength_interval_is_the_bootstrap_of_the_refits_over_cases() -> None:
    # Three cases of a against b. A resample of three holds k of the 0.9 case, and the others
    # split; the strength of a is half the log-odds of its soft wins. Drawn with the same seed,
    # the resamples are the same: the interval is the percentiles of those refits.
    cases = [[("a", "b", 0.9)], [("a", "b", 0.6)], [("a", "b", 0.3)]]
    ranking = rank(["a", "b"], cases, [], resamples=999)
    draws = np.random.default_rng(SEED).integers(0, 3, size=(999, 3))
    prefs = np.array([0.9, 0.6, 0.3])[draws].sum(axis=1)
    refits = np.log(prefs / (3 - prefs)) / 2
    a = ranking.standings[0]
    assert a.strength == pytest.approx(math.log(1.8 / 1.2) / 2, abs=1e-9)
    assert (a.strength_low, a.strength_high) == (pytest.approx(np.percentile(refits, 2.5), abs=1e-9),
                                                 pytest.approx(np.percentile(refits, 97.5), abs=1e-9))
    assert a.strength_low < a.strength < a.strength_high
    assert ranking.standings[1].strength_high == pytest.approx(-a.strength_low, abs=1e-9)


def test_one_case_has_no_strength_interval() -> None:
    ranking = rank(["a", "b"], [[("a", "b", 0.9)]], [("a", "b", "a")])
    assert [(s.strength_low, s.strength_high) for s in ranking.standings] == [(None, None), (None, None)]


def test_records_count_each_side_and_head_to_head_keeps_the_pair_as_first_named() -> None:
    found = [("x", "y", "x"), ("y", "x", "x"), ("x", "y", None), ("x", "z", "z")]
    assert records(["x", "y", "z"], found) == {"x": Record(2, 1, 1), "y": Record(0, 1, 2), "z": Record(1, 0, 0)}
    assert head_to_head(found) == {("x", "y"): Record(2, 1, 0), ("x", "z"): Record(0, 0, 1)}
    with pytest.raises(ValueError, match="winner"):
        records(["x", "y"], [("x", "y", "q")])


@pytest.mark.parametrize(("record", "side"), [
    (Record(8, 0, 0), "first"),     # Wilson 0.68-1.0
    (Record(0, 0, 8), "second"),
    (Record(5, 0, 1), None),        # 5 of 6: Wilson 0.44-0.97 holds 0.5
    (Record(8, 40, 0), "first"),    # ties move the rate toward 0.5, not the verdict: 8 of 8 decided
    (Record(0, 5, 0), None),        # all ties
    (Record(), None),
])
def test_a_pair_is_better_only_when_its_win_rate_interval_excludes_one_half(record: Record, side: str | None) -> None:
    assert better_side(record) == side


def test_the_win_rate_counts_a_tie_as_half_and_carries_wilson_on_the_decided_onto_it() -> None:
    rate = win_rate(6, 2, 2)
    assert rate is not None
    low, high = wilson_bounds(6, 8)
    assert rate.estimate == pytest.approx(0.7)
    assert (rate.low, rate.high) == (pytest.approx(0.1 + 0.8 * low, abs=1e-12), pytest.approx(0.1 + 0.8 * high, abs=1e-12))
    assert win_rate(0, 3, 0) == (0.5, 0.5, 0.5)
    assert win_rate(0, 0, 0) is None
    with pytest.raises(ValueError):
        win_rate(-1, 0, 2)


def test_resampled_intervals_are_the_percentiles_of_the_seeded_resamples() -> None:
    values = np.array([1.0, 4.0, 2.0, 8.0, 5.0])

    def means_and_maxima(rows: np.ndarray) -> np.ndarray:
        return np.stack([values[rows].mean(axis=1), values[rows].max(axis=1)])

    found = resampled_intervals(5, means_and_maxima, resamples=999)
    draws = values[np.random.default_rng(SEED).integers(0, 5, size=(999, 5))]
    assert found == [
        (pytest.approx(np.percentile(draws.mean(axis=1), 2.5)), pytest.approx(np.percentile(draws.mean(axis=1), 97.5))),
        (pytest.approx(np.percentile(draws.max(axis=1), 2.5)), pytest.approx(np.percentile(draws.max(axis=1), 97.5))),
    ]
    assert resampled_intervals(1, means_and_maxima) is None


def test_a_clean_sweep_is_smoothed_and_says_so() -> None:
    # a beat b outright: the plain maximum is at infinity. With 0.5 virtual wins each
    # way: a 1.5, b 0.5 against each other ⇒ s_a - s_b = log 3.
    with pytest.raises(ValueError, match="infinite"):
        bradley_terry(["a", "b"], [("a", "b", 1.0)])
    ranking = rank(["a", "b"], [[("a", "b", 1.0)]], [("a", "b", "a")])
    assert ranking.smoothing == FALLBACK_SMOOTHING == 0.5
    assert [s.strength for s in ranking.standings] == [
        pytest.approx(math.log(3) / 2, abs=1e-12), pytest.approx(-math.log(3) / 2, abs=1e-12)
    ]
    assert [s.win_rate for s in ranking.standings] == [1.0, 0.0]  # the win rate is the data, unsmoothed


def test_smoothing_three_contestants_by_hand() -> None:
    # w_ab = 1.5, w_ba = 0.5, w_bc = w_cb = 1: b and c equal, a log 3 above them; mean 0.
    ranking = rank(["a", "b", "c"], [[("a", "b", 1.0), ("b", "c", 0.5)]], [])
    strengths = {s.name: s.strength for s in ranking.standings}
    assert strengths == {"a": pytest.approx(2 * math.log(3) / 3, abs=1e-9),
                         "b": pytest.approx(-math.log(3) / 3, abs=1e-9),
                         "c": pytest.approx(-math.log(3) / 3, abs=1e-9)}
    assert [s.name for s in ranking.standings] == ["a", "b", "c"]  # b and c tie: by name


def test_groups_never_compared_with_each_other_cannot_be_ranked() -> None:
    with pytest.raises(ValueError, match="never compared"):
        rank(["a", "b", "c", "d"], [[("a", "b", 0.4), ("c", "d", 0.5)]], [])


@pytest.mark.parametrize("bad", [("a", "a", 0.5), ("a", "q", 0.5), ("a", "b", 1.5)])
def test_bad_comparisons_are_refused(bad: tuple[str, str, float]) -> None:
    with pytest.raises(ValueError):
        soft_wins(["a", "b"], [bad])


def test_win_probability_is_the_logistic_of_the_difference() -> None:
    assert win_probability(math.log(4), 0.0) == pytest.approx(0.8, abs=1e-15)
    assert win_probability(0.0, 0.0) == 0.5
