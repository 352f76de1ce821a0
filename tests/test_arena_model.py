"""The arena with the real default model: letters at the verdict position, both orders, sampling, reason."""

from __future__ import annotations

import pytest

from localeval.backends.base import DistributionRequest
from localeval.data.case import TestCase
from localeval.metrics import Arena

pytestmark = pytest.mark.model

CASE = TestCase(
    input="What is the capital of Australia?",
    expected_output="Canberra",
    contestants={"right": "Canberra.", "wrong": "Sydney is the capital of Australia."},
)
STEPS = ("Check which output agrees with the expected output.",)


def arena(**options: object) -> Arena:
    return Arena(**{"evaluation_steps": STEPS, "evaluation_params": ("input", "expected_output"),
                    "include_reason": False, **options})


def test_the_letters_carry_the_mass_and_the_preference_averages_both_orders(llama_backend) -> None:
    result = arena().measure(CASE, llama_backend)
    assert result.error is None
    pair = result.details["pairs"][0]
    for order in pair["orders"]:
        assert order["covered_mass"] > 0.5  # the judge writes " A" or " B" after the prefill
        assert sum(order["distribution"].values()) == pytest.approx(1.0, abs=1e-12)
        assert 0.0 < order["p_first"] < 1.0  # a probability read from logits, not a verdict
    first, second = pair["p_first"]
    assert result.score == pytest.approx((first + 1.0 - second) / 2, abs=1e-12)
    assert result.details["mean_p_first"] == pytest.approx((first + second) / 2, abs=1e-12)
    # deterministic: the same forward passes give the same numbers
    assert arena().measure(CASE, llama_backend).details == result.details


def test_the_two_orders_are_two_prompts_that_differ_only_in_where_the_outputs_stand(llama_backend) -> None:
    metric = arena()
    forward, backward = metric._prompt(CASE, "right", "wrong"), metric._prompt(CASE, "wrong", "right")
    text_f, text_b = forward.messages[-1].content, backward.messages[-1].content
    assert text_f.replace("Canberra.", "@").replace("Sydney is the capital of Australia.", "Canberra.").replace(
        "@", "Sydney is the capital of Australia.") == text_b
    reply = llama_backend.candidate_distribution(
        DistributionRequest(messages=forward.messages, prefill=forward.prefill, candidates=(" A", " B"))
    )
    assert reply.distribution.probabilities[" A"] == pytest.approx(
        arena().measure(CASE, llama_backend).details["pairs"][0]["p_first"][0], abs=1e-12
    )


def test_sampling_gives_schema_valid_verdicts(llama_backend) -> None:
    result = arena(scoring="sampling", samples=3).measure(CASE, llama_backend)
    assert result.error is None
    for order in result.details["pairs"][0]["orders"]:
        assert all(v in ("A", "B") for v in order["samples"])  # constrained: never a parse failure
        assert order["p_first"] == pytest.approx(order["samples"].count("A") / 3)


def test_the_reason_is_a_follow_up_in_json(llama_backend) -> None:
    result = arena(include_reason=True).measure(CASE, llama_backend)
    assert result.error is None
    assert "reason_error" not in result.details
    assert result.reason and not result.reason.startswith("right preferred to wrong with probability")  # not the summary
