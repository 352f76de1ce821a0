"""The RAG metrics' formulas with exact numbers: the issue's precision table, examples worked by hand, empty cases."""

from __future__ import annotations

import pytest

from localeval.metrics.rag.scores import (
    contextual_relevancy_score,
    faithfulness_score,
    hallucination_score,
    recall_score,
    relevancy_ratio,
    weighted_cumulative_precision,
)
from localeval.metrics.sentences import split_sentences

Y, N = True, False

# --- answer relevancy: (yes + idk) / statements -------------------------------------------


@pytest.mark.parametrize(
    ("verdicts", "score"),
    [
        (["yes"], 1.0),
        (["no"], 0.0),
        (["idk"], 1.0),  # an ambiguous statement is not held against the output
        (["yes", "no", "idk", "yes"], 0.75),
        (["yes", "no", "no", "no"], 0.25),
        (["no", "idk"], 0.5),
    ],
)
def test_relevancy_ratio_counts_yes_and_idk_as_relevant(verdicts: list[str], score: float) -> None:
    assert relevancy_ratio(verdicts) == score  # type: ignore[arg-type]


def test_relevancy_ratio_is_relevant_over_total_and_never_above_one() -> None:
    # 3 statements, 2 relevant: 2/3. (A seed document wrote total / relevant, 1.5: wrong.)
    assert relevancy_ratio(["yes", "yes", "no"]) == pytest.approx(2 / 3, rel=1e-12)
    assert relevancy_ratio(["yes", "yes", "no"]) <= 1.0


def test_relevancy_ratio_of_no_statements_is_one() -> None:
    assert relevancy_ratio([]) == 1.0


# --- faithfulness: claims not contradicted / claims ------------------------------------------


def test_faithfulness_counts_idk_as_faithful_by_default() -> None:
    # Four claims: two the truths agree with, one they say nothing about, one they contradict.
    assert faithfulness_score(["yes", "idk", "no", "yes"]) == 0.75


def test_faithfulness_stricter_variant_counts_idk_as_unfaithful() -> None:
    assert faithfulness_score(["yes", "idk", "no", "yes"], idk_is_faithful=False) == 0.5


def test_faithfulness_worked_example() -> None:
    # Worked by hand: the output claims "Einstein won the Nobel Prize for the photoelectric
    # effect" (agrees), "in 1968" (contradicted: 1921) and "he played chess" (not in the
    # context): 2 / 3, or 1 / 3 when "not in the context" counts against it.
    assert faithfulness_score(["yes", "no", "idk"]) == pytest.approx(2 / 3, rel=1e-12)
    assert faithfulness_score(["yes", "no", "idk"], idk_is_faithful=False) == pytest.approx(1 / 3, rel=1e-12)


@pytest.mark.parametrize("idk_is_faithful", [True, False])
def test_faithfulness_extremes(idk_is_faithful: bool) -> None:
    assert faithfulness_score(["yes", "yes"], idk_is_faithful=idk_is_faithful) == 1.0
    assert faithfulness_score(["no", "no"], idk_is_faithful=idk_is_faithful) == 0.0
    assert faithfulness_score(["idk"], idk_is_faithful=idk_is_faithful) == float(idk_is_faithful)


@pytest.mark.parametrize("idk_is_faithful", [True, False])
def test_faithfulness_of_no_claims_is_one(idk_is_faithful: bool) -> None:
    assert faithfulness_score([], idk_is_faithful=idk_is_faithful) == 1.0


@pytest.mark.parametrize("function", [relevancy_ratio, faithfulness_score])
def test_a_verdict_outside_yes_no_idk_is_an_error(function: object) -> None:
    with pytest.raises(ValueError, match=r"verdicts must be 'yes', 'no' or 'idk', got \['Yes', 'yes\.'\]"):
        function(["yes", "yes.", "Yes"])  # type: ignore[operator]


# --- hallucination: contradicted / contexts, lower is better ----------------------------------


def test_hallucination_worked_example() -> None:
    # Worked by hand: context ["Einstein won the Nobel Prize for the photoelectric effect.",
    # "Einstein won the Nobel Prize in 1921."], output "Einstein won the Nobel Prize in 1969
    # for the photoelectric effect.": the first agrees, the second is contradicted: 1 / 2.
    assert hallucination_score([N, Y]) == 0.5


@pytest.mark.parametrize(
    ("contradicted", "score"),
    [([N], 0.0), ([Y], 1.0), ([N, N, Y], 1 / 3), ([Y, Y, N, N], 0.5), ([Y, Y, Y], 1.0)],
)
def test_hallucination_is_the_share_contradicted(contradicted: list[bool], score: float) -> None:
    assert hallucination_score(contradicted) == pytest.approx(score, rel=1e-12)


def test_hallucination_of_no_context_is_zero() -> None:
    assert hallucination_score([]) == 0.0


# --- contextual precision: weighted cumulative precision --------------------------------------


@pytest.mark.parametrize(
    ("relevant", "score"),
    [
        # The table.
        ([Y, Y, N], 1.0),  # (1/1 + 2/2) / 2
        ([Y, N, Y], 5 / 6),  # (1/1 + 2/3) / 2 = 0.8333...
        ([N, Y, Y], 7 / 12),  # (1/2 + 2/3) / 2 = 0.5833...
        ([N, N, Y], 1 / 3),  # (1/3) / 1
    ],
)
def test_contextual_precision_table(relevant: list[bool], score: float) -> None:
    assert weighted_cumulative_precision(relevant) == pytest.approx(score, rel=1e-12)


@pytest.mark.parametrize(
    ("relevant", "score"),
    [
        ([Y], 1.0),
        ([Y, Y, Y], 1.0),
        ([N, Y], 0.5),
        ([Y, N, N, Y], 0.75),  # (1/1 + 2/4) / 2
        ([N, Y, N, Y], 0.5),  # (1/2 + 2/4) / 2
        ([N, N, N, N, Y], 0.2),
    ],
)
def test_contextual_precision_rewards_relevant_nodes_ranked_first(relevant: list[bool], score: float) -> None:
    assert weighted_cumulative_precision(relevant) == pytest.approx(score, rel=1e-12)


@pytest.mark.parametrize("relevant", [[], [N], [N, N, N]])
def test_contextual_precision_without_a_relevant_node_is_zero(relevant: list[bool]) -> None:
    assert weighted_cumulative_precision(relevant) == 0.0


def test_contextual_precision_depends_on_the_order() -> None:
    scores = [weighted_cumulative_precision(r) for r in ([Y, Y, N], [Y, N, Y], [N, Y, Y], [N, N, Y])]
    assert scores == sorted(scores, reverse=True)


# --- contextual recall: supported / sentences --------------------------------------------------


def test_recall_worked_example() -> None:
    # Worked by hand: expected output "You are eligible for a 30 day full refund at no extra
    # cost. Shipping is free." against a retrieval context about the refund only: 1 / 2.
    assert recall_score([Y, N]) == 0.5


@pytest.mark.parametrize(("supported", "score"), [([Y], 1.0), ([N], 0.0), ([Y, Y, N], 2 / 3), ([N, N, N, Y], 0.25)])
def test_recall_is_the_share_supported(supported: list[bool], score: float) -> None:
    assert recall_score(supported) == pytest.approx(score, rel=1e-12)


def test_recall_of_no_sentences_is_one() -> None:
    assert recall_score([]) == 1.0


# --- contextual relevancy: relevant statements / statements ------------------------------------


@pytest.mark.parametrize(("relevant", "score"), [([Y], 1.0), ([N], 0.0), ([Y, N, N, Y, Y], 0.6), ([N, N, N, Y], 0.25)])
def test_contextual_relevancy_is_the_share_relevant(relevant: list[bool], score: float) -> None:
    assert contextual_relevancy_score(relevant) == score


def test_contextual_relevancy_of_no_statements_is_zero() -> None:
    assert contextual_relevancy_score([]) == 0.0


# --- sentences (contextual recall; faithfulness and answer relevancy by default) -------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One.", ["One."]),
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("  Paris is the capital.   It is in France.  ", ["Paris is the capital.", "It is in France."]),
        ("A line\nanother line\n\n- a bullet", ["A line", "another line", "- a bullet"]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("(See above.) Next.", ["(See above.)", "Next."]),
        ("Pi is 3.14 exactly.", ["Pi is 3.14 exactly."]),  # no white space after the point
        ("Mr. Lee came at 9 a.m. today. He left.", ["Mr. Lee came at 9 a.m. today.", "He left."]),  # abbreviations
        ("The U.S. grew 2.5% in 2019, e.g. in May.", ["The U.S. grew 2.5% in 2019, e.g. in May."]),
        ("", []),
        ("  \n\t ", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences
