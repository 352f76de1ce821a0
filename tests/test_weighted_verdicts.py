"""Verdicts read as probabilities (``verdict_reading = "weighted"``), against a scripted judge.

The arithmetic (expected counts), the exact distribution requests (the prompt's messages, the reply
as the judge wrote it up to each verdict's opening quote), the explicit fallback, and the pure
functions of localeval/metrics/verdicts.py. A scripted judge is evidence about the arithmetic and
the requests, not about any model; the real-model test is in test_weighted_verdicts_model.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from scripted import FULL_CAPABILITIES, ScriptedBackend

from localeval.backends.base import DistributionRequest, JsonRequest, Message
from localeval.data.case import ConversationalTestCase, TestCase
from localeval.distribution import renormalize
from localeval.errors import ConfigError
from localeval.metrics import build_metric
from localeval.metrics.rag.scores import weighted_cumulative_precision
from localeval.metrics.summarization import coverage_score
from localeval.metrics.verdicts import (
    ItemVerdict,
    Verdicts,
    format_count,
    share,
    string_value_offsets,
    tally,
    verdict_prefills,
)

TERNARY = ("yes", "no", "idk")
RAG = TestCase(
    input="What if these shoes don't fit?",
    actual_output="You can return them within 30 days. Shipping is free. The shop is in Paris.",
    retrieval_context=["All customers can return items within 30 days.", "Shipping costs 5 dollars."],
)


def lp(**probabilities: float) -> dict[str, float]:
    """Log-probabilities a scripted judge answers, from probabilities (summing to the covered mass)."""
    return {c: math.log(p) for c, p in probabilities.items()}


def distribution_requests(judge: ScriptedBackend) -> list[DistributionRequest]:
    return [r for r in judge.requests if isinstance(r, DistributionRequest)]


def json_request(judge: ScriptedBackend, at: int = 0) -> JsonRequest:
    request = [r for r in judge.requests if isinstance(r, JsonRequest)][at]
    return request


# -- where the verdicts are in a reply ----------------------------------------------------


def test_a_verdicts_prefill_is_the_reply_as_written_up_to_its_opening_quote() -> None:
    text = '{"verdicts": ["yes", "no", "idk"]}'
    assert verdict_prefills(text, ["yes", "no", "idk"]) == [
        '{"verdicts": ["', '{"verdicts": ["yes", "', '{"verdicts": ["yes", "no", "']


def test_the_reply_is_read_as_written_whatever_its_spacing_and_escapes() -> None:
    text = '\n{ "verdicts" :[\n  "yes" ,"n\\u006f"]}\n'  # "no" written with an escape
    assert verdict_prefills(text, ["yes", "no"]) == ['\n{ "verdicts" :[\n  "', '\n{ "verdicts" :[\n  "yes" ,"']
    assert verdict_prefills('{"verdict":"relevant"}', ["relevant"]) == ['{"verdict":"']


def test_only_string_values_are_located_keys_and_other_values_are_not() -> None:
    text = '{"a": [1, -2.5e3, true, null, {"b": "x"}], "c": "y"}'
    assert [text[o:o + 3] for o in string_value_offsets(text)] == ['"x"', '"y"']


@pytest.mark.parametrize(("text", "written"), [
    ('{"verdicts": ["yes", "no"]}', ["no", "yes"]),  # not the verdicts given
    ('{"verdicts": ["yes"]} trailing', ["yes"]),  # not one JSON value
    ('{"verdicts" ["yes"]}', ["yes"]),  # not JSON
])
def test_a_reply_whose_strings_are_not_its_verdicts_is_refused(text: str, written: list[str]) -> None:
    with pytest.raises(ValueError):
        verdict_prefills(text, written)


# -- the arithmetic -------------------------------------------------------------------------


def test_counts_are_whole_numbers_written_and_sums_of_probabilities_weighted() -> None:
    written = tally(["yes", "no", "yes"], TERNARY)
    assert written == {"yes": 2, "no": 1, "idk": 0} and all(type(n) is int for n in written.values())
    weighted = tally([{"yes": 0.7, "no": 0.2, "idk": 0.1}, {"yes": 0.25, "no": 0.75, "idk": 0.0}], TERNARY)
    assert weighted == pytest.approx({"yes": 0.95, "no": 0.95, "idk": 0.1}, rel=1e-12)
    assert share([{"yes": 0.7, "no": 0.3}, "yes"], "yes", empty=0.0) == pytest.approx(0.85, rel=1e-12)
    assert share([], "yes", empty=1.0) == 1.0
    assert (format_count(3), format_count(2.745)) == ("3", "2.75")


def test_weighted_precision_puts_each_nodes_probability_where_written_puts_one_or_zero() -> None:
    r = [0.5, 1.0, 0.0]
    expected = (0.5 * (0.5 / 1) + 1.0 * (1.5 / 2)) / 1.5
    assert weighted_cumulative_precision(r) == pytest.approx(expected, rel=1e-12)
    assert weighted_cumulative_precision([True, False, True]) == pytest.approx(5 / 6, rel=1e-12)


def test_weighted_coverage_is_a_ratio_of_expected_counts() -> None:
    source = [{"yes": 0.8, "no": 0.2, "idk": 0.0}, {"yes": 0.5, "no": 0.5, "idk": 0.0}]
    summary: list[ItemVerdict] = [{"yes": 0.5, "no": 0.5, "idk": 0.0}, "yes"]
    assert coverage_score(source, summary) == pytest.approx((0.8 * 0.5 + 0.5 * 1) / 1.3, rel=1e-12)


def test_verdicts_read_weighted_keep_the_written_ones_and_record_the_distributions() -> None:
    distributions = [renormalize(lp(yes=0.3, no=0.15, idk=0.05)), renormalize(lp(yes=0.1, no=0.8, idk=0.1))]
    read = Verdicts.from_distributions(["yes", "no"], distributions)
    assert read.written == ("yes", "no") and read.weighted
    [first, _] = read.evidence()["distributions"]
    assert first["probabilities"] == pytest.approx({"yes": 0.6, "no": 0.3, "idk": 0.1}, rel=1e-12)
    assert first["covered_mass"] == pytest.approx(0.5, rel=1e-12)
    assert Verdicts.as_written(["yes"]).evidence() == {}  # the default reading adds nothing to the details


# -- the metrics ------------------------------------------------------------------------------


FAITHFULNESS_DISTRIBUTIONS = [lp(yes=0.7, no=0.2, idk=0.1), lp(yes=0.3, no=0.6, idk=0.1), lp(yes=0.2, no=0.1, idk=0.7)]


def test_weighted_faithfulness_counts_expected_verdicts_read_where_the_judge_wrote_them() -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no", "idk"]}], FAITHFULNESS_DISTRIBUTIONS)
    metric = build_metric("faithfulness", {"verdict_reading": "weighted", "include_reason": False})
    result = metric.measure(RAG, judge)

    assert result.error is None
    assert result.score == pytest.approx((0.8 + 0.4 + 0.9) / 3, rel=1e-12)  # 1 - P(no); written: 2/3
    asked = distribution_requests(judge)
    assert [r.prefill for r in asked] == [
        '{"verdicts": ["', '{"verdicts": ["yes", "', '{"verdicts": ["yes", "no", "']
    assert all(r.messages == json_request(judge).messages and r.candidates == TERNARY for r in asked)
    details = result.details
    assert details["verdict_reading"] == "weighted"
    assert [v["verdict"] for v in details["verdicts"]] == ["yes", "no", "idk"]  # as written
    assert details["counts"] == pytest.approx({"yes": 1.2, "no": 0.9, "idk": 0.9}, rel=1e-12)
    assert [d["probabilities"]["no"] for d in details["distributions"]] == pytest.approx([0.2, 0.6, 0.1])
    assert result.reason == "2.10 of 3 claims are faithful to the retrieval context (0.90 contradicted, 0.90 not covered)."


def test_weighted_faithfulness_without_idk_counts_only_yes() -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no", "idk"]}], FAITHFULNESS_DISTRIBUTIONS)
    metric = build_metric("faithfulness", {"verdict_reading": "weighted", "include_reason": False,
                                           "idk_is_faithful": False})
    assert metric.measure(RAG, judge).score == pytest.approx((0.7 + 0.3 + 0.2) / 3, rel=1e-12)


def test_the_reason_continues_the_reply_as_written_and_is_told_the_written_verdicts() -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no", "idk"]}, {"reason": "One claim is contradicted."}],
                            FAITHFULNESS_DISTRIBUTIONS)
    result = build_metric("faithfulness", {"verdict_reading": "weighted"}).measure(RAG, judge)
    reason = json_request(judge, 1)
    assert result.reason == "One claim is contradicted."
    assert reason.messages[-2] == Message(role="assistant", content='{"verdicts": ["yes", "no", "idk"]}')
    assert "1. yes; 2. no; 3. idk." in reason.messages[-1].content
    assert "score is 0.7," in reason.messages[-1].content


def test_the_written_reading_is_the_default_and_asks_for_no_distribution() -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no", "idk"]}])  # a distribution request would exhaust it
    result = build_metric("faithfulness", {"include_reason": False}).measure(RAG, judge)
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert "verdict_reading" not in result.details and "distributions" not in result.details
    assert result.details["counts"] == {"yes": 1, "no": 1, "idk": 1}


def test_weighted_bias_is_the_expected_share_of_biased_opinions() -> None:
    judge = ScriptedBackend(
        [{"opinions": ["Old people cannot learn.", "The film was long."]}, {"verdicts": ["biased", "unbiased"]}],
        [lp(biased=0.9, unbiased=0.1), lp(biased=0.3, unbiased=0.7)],
    )
    case = TestCase(input="Tell me.", actual_output="Old people cannot learn. The film was long.")
    result = build_metric("bias", {"verdict_reading": "weighted", "include_reason": False}).measure(case, judge)
    assert result.score == pytest.approx(0.6, rel=1e-12)  # (0.9 + 0.3) / 2; written: 0.5
    assert [r.prefill for r in distribution_requests(judge)] == [
        '{"verdicts": ["', '{"verdicts": ["biased", "']
    assert all(r.candidates == ("biased", "unbiased") for r in distribution_requests(judge))
    assert result.details["counts"] == pytest.approx({"biased": 1.2, "unbiased": 0.8}, rel=1e-12)


def test_weighted_answer_relevancy_counts_one_minus_the_chance_of_no() -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no"]}], [lp(yes=0.5, no=0.25, idk=0.25), lp(yes=0.1, no=0.9, idk=0.0001)])
    case = TestCase(input="Where is Paris?", actual_output="Paris is in France. I like cheese.")
    result = build_metric("answer_relevancy", {"verdict_reading": "weighted", "include_reason": False}).measure(case, judge)
    p_no_second = 0.9 / 1.0001
    assert result.score == pytest.approx((0.75 + 1 - p_no_second) / 2, rel=1e-12)
    assert [r.prefill for r in distribution_requests(judge)] == ['{"verdicts": ["', '{"verdicts": ["yes", "']
    assert result.details["statements"] == ["Paris is in France.", "I like cheese."]


def test_weighted_pii_leakage_is_the_chance_that_one_statement_leaks() -> None:
    judge = ScriptedBackend([{"verdicts": ["safe", "leaks"]}], [lp(leaks=0.2, safe=0.8), lp(leaks=0.6, safe=0.4)])
    case = TestCase(input="Who?", actual_output="Thanks for asking. John's SSN is 123-45-6789.")
    result = build_metric("pii_leakage", {"verdict_reading": "weighted", "include_reason": False}).measure(case, judge)
    assert result.score == pytest.approx(1 - 0.8 * 0.4, rel=1e-12)
    assert result.details["leaking"] == ["John's SSN is 123-45-6789."]  # as written


CONVERSATION = ConversationalTestCase.model_validate({
    "chatbot_role": "a polite librarian",
    "turns": [{"role": "user", "content": "Any book on birds?"}, {"role": "assistant", "content": "Shelf 4."},
              {"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "Go away."}],
})


def test_weighted_role_adherence_reads_each_turns_verdict_where_it_was_written() -> None:
    judge = ScriptedBackend([{"verdicts": ["in_role", "out_of_role"]}],
                            [lp(in_role=0.9, out_of_role=0.1), lp(in_role=0.2, out_of_role=0.8)])
    result = build_metric("role_adherence", {"verdict_reading": "weighted", "include_reason": False}).measure(
        CONVERSATION, judge)
    assert result.score == pytest.approx((0.9 + 0.2) / 2, rel=1e-12)
    assert [r.prefill for r in distribution_requests(judge)] == ['{"verdicts": ["', '{"verdicts": ["in_role", "']
    assert all(r.messages == json_request(judge).messages for r in distribution_requests(judge))
    assert result.details["verdicts"] == [{"turn": 2, "verdict": "in_role"}, {"turn": 4, "verdict": "out_of_role"}]
    assert result.details["verdict_reading"] == "weighted"


def test_weighted_turn_relevancy_reads_each_one_verdict_reply() -> None:
    judge = ScriptedBackend([{"verdict": "relevant"}, {"verdict": "irrelevant"}],
                            [lp(relevant=0.7, irrelevant=0.3), lp(relevant=0.4, irrelevant=0.6)])
    # One verdict request, then its distribution, per exchange: the scripts are consumed in that order.
    result = build_metric("turn_relevancy", {"verdict_reading": "weighted", "include_reason": False}).measure(
        CONVERSATION, judge)
    assert result.score == pytest.approx((0.7 + 0.4) / 2, rel=1e-12)
    assert [r.prefill for r in distribution_requests(judge)] == ['{"verdict": "', '{"verdict": "']
    assert [type(r).__name__ for r in judge.requests] == ["JsonRequest", "DistributionRequest"] * 2
    assert len(result.details["distributions"]) == 2


def test_weighted_knowledge_retention_decides_what_was_tested_by_the_written_verdicts() -> None:
    case = ConversationalTestCase.model_validate({"turns": [
        {"role": "user", "content": "I am Ann."}, {"role": "assistant", "content": "Hi Ann."},
        {"role": "user", "content": "Who am I?"}, {"role": "assistant", "content": "Bob?"}]})
    choices = ("kept", "forgot", "contradicted", "nothing_to_retain")
    judge = ScriptedBackend([{"verdicts": ["nothing_to_retain", "contradicted"]}], [
        lp(kept=0.1, forgot=0.1, contradicted=0.1, nothing_to_retain=0.7),
        lp(kept=0.3, forgot=0.1, contradicted=0.5, nothing_to_retain=0.1)])
    metric = build_metric("knowledge_retention", {"verdict_reading": "weighted", "include_reason": False})
    result = metric.measure(case, judge)
    assert all(r.candidates == choices for r in distribution_requests(judge))
    assert result.score == pytest.approx((0.1 + 0.3) / (0.3 + 0.9), rel=1e-12)  # kept / (kept+forgot+contradicted)

    # Written "nothing to retain" everywhere: nothing tested memory, whatever mass the other verdicts had.
    judge = ScriptedBackend([{"verdicts": ["nothing_to_retain", "nothing_to_retain"]}], [
        lp(kept=0.2, forgot=0.1, contradicted=0.1, nothing_to_retain=0.6)] * 2)
    unscored = metric.measure(case, judge)
    assert unscored.score is None and unscored.error is not None and "nothing tested" in unscored.error


# -- the fallback -----------------------------------------------------------------------------


NO_LOGPROBS = FULL_CAPABILITIES.model_copy(update={"distribution": False})
NO_CONTINUATION = FULL_CAPABILITIES.model_copy(update={"multi_token_candidates": False})


def test_a_judge_without_log_probabilities_is_refused_unless_the_fallback_is_allowed() -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no", "idk"]}], capabilities=NO_LOGPROBS)
    refused = build_metric("faithfulness", {"verdict_reading": "weighted", "include_reason": False}).measure(RAG, judge)
    assert refused.error is not None and refused.score is None
    assert "set verdict_reading = 'written', or allow_fallback = true" in refused.error
    assert "the judge gives no log-probabilities" in refused.error


@pytest.mark.parametrize(("capabilities", "why"), [
    (NO_LOGPROBS, "written (the judge gives no log-probabilities)"),
    (NO_CONTINUATION, "written (the judge's prefill mode cannot continue its reply)"),
])
def test_an_allowed_fallback_counts_the_written_verdicts_and_says_so(capabilities: Any, why: str) -> None:
    judge = ScriptedBackend([{"verdicts": ["yes", "no", "idk"]}], capabilities=capabilities)
    options = {"verdict_reading": "weighted", "allow_fallback": True, "include_reason": False}
    result = build_metric("faithfulness", options).measure(RAG, judge)
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert result.details["verdict_reading"] == why and "distributions" not in result.details
    assert distribution_requests(judge) == []


def test_an_allowed_fallback_is_recorded_for_a_conversational_metric_too() -> None:
    judge = ScriptedBackend([{"verdicts": ["in_role", "out_of_role"]}], capabilities=NO_LOGPROBS)
    options = {"verdict_reading": "weighted", "allow_fallback": True, "include_reason": False}
    result = build_metric("role_adherence", options).measure(CONVERSATION, judge)
    assert result.score == 0.5
    assert result.details["verdict_reading"] == "written (the judge gives no log-probabilities)"


def test_strict_mode_needs_the_written_reading() -> None:
    with pytest.raises(ConfigError, match="strict_mode needs verdict_reading = 'written'"):
        build_metric("faithfulness", {"verdict_reading": "weighted", "strict_mode": True})
    with pytest.raises(ConfigError, match=r"^bias\.verdict_reading: .*'written' or 'weighted'"):
        build_metric("bias", {"verdict_reading": "probable"})
