"""The judge check's arithmetic (localeval/metaeval/separation.py) with plain numbers."""

from __future__ import annotations

import pytest

from localeval.metaeval.separation import (
    PairScores,
    accuracy,
    best_threshold,
    calibrate,
    halves,
    ordered,
    outcomes,
    passes,
)


def test_a_tie_counts_half_and_an_unscored_pair_is_left_out() -> None:
    pairs = [PairScores(0.9, 0.2), PairScores(0.5, 0.5), PairScores(0.1, 0.7), PairScores(None, 0.3)]
    assert ordered(pairs) == pytest.approx((1 + 0.5 + 0) / 3)


def test_where_lower_is_better_the_good_variant_must_score_lower() -> None:
    pairs = [PairScores(0.0, 0.8), PairScores(0.6, 0.2)]
    assert ordered(pairs, lower_is_better=True) == 0.5
    assert ordered(pairs) == 0.5
    assert ordered([PairScores(0.0, 0.8)], lower_is_better=True) == 1.0


def test_nothing_scored_orders_nothing() -> None:
    assert ordered([PairScores(None, None)]) is None
    assert accuracy([PairScores(None, None)], 0.5) is None
    assert best_threshold([]) is None


def test_outcomes_follow_the_metrics_own_rule() -> None:
    pairs = [PairScores(0.9, 0.2), PairScores(0.5, 0.5), PairScores(0.4, None)]
    assert outcomes(pairs, 0.5) == (1, 2)  # 0.2 fails; 0.9 and 0.5 pass (>=), 0.4 does not
    assert outcomes(pairs, 0.5, lower_is_better=True) == (0, 2)  # bad 0.2, 0.5 pass (<=); good 0.5, 0.4 pass
    assert passes(0.5, 0.5, False) and passes(0.5, 0.5, True)
    assert accuracy(pairs, 0.5) == pytest.approx(3 / 5)


def test_the_best_threshold_sits_between_the_scores_it_separates() -> None:
    # a judge whose scores sit high: every good variant above 0.8, every bad one between 0.6 and 0.7
    pairs = [PairScores(0.85, 0.6), PairScores(0.9, 0.7), PairScores(0.95, 0.65)]
    threshold, acc = best_threshold(pairs)  # type: ignore[misc]
    assert threshold == pytest.approx((0.7 + 0.85) / 2)
    assert acc == 1.0
    assert outcomes(pairs, 0.5) == (0, 3)  # the default threshold fails no bad variant


def test_among_equally_good_thresholds_the_one_nearest_half_wins() -> None:
    pairs = [PairScores(1.0, 0.0)]
    threshold, acc = best_threshold(pairs)  # type: ignore[misc]
    assert (threshold, acc) == (0.5, 1.0)


def test_lower_is_better_thresholds() -> None:
    pairs = [PairScores(0.1, 0.9), PairScores(0.2, 0.7)]
    threshold, acc = best_threshold(pairs, lower_is_better=True)  # type: ignore[misc]
    assert threshold == pytest.approx(0.45) and acc == 1.0


def test_halves_alternate() -> None:
    assert halves(5) == ([0, 2, 4], [1, 3])


def test_calibration_is_judged_on_the_pairs_it_was_not_chosen_on() -> None:
    # fit half (0, 2): separable at 0.55; held-out half (1, 3): one good variant below it
    pairs = [PairScores(0.7, 0.4), PairScores(0.5, 0.3), PairScores(0.8, 0.3), PairScores(0.9, 0.2)]
    calibration = calibrate(pairs)
    assert calibration is not None
    assert calibration.threshold == pytest.approx(0.55)
    assert calibration.fit_accuracy == 1.0
    assert calibration.held_out_accuracy == pytest.approx(3 / 4)
    assert (calibration.fit_pairs, calibration.held_out_pairs) == (2, 2)


def test_no_calibration_without_scores_on_both_halves() -> None:
    assert calibrate([PairScores(0.9, 0.1), PairScores(None, 0.2)]) is None
