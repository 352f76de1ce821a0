"""Pure arithmetic on candidate distributions: exact numbers, no model."""

from __future__ import annotations

import math

import pytest

from localeval.data.case import TestCase
from localeval.distribution import (
    PRUNE_BELOW,
    CandidateDistribution,
    ListedTokens,
    answer_pieces,
    expected_value,
    log_softmax,
    log_sum_exp,
    number_role,
    read_whole_answers,
    renormalize,
    scale_to_unit,
    whole_answer_logprobs,
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


# --- whole_answer_logprobs ------------------------------------------------------------

ZERO_TO_TEN = {str(s): float(s) for s in range(11)}
#: Issue 13's counterexample on 0-10: P("1") = .4, then "0" .5, "5" .3, the end .2; P("7") = .5,
#: P("3") = .05; "10", "7" and "3" end there. "15" is not a candidate, and must not count as "1".
STARTS = {"1": math.log(0.4), "10": math.log(0.4 * 0.5), "7": math.log(0.5), "3": math.log(0.05)}
ENDS = {"1": math.log(0.2), "10": 0.0, "7": 0.0, "3": 0.0}
#: The rest of 0-10, which the judge gives nothing.
ABSENT = {c: -math.inf for c in ZERO_TO_TEN if c not in STARTS}


def test_whole_answer_is_the_start_times_the_end() -> None:
    whole = whole_answer_logprobs(STARTS, ENDS)
    assert {c: math.exp(lp) for c, lp in whole.items()} == {
        "1": pytest.approx(0.08, rel=1e-12),  # .4 x .2: not "10" (.2), not "15" (.12)
        "10": pytest.approx(0.2, rel=1e-12),
        "7": pytest.approx(0.5, rel=1e-12),
        "3": pytest.approx(0.05, rel=1e-12),
    }


def test_the_counterexample_scores_6_904_with_its_honest_covered_mass() -> None:
    dist = renormalize({**whole_answer_logprobs(STARTS, ENDS), **ABSENT}, whole_answers=True)
    expected = (0.08 * 1 + 0.2 * 10 + 0.5 * 7 + 0.05 * 3) / 0.83
    assert dist.expected_value(ZERO_TO_TEN) == pytest.approx(expected, rel=1e-12)
    assert round(dist.expected_value(ZERO_TO_TEN), 3) == 6.904
    assert round(scale_to_unit(dist.expected_value(ZERO_TO_TEN), 0, 10), 3) == 0.690
    assert dist.covered_mass == pytest.approx(0.83, rel=1e-12)  # Σ whole-answer probabilities
    assert dist.whole_answers is True


def test_the_counterexample_through_a_scripted_judge_and_geval() -> None:
    """The same numbers as a scripted distribution, scored by G-Eval on 0-10."""
    from localeval.metrics import build_metric
    from localeval.testing.scripted import ScriptedJudge

    judge = ScriptedJudge(logprobs=[{**whole_answer_logprobs(STARTS, ENDS), **ABSENT}])
    metric = build_metric("geval", {"criteria": "Clarity.", "score_range": [0, 10], "include_reason": False,
                                    "evaluation_steps": ["Judge the clarity."],
                                    "evaluation_params": ["actual_output"], "min_covered_mass": 0.0})
    result = metric.measure(TestCase(input="-", actual_output="The sky is blue."), judge)
    assert result.error is None, result.error
    assert result.raw_score == pytest.approx(5.73 / 0.83, rel=1e-12)
    assert round(result.score, 3) == 0.690
    assert result.details["covered_mass"] == pytest.approx(0.83, rel=1e-12)


def test_without_the_end_factor_the_counterexample_scores_too_low() -> None:
    """What the exclusive subtraction gave: "1" kept .4 - .2, "15" included. The test above must differ."""
    starts_only = renormalize({"1": math.log(0.2), "10": math.log(0.2), "7": math.log(0.5), "3": math.log(0.05)})
    assert round(starts_only.expected_value(ZERO_TO_TEN), 3) == 6.158
    assert starts_only.covered_mass == pytest.approx(0.95, rel=1e-12)


def test_whole_answers_of_a_candidate_do_not_depend_on_the_other_candidates() -> None:
    alone = whole_answer_logprobs({"1": STARTS["1"], "7": STARTS["7"]}, {"1": ENDS["1"], "7": ENDS["7"]})
    assert alone["1"] == whole_answer_logprobs(STARTS, ENDS)["1"]


def test_a_candidate_that_never_ends_is_impossible() -> None:
    assert whole_answer_logprobs({"1": -0.5}, {"1": -math.inf}) == {"1": -math.inf}


def test_whole_answer_logprobs_needs_an_end_for_every_candidate() -> None:
    with pytest.raises(ValueError, match="end log-probabilities are for"):
        whole_answer_logprobs({"1": -0.5, "2": -1.0}, {"1": -0.1})


def test_whole_answer_logprobs_rejects_an_end_that_is_not_a_logprob() -> None:
    with pytest.raises(ValueError, match="must be <= 0"):
        whole_answer_logprobs({"1": -0.5}, {"1": 0.5})


def test_a_distribution_claims_whole_answers_only_when_told() -> None:
    assert renormalize({"a": -1.0}).whole_answers is False
    assert renormalize({"a": -1.0}, whole_answers=True).whole_answers is True


# --- log_sum_exp -------------------------------------------------------------------------


def test_log_sum_exp_adds_probabilities() -> None:
    assert log_sum_exp([math.log(0.3), math.log(0.3)]) == pytest.approx(math.log(0.6), rel=1e-12)


def test_log_sum_exp_is_exact_in_the_tail() -> None:
    assert log_sum_exp([-1000.0, -1000.0]) == pytest.approx(-1000.0 + math.log(2), rel=1e-12)


def test_log_sum_exp_of_nothing_is_minus_inf() -> None:
    assert log_sum_exp([]) == -math.inf
    assert log_sum_exp([-math.inf, -math.inf]) == -math.inf
    assert log_sum_exp([-math.inf, math.log(0.5)]) == pytest.approx(math.log(0.5), rel=1e-12)


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


# --- read_whole_answers: the walk over next-token distributions -------------------------


def views(positions: dict[str, dict[str, float]]):
    """``after`` for read_whole_answers from probabilities by prefix; the prefixes asked are recorded."""
    asked: list[str] = []

    def after(prefix: str) -> ListedTokens:
        asked.append(prefix)
        return ListedTokens({t: math.log(p) for t, p in positions[prefix].items()})

    return after, asked


def test_the_counterexample_read_from_next_token_distributions() -> None:
    after, asked = views({"": {"1": 0.4, "7": 0.5, "3": 0.05, "I": 0.05},
                          "1": {"0": 0.5, "5": 0.3, "\n": 0.2}, "10": {"/": 1.0}, "7": {"\n": 1.0},
                          "3": {"": 1.0}})
    whole = read_whole_answers(tuple(ZERO_TO_TEN), after).logprobs
    assert whole == {**whole_answer_logprobs(STARTS, ENDS), **ABSENT}
    # Each once, in preorder ("10" right after its parent "1"); "15" is not a candidate: never asked.
    assert asked == ["", "1", "10", "3", "7"]


def test_every_way_of_writing_a_candidate_counts() -> None:
    """"10" as one token or as "1" then "0", and " 10" at the score position: one answer."""
    after, _ = views({"": {"1": 0.2, "10": 0.3, " 1": 0.1, "3 ": 0.1}, "1": {"0": 0.5, "\n": 0.5},
                      "10": {"\n": 1.0}, " 1": {"0": 1.0}, " 10": {".": 1.0}, " 10.": {"\n": 1.0}})
    whole = read_whole_answers(("1", "10", "3"), after).logprobs
    assert math.exp(whole["10"]) == pytest.approx(0.3 + 0.2 * 0.5 + 0.1, rel=1e-12)
    assert math.exp(whole["1"]) == pytest.approx(0.1, rel=1e-12)  # " 1" never ends: it goes on to " 10"
    assert math.exp(whole["3"]) == pytest.approx(0.1, rel=1e-12)  # "3 " ends the answer itself


def test_a_bare_point_is_a_full_stop_unless_a_digit_follows() -> None:
    after, asked = views({"": {"3": 1.0}, "3": {".": 0.5, "\n": 0.2, ".5": 0.1, "0": 0.2},
                          "3.": {"5": 0.4, " It": 0.6}})
    assert math.exp(read_whole_answers(("3",), after).logprobs["3"]) == pytest.approx(0.2 + 0.5 * 0.6, rel=1e-12)
    assert asked == ["", "3", "3."]


def test_prefixes_are_asked_for_in_preorder_each_right_after_its_parent_or_a_siblings_subtree() -> None:
    """What lets a server that keeps its last prompt read each continuation as one token."""
    after, asked = views({"": {"1": 0.5, " 1": 0.1, "2": 0.4}, "1": {"0": 0.3, ".": 0.2, "\n": 0.5},
                          "10": {".": 0.5, "\n": 0.5}, "10.": {"5": 1.0}, "1.": {" It": 1.0},
                          " 1": {"\n": 1.0}, "2": {"\n": 1.0}})
    whole = read_whole_answers(("1", "2", "10"), after).logprobs
    assert asked == ["", " 1", "1", "1.", "10", "10.", "2"]
    assert math.exp(whole["1"]) == pytest.approx(0.5 * (0.5 + 0.2 * 1.0) + 0.1, rel=1e-12)
    assert math.exp(whole["10"]) == pytest.approx(0.5 * 0.3 * 0.5, rel=1e-12)  # "10." goes on to "10.5"


def test_a_prefix_below_the_bound_is_not_read_and_costs_less_than_the_bound() -> None:
    positions = {"": {"3": 0.6, "4": 0.4 - 2e-10, " 4": 2e-10}, "3": {"\n": 1.0}, "4": {"\n": 1.0},
                 " 4": {"\n": 1.0}}
    after, asked = views(positions)
    pruned = read_whole_answers(("3", "4"), after).logprobs
    assert asked == ["", "3", "4"] and PRUNE_BELOW == 1e-9  # " 4" (2e-10) is below the bound
    after, asked = views(positions)
    every = read_whole_answers(("3", "4"), after, prune_below=0.0).logprobs
    assert asked == ["", " 4", "3", "4"]
    assert 0.0 < math.exp(every["4"]) - math.exp(pruned["4"]) < PRUNE_BELOW


def test_the_unread_mass_is_the_probability_of_the_prefixes_left_out_and_bounds_the_score() -> None:
    """A coarser ``prune_below`` reads fewer prefixes; what it leaves out is summed, and the score (as a
    fraction of its range) stays within unread_mass / covered_mass of the one every prefix gives."""
    positions = {"": {"3": 0.6, "4": 0.3, "5": 3e-4, "2": 2e-5, " It": 0.09968},
                 "3": {"\n": 0.7, ".": 0.2998, "0": 2e-4}, "3.": {"5": 0.4, " It": 0.6},
                 "4": {"\n": 0.9999, ".": 1e-4}, "4.": {" It": 1.0},
                 "5": {"\n": 1.0}, "2": {"\n": 1.0}}
    scores = {c: float(c) for c in "12345"}
    after, asked = views(positions)
    every = read_whole_answers(tuple("12345"), after, prune_below=0.0).distribution()
    assert asked == ["", "2", "3", "3.", "4", "4.", "5"] and every.unread_mass == 0.0
    after, asked = views(positions)
    coarse = read_whole_answers(tuple("12345"), after, prune_below=1e-3).distribution()
    assert asked == ["", "3", "3.", "4"]  # "2" (2e-5), "4." (3e-5) and "5" (3e-4) are below
    assert coarse.unread_mass == pytest.approx(2e-5 + 0.3 * 1e-4 + 3e-4, rel=1e-12)
    assert coarse.covered_mass == pytest.approx(0.6 * (0.7 + 0.2998 * 0.6) + 0.3 * 0.9999, rel=1e-12)
    gap = abs(every.expected_value(scores) - coarse.expected_value(scores)) / 4  # as a fraction of 1-5
    assert 0.0 < gap <= coarse.unread_mass / coarse.covered_mass


def test_the_unread_mass_is_the_same_read_by_depth() -> None:
    positions = {"": {"3": 0.6, "4": 0.3999, "5": 1e-4}, "3": {"\n": 1.0}, "4": {"\n": 0.5, ".": 0.5},
                 "4.": {" It": 1.0}, "5": {"\n": 1.0}}
    after, _ = views(positions)
    one_at_a_time = read_whole_answers(tuple("345"), after, prune_below=1e-3)
    after, _ = views(positions)
    by_depth = read_whole_answers(tuple("345"), after, prune_below=1e-3,
                                  by_depth=lambda prefixes: [after(p) for p in prefixes])
    assert by_depth == one_at_a_time and by_depth.unread == pytest.approx(1e-4, rel=1e-12)


def test_a_candidates_surrounding_whitespace_is_not_part_of_the_answer() -> None:
    """The arena's candidates are " A" and " B": the letters, written with a space or without."""
    after, _ = views({"": {" A": 0.5, "A": 0.1, " B": 0.3}, " A": {"\n": 0.8, "1": 0.2}, "A": {".": 1.0},
                      "A.": {" It": 1.0}, " B": {"\n": 1.0}})
    whole = read_whole_answers((" A", " B"), after).logprobs
    assert math.exp(whole[" A"]) == pytest.approx(0.5 * 0.8 + 0.1 * 1.0, rel=1e-12)
    assert math.exp(whole[" B"]) == pytest.approx(0.3, rel=1e-12)


def test_a_prefix_with_no_probability_is_never_asked_for() -> None:
    after, asked = views({"": {"2": 1.0}, "2": {"\n": 1.0}})
    assert read_whole_answers(("1", "2"), after).logprobs == {"1": -math.inf, "2": 0.0}
    assert asked == ["", "2"]


@pytest.mark.parametrize(("text", "role"), [
    ("0", "continues"), ("05", "continues"), ("0)", "continues"), (".5", "continues"), (".", "point"),
    (". ", "ends"), (".\n", "ends"), (" 5", "ends"), ("/", "ends"), ("", "ends"), ("a1", "ends"), ("²", "ends"),
])
def test_number_roles_of_token_texts(text: str, role: str) -> None:
    assert number_role(text) == role


def test_listed_tokens_sum_tokens_that_print_alike_and_sum_classes() -> None:
    listed = ListedTokens.summed([("", math.log(0.1)), ("", math.log(0.2)), (".", math.log(0.3)), ("5", math.log(0.4))])
    assert listed.logprob("") == pytest.approx(math.log(0.3), rel=1e-12)
    assert listed.logprob("7") == -math.inf
    assert math.exp(listed.class_logprob("ends")) == pytest.approx(0.3, rel=1e-12)
    assert math.exp(listed.class_logprob("point")) == pytest.approx(0.3, rel=1e-12)
    assert math.exp(listed.class_logprob("no_digit")) == pytest.approx(0.6, rel=1e-12)


def test_answer_pieces_allow_leading_whitespace_only_at_the_first_token() -> None:
    texts = ["1", " 1", "10", "3 ", "0", " 0", "\n"]
    assert answer_pieces(texts, "10", first=True) == [("1", "0"), (" 1", "0"), ("10", "")]
    assert answer_pieces(texts, "0", first=False) == [("0", "")]
    assert answer_pieces(texts, "3", first=True) == [("3 ", None)]


# --- what a top-k list leaves out (issue 28, item 3) ----------------------------------------


def test_what_a_list_leaves_out_counts_as_the_end_of_a_number() -> None:
    """The end is the complement of what continues the number: digits and the point are listed."""
    listed = ListedTokens({"0": math.log(0.2), ".": math.log(0.1), "\n": math.log(0.3)})
    assert listed.unlisted == pytest.approx(0.4, rel=1e-12)
    assert math.exp(listed.class_logprob("ends")) == pytest.approx(1 - 0.2 - 0.1, rel=1e-12)
    assert math.exp(listed.class_logprob("ends", listed_only=True)) == pytest.approx(0.3, rel=1e-12)
    assert math.exp(listed.class_logprob("no_digit")) == pytest.approx(1 - 0.2, rel=1e-12)
    assert math.exp(listed.class_logprob("no_digit", listed_only=True)) == pytest.approx(0.4, rel=1e-12)
    assert math.exp(listed.class_logprob("point")) == pytest.approx(0.1, rel=1e-12)  # a point is listed or not


def test_a_whole_distribution_has_nothing_unlisted() -> None:
    whole = ListedTokens({"0": math.log(0.5), "\n": math.log(0.5)})
    assert whole.unlisted == 0.0 and whole.class_logprob("ends") == whole.class_logprob("ends", listed_only=True)


#: After the score position of a 1-5 answer: every ending token (20 of them, 2% each) and the rest.
FULL = {"": {"3": 0.6, "4": 0.3, "x": 0.1},
        "3": {"0": 0.1, ".": 0.05, **{f"end{i}": 0.02 for i in range(20)}, "a": 0.15, "b": 0.3},
        "4": {"5": 0.3, **{f"end{i}": 0.02 for i in range(20)}, "c": 0.3},
        "3.": {"5": 0.5, " It": 0.5}}


def top(k: int):
    """``after`` that lists the k most likely tokens of :data:`FULL` at each prefix, as a server would."""
    def after(prefix: str) -> ListedTokens:
        best = sorted(FULL[prefix].items(), key=lambda kv: -kv[1])[:k]
        return ListedTokens({t: math.log(p) for t, p in best})
    return after


def test_the_estimate_from_a_top_k_is_within_the_stated_bound_of_the_whole_vocabulary() -> None:
    values = {"3": 3.0, "4": 4.0}
    exact = read_whole_answers(("3", "4"), top(100)).distribution()
    few = read_whole_answers(("3", "4"), top(4))
    estimated = few.distribution()
    listed_only = renormalize(few.listed)
    assert exact.unlisted_mass == 0.0 and estimated.unlisted_mass > 0.0
    # Within the bound the docs state: unlisted / (covered - unlisted) of the range.
    bound = estimated.unlisted_mass / (estimated.covered_mass - estimated.unlisted_mass)
    error = abs(estimated.expected_value(values) - exact.expected_value(values)) / (4 - 3)
    assert error <= bound
    # And nearer the whole vocabulary's than counting only the listed ending tokens.
    assert error < abs(listed_only.expected_value(values) - exact.expected_value(values))
    assert abs(estimated.covered_mass - exact.covered_mass) < abs(listed_only.covered_mass - exact.covered_mass)


def test_reading_by_depth_reads_the_same_prefixes_a_depth_at_a_time_and_gives_the_same_numbers() -> None:
    positions = {"": {"1": 0.5, " 1": 0.1, "2": 0.4}, "1": {"0": 0.3, ".": 0.2, "\n": 0.5},
                 "10": {".": 0.5, "\n": 0.5}, "10.": {"5": 1.0}, "1.": {" It": 1.0}, " 1": {"\n": 1.0},
                 "2": {"\n": 1.0}}
    after, _ = views(positions)
    depths: list[list[str]] = []

    def by_depth(prefixes):
        depths.append(list(prefixes))
        return [after(p) for p in prefixes]

    def never(prefix: str) -> ListedTokens:
        raise AssertionError("by_depth reads every prefix")

    batched = read_whole_answers(("1", "2", "10"), never, by_depth=by_depth)
    assert depths == [[""], [" 1", "1", "2"], ["1.", "10"], ["10."]]  # each depth in text order
    one_by_one, asked = views(positions)
    assert batched == read_whole_answers(("1", "2", "10"), one_by_one)
    assert sorted(asked) == sorted(p for depth in depths for p in depth)


def test_a_depth_read_that_returns_too_few_distributions_is_an_error() -> None:
    after, _ = views({"": {"1": 0.5, "2": 0.5}, "1": {"\n": 1.0}, "2": {"\n": 1.0}})
    with pytest.raises(ValueError, match=r"1 distributions read for the 2 prefixes \['1', '2'\]"):
        read_whole_answers(("1", "2"), after, by_depth=lambda prefixes: [after(p) for p in prefixes][:1])
