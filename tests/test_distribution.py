"""Pure arithmetic on candidate distributions: exact numbers, no model."""

from __future__ import annotations

import math

import pytest

from localeval.distribution import (
    CandidateDistribution,
    exclusive_logprobs,
    expected_value,
    log_softmax,
    renormalize,
    scale_to_unit,
)

# --- renormalize -----------------------------------------------------------------------


def test_renormalize_divides_by_the_covered_mass() -> None:
    dist = renormalize({"a": math.log(0.2), "b": math.log(0.3)})
    assert dist.probabilities == {
        "a": pytest.approx(0.4, rel=1e-12),
        "b": pytest.approx(0.6, rel=1e-12),
    }
    assert dist.covered_mass == pytest.approx(0.5, rel=1e-12)
    assert list(dist.probabilities) == ["a", "b"]  # the candidates' order is kept


def test_renormalize_keeps_the_raw_logprobs() -> None:
    dist = renormalize({"1": -0.5, "2": -2.0})
    assert dist.logprobs == {"1": -0.5, "2": -2.0}


def test_renormalize_probabilities_sum_to_one() -> None:
    dist = renormalize({str(i): math.log(p) for i, p in enumerate([0.01, 0.02, 0.03, 0.04])})
    assert sum(dist.probabilities.values()) == pytest.approx(1.0, rel=1e-12)
    assert dist.probabilities["3"] == pytest.approx(0.4, rel=1e-12)
    assert dist.covered_mass == pytest.approx(0.1, rel=1e-12)


def test_renormalize_of_a_full_distribution_covers_everything() -> None:
    dist = renormalize({"yes": math.log(0.25), "no": math.log(0.75)})
    assert dist.covered_mass == pytest.approx(1.0, rel=1e-12)
    assert dist.covered_mass <= 1.0


def test_renormalize_gives_tail_candidates_exact_relative_weights() -> None:
    # exp(-1000) underflows to 0.0: computing in probability space would divide 0 by 0.
    assert math.exp(-1000) == 0.0
    dist = renormalize({"a": -1000.0, "b": -1001.0})
    weight_a = 1 / (1 + math.exp(-1))
    assert dist.probabilities["a"] == pytest.approx(weight_a, rel=1e-12)
    assert dist.probabilities["b"] == pytest.approx(1 - weight_a, rel=1e-12)
    assert dist.covered_mass == 0.0


def test_renormalize_gives_an_impossible_candidate_probability_zero() -> None:
    dist = renormalize({"a": math.log(0.5), "b": -math.inf})
    assert dist.probabilities == {"a": 1.0, "b": 0.0}
    assert dist.covered_mass == pytest.approx(0.5, rel=1e-12)


def test_renormalize_of_one_candidate_is_certain() -> None:
    dist = renormalize({"5": math.log(0.01)})
    assert dist.probabilities == {"5": pytest.approx(1.0, rel=1e-12)}
    assert dist.covered_mass == pytest.approx(0.01, rel=1e-12)


def test_renormalize_rejects_no_candidates() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        renormalize({})


@pytest.mark.parametrize("bad", [0.5, math.inf, math.nan])
def test_renormalize_rejects_values_that_are_not_logprobs(bad: float) -> None:
    with pytest.raises(ValueError, match="must be finite and <= 0"):
        renormalize({"a": -1.0, "b": bad})


def test_renormalize_rejects_all_impossible_candidates() -> None:
    with pytest.raises(ValueError, match="every candidate has probability 0"):
        renormalize({"a": -math.inf, "b": -math.inf})


# --- expected value and the most likely candidate ---------------------------------------


def test_expected_value_is_the_weighted_sum() -> None:
    probabilities = {"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.2, "5": 0.2}
    values = {str(i): float(i) for i in range(1, 6)}
    assert expected_value(probabilities, values) == pytest.approx(3.2, rel=1e-12)


def test_expected_value_ignores_values_without_a_candidate() -> None:
    assert expected_value({"a": 0.25, "b": 0.75}, {"a": 4.0, "b": 8.0, "c": 100.0}) == 7.0


def test_expected_value_needs_a_value_for_every_candidate() -> None:
    with pytest.raises(ValueError, match=r"no value for candidates \['b', 'c'\]"):
        expected_value({"a": 0.5, "b": 0.25, "c": 0.25}, {"a": 1.0})


def test_distribution_expected_value_uses_its_probabilities() -> None:
    dist = renormalize({"0": math.log(0.3), "1": math.log(0.1)})
    assert dist.expected_value({"0": 0.0, "1": 1.0}) == pytest.approx(0.25, rel=1e-12)


def test_most_likely_is_the_highest_probability() -> None:
    dist = renormalize({"1": math.log(0.1), "2": math.log(0.6), "3": math.log(0.3)})
    assert dist.most_likely() == "2"


def test_most_likely_on_a_tie_is_the_first_candidate() -> None:
    dist = CandidateDistribution(
        probabilities={"3": 0.4, "1": 0.4, "2": 0.2},
        logprobs={"3": -1.0, "1": -1.0, "2": -2.0},
        covered_mass=1.0,
    )
    assert dist.most_likely() == "3"


def test_a_distribution_is_frozen() -> None:
    dist = renormalize({"a": -1.0})
    with pytest.raises(ValueError, match="frozen"):
        dist.covered_mass = 1.0  # type: ignore[misc]


# --- exclusive_logprobs ------------------------------------------------------------------

#: A tokenizer that splits numbers into digits: "1" = [1], "10" = [1, 0], "100" = [1, 0, 0].
DIGIT_TOKENS = {"1": [1], "10": [1, 0], "100": [1, 0, 0], "2": [2]}
#: log P(the continuation starts with the candidate's tokens).
NESTED = {"1": math.log(0.5), "10": math.log(0.2), "100": math.log(0.05), "2": math.log(0.1)}


def test_exclusive_logprobs_removes_the_longer_candidates_from_their_prefix() -> None:
    exclusive = exclusive_logprobs(NESTED, DIGIT_TOKENS)
    assert {c: math.exp(lp) for c, lp in exclusive.items()} == {
        "1": pytest.approx(0.3, rel=1e-12),  # .5 - P(10); "100" is inside "10", not subtracted twice
        "10": pytest.approx(0.15, rel=1e-12),  # .2 - P(100)
        "100": pytest.approx(0.05, rel=1e-12),
        "2": pytest.approx(0.1, rel=1e-12),
    }
    # Together they are the mass of the outermost candidates, "1" and "2".
    assert sum(math.exp(lp) for lp in exclusive.values()) == pytest.approx(0.6, rel=1e-12)


def test_exclusive_logprobs_subtracts_every_child_of_a_prefix() -> None:
    tokens = {"1": [1], "10": [1, 0], "11": [1, 1]}
    exclusive = exclusive_logprobs({"1": math.log(0.5), "10": math.log(0.1), "11": math.log(0.15)}, tokens)
    assert math.exp(exclusive["1"]) == pytest.approx(0.25, rel=1e-12)
    assert exclusive["10"] == math.log(0.1)
    assert exclusive["11"] == math.log(0.15)


def test_exclusive_logprobs_nearest_prefix_skips_a_missing_candidate() -> None:
    tokens = {"1": [1], "100": [1, 0, 0]}  # no "10": "100" is inside "1" directly
    exclusive = exclusive_logprobs({"1": math.log(0.5), "100": math.log(0.2)}, tokens)
    assert math.exp(exclusive["1"]) == pytest.approx(0.3, rel=1e-12)


def test_exclusive_logprobs_of_candidates_that_nest_nothing_is_unchanged() -> None:
    tokens = {"1": [1], "2": [2], "10": [7, 3]}  # "10" is one token pair that does not start with "1"
    logprobs = {"1": math.log(0.2), "2": -3.5, "10": -0.25}
    assert exclusive_logprobs(logprobs, tokens) == logprobs


def test_exclusive_logprobs_of_a_prefix_with_all_its_mass_in_a_child_is_impossible() -> None:
    exclusive = exclusive_logprobs({"1": math.log(0.2), "10": math.log(0.2)}, {"1": [1], "10": [1, 0]})
    assert exclusive == {"1": -math.inf, "10": math.log(0.2)}


def test_exclusive_logprobs_does_not_depend_on_the_order_of_the_candidates() -> None:
    expected = exclusive_logprobs(NESTED, DIGIT_TOKENS)
    for order in (["2", "100", "10", "1"], ["100", "1", "2", "10"], ["10", "2", "1", "100"]):
        got = exclusive_logprobs({c: NESTED[c] for c in order}, {c: DIGIT_TOKENS[c] for c in order})
        assert got == expected


# --- scale_to_unit ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"), [(1.0, 0.0), (2.0, 0.25), (3.2, 0.55), (5.0, 1.0)]
)
def test_scale_to_unit_on_one_to_five(value: float, expected: float) -> None:
    assert scale_to_unit(value, 1, 5) == pytest.approx(expected, rel=1e-12, abs=0.0)


@pytest.mark.parametrize(("value", "expected"), [(0.0, 0.0), (4.5, 0.5), (9.0, 1.0), (3.0, 1 / 3)])
def test_scale_to_unit_on_zero_to_nine(value: float, expected: float) -> None:
    assert scale_to_unit(value, 0, 9) == pytest.approx(expected, rel=1e-12, abs=0.0)


def test_scale_to_unit_clamps_rounding_error_at_the_ends() -> None:
    assert scale_to_unit(5.0 + 1e-12, 1, 5) == 1.0
    assert scale_to_unit(1.0 - 1e-12, 1, 5) == 0.0


@pytest.mark.parametrize("value", [0.5, 5.5, -1.0])
def test_scale_to_unit_rejects_a_value_outside_the_range(value: float) -> None:
    with pytest.raises(ValueError, match=r"is outside \[1, 5\]"):
        scale_to_unit(value, 1, 5)


@pytest.mark.parametrize(("low", "high"), [(3, 3), (5, 1)])
def test_scale_to_unit_rejects_an_empty_range(low: int, high: int) -> None:
    with pytest.raises(ValueError, match="empty range"):
        scale_to_unit(3, low, high)


# --- log_softmax -----------------------------------------------------------------------


def test_log_softmax_of_equal_logits_is_uniform() -> None:
    assert log_softmax([2.0, 2.0, 2.0, 2.0]) == [pytest.approx(-math.log(4), rel=1e-12)] * 4


def test_log_softmax_exact_values() -> None:
    # logits ln 1, ln 2, ln 5: probabilities 1/8, 2/8, 5/8
    result = log_softmax([0.0, math.log(2), math.log(5)])
    assert result == [
        pytest.approx(math.log(1 / 8), rel=1e-12),
        pytest.approx(math.log(2 / 8), rel=1e-12),
        pytest.approx(math.log(5 / 8), rel=1e-12),
    ]


def test_log_softmax_is_stable_for_huge_logits() -> None:
    result = log_softmax([1000.0, 1000.0 + math.log(3)])
    assert result == [
        pytest.approx(math.log(0.25), rel=1e-12),
        pytest.approx(math.log(0.75), rel=1e-12),
    ]


def test_log_softmax_output_renormalizes_to_the_softmax() -> None:
    dist = renormalize(dict(zip("abc", log_softmax([1.0, 2.0, 3.0]))))
    total = math.exp(1) + math.exp(2) + math.exp(3)
    assert dist.probabilities["c"] == pytest.approx(math.exp(3) / total, rel=1e-12)
    assert dist.covered_mass == pytest.approx(1.0, rel=1e-12)


def test_log_softmax_rejects_an_empty_sequence() -> None:
    with pytest.raises(ValueError, match="empty"):
        log_softmax([])
