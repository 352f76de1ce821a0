"""G-Eval with real models: fractional scores, the argmax of the same distribution,
and multi-digit ranges on both shipped tokenizers."""

from __future__ import annotations

import math

import pytest

from localeval.backends.base import DistributionRequest, Message
from localeval.data.case import TestCase
from localeval.metrics import build_metric

pytestmark = pytest.mark.model

CASE = TestCase(
    input="The city council approved a new park on Main Street on Monday. Construction starts in May.",
    actual_output="The council approved a park on Main Street; work begins in May.",
)


def test_logprobs_scores_are_fractional_with_their_covered_mass(llama_backend):
    metric = build_metric("geval:consistency", {"include_reason": False})
    result = metric.measure(CASE, llama_backend)
    assert result.error is None
    details = result.details
    assert details["method"] == "logprobs"
    assert 0.1 <= details["covered_mass"] <= 1.0
    assert sum(details["distribution"].values()) == pytest.approx(1.0, abs=1e-12)
    expected = sum(int(s) * p for s, p in details["distribution"].items())
    assert result.raw_score == pytest.approx(expected, rel=1e-12)
    assert result.raw_score != round(result.raw_score)  # a weighted score, not an integer
    assert result.score == pytest.approx((expected - 1) / 4, rel=1e-12)


def test_top_is_the_argmax_of_the_same_distribution(llama_backend):
    weighted = build_metric("geval:consistency", {"include_reason": False}).measure(CASE, llama_backend)
    top = build_metric("geval:consistency", {"include_reason": False, "scoring": "top"}).measure(CASE, llama_backend)
    assert top.details["distribution"] == weighted.details["distribution"]
    dist = weighted.details["distribution"]
    argmax = max(dist, key=dist.__getitem__)
    assert top.raw_score == float(argmax)
    assert top.score == pytest.approx((int(argmax) - 1) / 4)


def test_the_reason_comes_from_the_judge_and_does_not_move_the_score(llama_backend):
    with_reason = build_metric("geval:consistency").measure(CASE, llama_backend)
    without = build_metric("geval:consistency", {"include_reason": False}).measure(CASE, llama_backend)
    assert with_reason.score == without.score
    assert with_reason.reason and not with_reason.reason.startswith("Expected score")
    assert without.reason.startswith("Expected score")


def test_sampling_scores_with_seeded_samples(llama_backend):
    metric = build_metric("geval:fluency", {"include_reason": False, "scoring": "sampling", "samples": 6})
    first = metric.measure(CASE, llama_backend)
    again = metric.measure(CASE, llama_backend)
    assert first.error is None
    samples = first.details["samples"]
    assert len(samples) == 6 and all(s in (1, 2, 3) for s in samples)
    assert first.raw_score == pytest.approx(sum(samples) / 6)
    assert again.details["samples"] == samples  # fixed seeds: reproducible


def test_a_zero_to_ten_range_is_scored_exactly(shipped_backend):
    """On both tokenizers "10" is two tokens, "1" then "0"; P(score 1) must exclude it.

    Each score is the whole answer, P(c) · P(the number ends | c) (checked against an independent
    read in test_llamacpp.py), so a score's probability is the same whether "10" is a candidate or not.
    """
    messages = (Message(role="user", content="Rate how clear this sentence is from 0 to 10: 'The sky is blue.'"),)
    digits = tuple(str(s) for s in range(10))
    ten = shipped_backend.candidate_distribution(
        DistributionRequest(messages=messages, prefill="Score: ", candidates=(*digits, "10"))
    ).distribution
    single = shipped_backend.candidate_distribution(
        DistributionRequest(messages=messages, prefill="Score: ", candidates=digits)
    ).distribution
    assert ten.whole_answers and single.whole_answers
    assert {c: ten.logprobs[c] for c in digits} == single.logprobs
    assert ten.covered_mass == pytest.approx(single.covered_mass + math.exp(ten.logprobs["10"]), rel=1e-9)

    metric = build_metric("geval", {"criteria": "Clarity.", "score_range": [0, 10], "include_reason": False,
                                    "evaluation_params": ["actual_output"], "min_covered_mass": 0.0})
    result = metric.measure(TestCase(input="-", actual_output="The sky is blue."), shipped_backend)
    assert result.error is None, result.error
    assert set(result.details["distribution"]) == {str(s) for s in range(11)}
    assert 0.0 <= result.score <= 1.0
