"""Win rates and the Bradley–Terry fit (localeval/metrics/ranking.py) with exact numbers."""

from __future__ import annotations

import math

import pytest

from localeval.metrics.ranking import FALLBACK_SMOOTHING, bradley_terry, rank, soft_wins, win_probability, win_rates


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


def test_win_rates_are_soft_wins_over_comparisons() -> None:
    rates = win_rates(["x", "y", "z", "w"], [("x", "y", 0.8), ("x", "z", 0.6), ("y", "z", 0.5)])
    assert rates == {"x": pytest.approx(0.7), "y": pytest.approx(0.35), "z": pytest.approx(0.45), "w": None}


def test_rank_orders_best_first_with_ranks_win_rates_and_counts() -> None:
    ranking = rank(["y", "x", "z"], [("x", "y", 0.8), ("x", "z", 0.6), ("y", "z", 0.5)])
    assert [s.name for s in ranking.standings] == ["x", "z", "y"]
    assert [s.rank for s in ranking.standings] == [1, 2, 3]
    assert [s.win_rate for s in ranking.standings] == [pytest.approx(0.7), pytest.approx(0.45), pytest.approx(0.35)]
    assert [s.comparisons for s in ranking.standings] == [2, 2, 2]
    assert ranking.smoothing == 0.0


def test_a_clean_sweep_is_smoothed_and_says_so() -> None:
    # a beat b outright: the plain maximum is at infinity. With 0.5 virtual wins each
    # way: a 1.5, b 0.5 against each other ⇒ s_a - s_b = log 3.
    with pytest.raises(ValueError, match="infinite"):
        bradley_terry(["a", "b"], [("a", "b", 1.0)])
    ranking = rank(["a", "b"], [("a", "b", 1.0)])
    assert ranking.smoothing == FALLBACK_SMOOTHING == 0.5
    assert [s.strength for s in ranking.standings] == [
        pytest.approx(math.log(3) / 2, abs=1e-12), pytest.approx(-math.log(3) / 2, abs=1e-12)
    ]
    assert [s.win_rate for s in ranking.standings] == [1.0, 0.0]  # the win rate is the data, unsmoothed


def test_smoothing_three_contestants_by_hand() -> None:
    # w_ab = 1.5, w_ba = 0.5, w_bc = w_cb = 1: b and c equal, a log 3 above them; mean 0.
    ranking = rank(["a", "b", "c"], [("a", "b", 1.0), ("b", "c", 0.5)])
    strengths = {s.name: s.strength for s in ranking.standings}
    assert strengths == {"a": pytest.approx(2 * math.log(3) / 3, abs=1e-9),
                         "b": pytest.approx(-math.log(3) / 3, abs=1e-9),
                         "c": pytest.approx(-math.log(3) / 3, abs=1e-9)}
    assert [s.name for s in ranking.standings] == ["a", "b", "c"]  # b and c tie: by name


def test_groups_never_compared_with_each_other_cannot_be_ranked() -> None:
    with pytest.raises(ValueError, match="never compared"):
        rank(["a", "b", "c", "d"], [("a", "b", 0.4), ("c", "d", 0.5)])


@pytest.mark.parametrize("bad", [("a", "a", 0.5), ("a", "q", 0.5), ("a", "b", 1.5)])
def test_bad_comparisons_are_refused(bad: tuple[str, str, float]) -> None:
    with pytest.raises(ValueError):
        win_rates(["a", "b"], [bad])


def test_win_probability_is_the_logistic_of_the_difference() -> None:
    assert win_probability(math.log(4), 0.0) == pytest.approx(0.8, abs=1e-15)
    assert win_probability(0.0, 0.0) == 0.5
