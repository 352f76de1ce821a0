"""The six RAG metrics against a scripted judge: the exact requests, the prompts, the scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted import ScriptedBackend, json_requests

from localeval.backends.base import JsonRequest, Message
from localeval.config import RunConfig
from localeval.data.case import LIST_FIELDS, TestCase
from localeval.data.dataset import Dataset
from localeval.errors import SchemaViolation, TruncatedOutput
from localeval.metrics import (
    AnswerRelevancy,
    ContextualPrecision,
    ContextualRecall,
    ContextualRelevancy,
    Faithfulness,
    Hallucination,
    build_metric,
    metric_names,
)
from localeval.metrics.items import items_schema, items_tokens, verdicts_schema, verdicts_tokens
from localeval.metrics.judged import REASON_SCHEMA
from localeval.metrics.rag import RAG_METRICS, RagMetric

CASE = TestCase(
    input="What if these shoes don't fit?",
    actual_output="You can return them within 30 days. Shipping is free.",
    expected_output="You can return them within 30 days. The refund is full.",
    context=["Returns are accepted within 30 days.", "Shipping costs 5 dollars."],
    retrieval_context=["All customers can return items within 30 days.", "Shipping is free over 50 dollars."],
)
TERNARY = ["yes", "no", "idk"]
YES_NO = ["yes", "no"]


def user(request: JsonRequest) -> str:
    return request.messages[-1].content


def verdicts_request(count: int, choices: list[str]) -> dict[str, Any]:
    """What a verdict request's schema and token budget must be, spelled out."""
    return {
        "json_schema": {
            "type": "object",
            "properties": {
                "verdicts": {
                    "type": "array",
                    "items": {"type": "string", "enum": choices},
                    "minItems": count,
                    "maxItems": count,
                }
            },
            "required": ["verdicts"],
            "additionalProperties": False,
        },
        "max_tokens": 32 + 12 * count,
    }


def shape(request: JsonRequest) -> dict[str, Any]:
    return {"json_schema": request.json_schema, "max_tokens": request.max_tokens}


# --- the schema helpers ------------------------------------------------------------------------


def test_verdicts_schema_fixes_the_count_and_the_enum() -> None:
    assert {"json_schema": verdicts_schema(3, ("yes", "no")), "max_tokens": verdicts_tokens(3)} == verdicts_request(
        3, YES_NO
    )


def test_items_schema_bounds_the_list_and_each_string() -> None:
    assert items_schema("claims", 7) == {
        "type": "object",
        "properties": {
            "claims": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 200},
                "minItems": 1,
                "maxItems": 7,
            }
        },
        "required": ["claims"],
        "additionalProperties": False,
    }
    assert items_tokens(7) == 32 + 7 * 108  # 200 characters at two a token, and separators


# --- answer relevancy ----------------------------------------------------------------------------

OUTPUT_SENTENCES = ["You can return them within 30 days.", "Shipping is free."]


def test_answer_relevancy_judges_each_sentence_of_the_output_in_one_call() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["yes", "no"]}])
    result = AnswerRelevancy(include_reason=False).measure(CASE, judge)
    [verdicts] = json_requests(judge)
    assert shape(verdicts) == verdicts_request(2, TERNARY)
    assert user(verdicts).startswith(
        "Question:\nWhat if these shoes don't fit?\n\nStatements from the answer:\n"
        "1. You can return them within 30 days.\n2. Shipping is free.\n"
    )
    assert "Write exactly 2 verdicts." in user(verdicts)
    assert (result.error, result.score, result.passed) == (None, 0.5, True)
    assert result.raw_score == 0.5
    assert result.details == {
        "statements": OUTPUT_SENTENCES,
        "statements_from": "sentences",
        "dropped": 0,
        "verdicts": [
            {"statement": "You can return them within 30 days.", "verdict": "yes"},
            {"statement": "Shipping is free.", "verdict": "no"},
        ],
        "counts": {"yes": 1, "no": 1, "idk": 0},
    }
    assert result.reason == "1 of 2 statements address the input (yes or idk)."


def test_answer_relevancy_extracts_statements_then_judges_each() -> None:
    judge = ScriptedBackend(
        json_values=[
            {"statements": ["You can return them within 30 days.", "Shipping is free.", "Have a nice day."]},
            {"verdicts": ["yes", "no", "idk"]},
        ]
    )
    result = AnswerRelevancy(statements="extracted", include_reason=False).measure(CASE, judge)
    extraction, verdicts = json_requests(judge)
    assert shape(extraction) == {"json_schema": items_schema("statements", 10), "max_tokens": items_tokens(10)}
    assert shape(verdicts) == verdicts_request(3, TERNARY)
    assert "Text:\nYou can return them within 30 days. Shipping is free." in user(extraction)
    assert "at most 10." in extraction.messages[0].content
    assert [m.role for m in extraction.messages] == ["system", "user", "assistant", "user"]  # one worked example
    assert user(verdicts).startswith(
        "Question:\nWhat if these shoes don't fit?\n\nStatements from the answer:\n"
        "1. You can return them within 30 days.\n2. Shipping is free.\n3. Have a nice day.\n"
    )
    assert "Write exactly 3 verdicts." in user(verdicts)
    assert (result.error, result.score, result.passed) == (None, pytest.approx(2 / 3, rel=1e-12), True)
    assert result.raw_score == pytest.approx(2 / 3, rel=1e-12)
    assert result.details == {
        "statements": ["You can return them within 30 days.", "Shipping is free.", "Have a nice day."],
        "statements_from": "extracted",
        "dropped": 0,
        "verdicts": [
            {"statement": "You can return them within 30 days.", "verdict": "yes"},
            {"statement": "Shipping is free.", "verdict": "no"},
            {"statement": "Have a nice day.", "verdict": "idk"},
        ],
        "counts": {"yes": 1, "no": 1, "idk": 1},
    }
    assert result.reason == "2 of 3 statements address the input (yes or idk)."


@pytest.mark.parametrize(
    ("output", "sentences", "dropped"),
    [
        ("Mr. Lee paid $3.50 at 9 a.m. He left! Did he?", ["Mr. Lee paid $3.50 at 9 a.m.", "He left!", "Did he?"], 0),
        ("The U.S. grew 2.5% in 2019.\n\nIt slowed after.", ["The U.S. grew 2.5% in 2019.", "It slowed after."], 0),
        ("Yes. Yes.  No", ["Yes.", "No"], 1),
        ("no full stop at all", ["no full stop at all"], 0),
    ],
)
def test_sentences_are_split_by_rules_and_repeats_dropped(output: str, sentences: list[str], dropped: int) -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["yes"] * len(sentences)}])
    result = AnswerRelevancy(include_reason=False).measure(CASE.model_copy(update={"actual_output": output}), judge)
    assert (result.details["statements"], result.details["dropped"]) == (sentences, dropped)
    assert shape(json_requests(judge)[0]) == verdicts_request(len(sentences), TERNARY)


@pytest.mark.parametrize("kind", ["answer_relevancy", "faithfulness"])
def test_an_output_of_white_space_has_no_sentence_to_judge(kind: str) -> None:
    judge = ScriptedBackend()
    result = metric(kind).measure(CASE.model_copy(update={"actual_output": " \n "}), judge)
    assert result.error == "MetricInputError: the output has no sentence to judge"
    assert judge.requests == []


def test_blank_and_repeated_statements_are_dropped_before_judging() -> None:
    judge = ScriptedBackend(
        json_values=[
            {"statements": [" Returns: 30 days. ", "Returns: 30 days.", " ", "Free shipping."]},
            {"verdicts": ["no", "no"]},
        ]
    )
    result = AnswerRelevancy(statements="extracted", include_reason=False).measure(CASE, judge)
    assert shape(json_requests(judge)[1]) == verdicts_request(2, TERNARY)
    assert (result.score, result.passed) == (0.0, False)
    assert result.details["statements"] == ["Returns: 30 days.", "Free shipping."]
    assert result.details["dropped"] == 2


def test_only_blank_statements_is_an_error_result() -> None:
    judge = ScriptedBackend(json_values=[{"statements": [" ", "  "]}])
    result = AnswerRelevancy(statements="extracted").measure(CASE, judge)
    assert (result.score, result.error) == (None, "BackendError: the judge listed no statements, only blank strings")
    assert len(judge.requests) == 1


def test_max_statements_bounds_the_extraction() -> None:
    judge = ScriptedBackend(json_values=[{"statements": ["A."]}, {"verdicts": ["yes"]}])
    AnswerRelevancy(statements="extracted", max_statements=4, include_reason=False).measure(CASE, judge)
    extraction = json_requests(judge)[0]
    assert shape(extraction) == {"json_schema": items_schema("statements", 4), "max_tokens": items_tokens(4)}
    assert "at most 4." in extraction.messages[0].content


# --- faithfulness ----------------------------------------------------------------------------------

TRUTHS = {"truths": ["Customers can return items within 30 days.", "Shipping is free over 50 dollars."]}
CLAIMS = {"claims": ["You can return them within 30 days.", "Shipping is free.", "Returns are easy."]}
VERDICTS = {"verdicts": ["yes", "no", "idk"]}


def test_faithfulness_judges_each_sentence_against_the_context_in_one_call() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["yes", "no"]}])
    result = Faithfulness(include_reason=False).measure(CASE, judge)
    [verdicts] = json_requests(judge)
    assert shape(verdicts) == verdicts_request(2, TERNARY)
    assert verdicts.messages[0].content == "You check claims against a context, using nothing but what it says."
    assert user(verdicts).startswith(
        "Context:\n- All customers can return items within 30 days.\n- Shipping is free over 50 dollars.\n\n"
        "Claims:\n1. You can return them within 30 days.\n2. Shipping is free.\n"
    )
    assert '"no" - the context contradicts the claim;' in user(verdicts)
    assert (result.score, result.passed) == (0.5, True)
    assert result.raw_score == 0.5
    assert result.details == {
        "claims": OUTPUT_SENTENCES,
        "claims_from": "sentences",
        "dropped": {"claims": 0},
        "verdicts": [
            {"claim": "You can return them within 30 days.", "verdict": "yes"},
            {"claim": "Shipping is free.", "verdict": "no"},
        ],
        "counts": {"yes": 1, "no": 1, "idk": 0},
        "idk_is_faithful": True,
    }
    assert result.reason == "1 of 2 claims are faithful to the retrieval context (1 contradicted, 0 not covered)."


def test_faithfulness_extracts_claims_then_judges_each_against_the_context() -> None:
    judge = ScriptedBackend(json_values=[CLAIMS, VERDICTS])
    result = Faithfulness(claims="extracted", include_reason=False).measure(CASE, judge)
    claims, verdicts = json_requests(judge)
    assert shape(claims) == {"json_schema": items_schema("claims", 10), "max_tokens": items_tokens(10)}
    assert user(claims) == "Text:\nYou can return them within 30 days. Shipping is free."
    assert shape(verdicts) == verdicts_request(3, TERNARY)
    assert "Claims:\n1. You can return them within 30 days.\n2. Shipping is free.\n3. Returns are easy.\n" in (
        user(verdicts)
    )
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert (result.details["claims"], result.details["claims_from"]) == (CLAIMS["claims"], "extracted")
    assert result.details["counts"] == {"yes": 1, "no": 1, "idk": 1}


def test_faithfulness_with_a_truths_limit_judges_against_extracted_facts() -> None:
    judge = ScriptedBackend(json_values=[TRUTHS, CLAIMS, VERDICTS])
    result = Faithfulness(truths_extraction_limit=16, claims="extracted", include_reason=False).measure(CASE, judge)
    truths, claims, verdicts = json_requests(judge)
    assert shape(truths) == {"json_schema": items_schema("truths", 16), "max_tokens": items_tokens(16)}
    assert shape(claims) == {"json_schema": items_schema("claims", 10), "max_tokens": items_tokens(10)}
    assert shape(verdicts) == verdicts_request(3, TERNARY)
    assert user(truths) == (
        "Documents:\nAll customers can return items within 30 days.\nShipping is free over 50 dollars."
    )
    assert verdicts.messages[0].content == "You check claims against a list of facts, using nothing but what it says."
    assert user(verdicts).startswith(
        "Facts:\n- Customers can return items within 30 days.\n- Shipping is free over 50 dollars.\n\n"
        "Claims:\n1. You can return them within 30 days.\n2. Shipping is free.\n3. Returns are easy.\n"
    )
    assert '"no" - the facts contradict the claim;' in user(verdicts)
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert result.raw_score == pytest.approx(2 / 3, rel=1e-12)
    assert result.details == {
        "truths": TRUTHS["truths"],
        "claims": CLAIMS["claims"],
        "claims_from": "extracted",
        "dropped": {"truths": 0, "claims": 0},
        "verdicts": [
            {"claim": "You can return them within 30 days.", "verdict": "yes"},
            {"claim": "Shipping is free.", "verdict": "no"},
            {"claim": "Returns are easy.", "verdict": "idk"},
        ],
        "counts": {"yes": 1, "no": 1, "idk": 1},
        "idk_is_faithful": True,
    }
    assert result.reason == (
        "2 of 3 claims are faithful to the facts extracted from the retrieval context (1 contradicted, 1 not covered)."
    )


def test_faithfulness_stricter_variant_counts_idk_against_the_output() -> None:
    judge = ScriptedBackend(json_values=[CLAIMS, VERDICTS])
    result = Faithfulness(claims="extracted", idk_is_faithful=False, include_reason=False).measure(CASE, judge)
    assert (result.score, result.passed) == (pytest.approx(1 / 3, rel=1e-12), False)
    assert result.details["idk_is_faithful"] is False
    assert result.reason == (
        "1 of 3 claims are faithful to the retrieval context (1 contradicted, 1 not covered, counted as unfaithful)."
    )


def test_truths_extraction_limit_bounds_the_truths() -> None:
    judge = ScriptedBackend(json_values=[TRUTHS, {"verdicts": ["yes", "yes"]}])
    Faithfulness(truths_extraction_limit=3, include_reason=False).measure(CASE, judge)
    truths, verdicts = json_requests(judge)
    assert shape(truths) == {"json_schema": items_schema("truths", 3), "max_tokens": items_tokens(3)}
    assert "at most 3, the most important first" in truths.messages[0].content
    assert shape(verdicts) == verdicts_request(2, TERNARY)  # the sentences, judged against the facts


def test_more_truths_than_the_limit_is_a_schema_violation() -> None:
    judge = ScriptedBackend(json_values=[TRUTHS])
    result = Faithfulness(truths_extraction_limit=1).measure(CASE, judge)
    assert result.error == "SchemaViolation: reply does not match the schema at truths: " + (
        "['Customers can return items within 30 days.', 'Shipping is free over 50 dollars.'] is too long"
    )


# --- hallucination -----------------------------------------------------------------------------------


def test_hallucination_judges_each_context_item() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["agrees", "contradicts"]}])
    result = Hallucination(include_reason=False).measure(CASE, judge)
    [request] = json_requests(judge)
    assert shape(request) == verdicts_request(2, ["agrees", "contradicts"])
    assert user(request).startswith(
        "Output:\nYou can return them within 30 days. Shipping is free.\n\n"
        "Known facts:\n1. Returns are accepted within 30 days.\n2. Shipping costs 5 dollars.\n"
    )
    assert result.score == 0.5
    assert result.raw_score == 0.5
    assert result.details == {
        "verdicts": [
            {"context": "Returns are accepted within 30 days.", "verdict": "agrees"},
            {"context": "Shipping costs 5 dollars.", "verdict": "contradicts"},
        ],
        "counts": {"agrees": 1, "contradicts": 1},
    }
    assert result.reason == "The output contradicts 1 of 2 context items."


def test_the_hallucination_verdict_prompt_in_full() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["agrees", "agrees"]}])
    Hallucination(include_reason=False).measure(CASE, judge)
    [request] = json_requests(judge)
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "You check whether an output contradicts any of a list of known facts."),
        (
            "user",
            (
                "Output:\nYou can return them within 30 days. Shipping is free.\n\n"
                "Known facts:\n1. Returns are accepted within 30 days.\n2. Shipping costs 5 dollars.\n\n"
                "Give one verdict per fact, in the same order:\n"
                '"contradicts" - the output says something this fact shows to be false;\n'
                '"agrees" - it does not, including when the output does not mention the fact.\n'
                "Write exactly 2 verdicts.\n"
                'Answer in JSON: {"verdicts": [one verdict per fact]}'
            ),
        ),
    ]


@pytest.mark.parametrize(
    ("verdicts", "threshold", "score", "passed"),
    [
        (["agrees", "agrees"], 0.5, 0.0, True),
        (["agrees", "contradicts"], 0.5, 0.5, True),  # at the threshold: passes
        (["contradicts", "contradicts"], 0.5, 1.0, False),
        (["agrees", "contradicts"], 0.4, 0.5, False),
        (["agrees", "agrees"], 0.0, 0.0, True),
    ],
)
def test_hallucination_passes_when_the_score_is_at_most_the_threshold(
    verdicts: list[str], threshold: float, score: float, passed: bool
) -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": verdicts}])
    result = Hallucination(threshold=threshold, include_reason=False).measure(CASE, judge)
    assert (result.score, result.passed, result.threshold) == (score, passed, threshold)


def test_hallucination_uses_context_not_retrieval_context() -> None:
    case = CASE.model_copy(update={"context": ["Returns are accepted within 30 days."]})
    judge = ScriptedBackend(json_values=[{"verdicts": ["agrees"]}])
    Hallucination(include_reason=False).measure(case, judge)
    assert shape(json_requests(judge)[0]) == verdicts_request(1, ["agrees", "contradicts"])
    assert "All customers" not in user(json_requests(judge)[0])


# --- contextual precision ------------------------------------------------------------------------------

THREE_NODES = CASE.model_copy(
    update={"retrieval_context": ["Shipping is free over 50 dollars.", "Returns: 30 days.", "Refunds are full."]}
)


def test_contextual_precision_judges_each_node_in_rank_order() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["no", "yes", "yes"]}])
    result = ContextualPrecision(include_reason=False).measure(THREE_NODES, judge)
    [request] = json_requests(judge)
    assert shape(request) == verdicts_request(3, YES_NO)
    assert user(request).startswith(
        "Question:\nWhat if these shoes don't fit?\n\n"
        "Expected answer:\nYou can return them within 30 days. The refund is full.\n\n"
        "Retrieved documents, best ranked first:\n"
        "1. Shipping is free over 50 dollars.\n2. Returns: 30 days.\n3. Refunds are full.\n"
    )
    assert result.score == pytest.approx(7 / 12, rel=1e-12)  # (1/2 + 2/3) / 2
    assert result.raw_score == pytest.approx(7 / 12, rel=1e-12)
    assert result.details == {
        "verdicts": [
            {"rank": 1, "node": "Shipping is free over 50 dollars.", "verdict": "no"},
            {"rank": 2, "node": "Returns: 30 days.", "verdict": "yes"},
            {"rank": 3, "node": "Refunds are full.", "verdict": "yes"},
        ],
        "counts": {"yes": 2, "no": 1},
    }
    assert result.reason == "2 of 3 retrieved nodes are useful, at ranks 2, 3."


@pytest.mark.parametrize(
    ("verdicts", "score"),
    [
        (["yes", "yes", "no"], 1.0),
        (["yes", "no", "yes"], 5 / 6),
        (["no", "no", "yes"], 1 / 3),
        (["no", "no", "no"], 0.0),
    ],
)
def test_contextual_precision_table_through_the_metric(verdicts: list[str], score: float) -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": verdicts}])
    result = ContextualPrecision(include_reason=False).measure(THREE_NODES, judge)
    assert result.score == pytest.approx(score, rel=1e-12)


def test_contextual_precision_without_a_useful_node_says_so() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["no", "no", "no"]}])
    result = ContextualPrecision(include_reason=False).measure(THREE_NODES, judge)
    assert (result.score, result.passed, result.reason) == (0.0, False, "0 of 3 retrieved nodes are useful.")


# --- contextual recall -------------------------------------------------------------------------------


def test_contextual_recall_judges_each_sentence_of_the_expected_output() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["yes", "no"]}])
    result = ContextualRecall(include_reason=False).measure(CASE, judge)
    [request] = json_requests(judge)
    assert shape(request) == verdicts_request(2, YES_NO)
    assert user(request).startswith(
        "Retrieved documents:\n- All customers can return items within 30 days.\n"
        "- Shipping is free over 50 dollars.\n\n"
        "Sentences of the expected answer:\n1. You can return them within 30 days.\n2. The refund is full.\n"
    )
    assert result.score == 0.5
    assert result.raw_score == 0.5
    assert result.details == {
        "sentences": ["You can return them within 30 days.", "The refund is full."],
        "verdicts": [
            {"sentence": "You can return them within 30 days.", "verdict": "yes"},
            {"sentence": "The refund is full.", "verdict": "no"},
        ],
        "counts": {"yes": 1, "no": 1},
    }
    assert result.reason == "The retrieval context supports 1 of 2 expected sentences."


def test_an_expected_output_of_white_space_is_a_missing_field() -> None:
    judge = ScriptedBackend()
    result = ContextualRecall().measure(CASE.model_copy(update={"expected_output": " \n "}), judge)
    assert result.error == "MetricInputError: expected_output has no sentences"
    assert judge.requests == []


# --- contextual relevancy -------------------------------------------------------------------------------


def test_contextual_relevancy_extracts_statements_per_node_then_judges_them_all() -> None:
    judge = ScriptedBackend(
        json_values=[
            {"statements": ["Customers can return items.", "Returns take 30 days."]},
            {"statements": ["Shipping is free over 50 dollars.", "Shipping is free over 50 dollars."]},
            {"verdicts": ["yes", "yes", "no"]},
        ]
    )
    result = ContextualRelevancy(include_reason=False).measure(CASE, judge)
    first, second, verdicts = json_requests(judge)
    assert (
        shape(first) == shape(second) == {"json_schema": items_schema("statements", 8), "max_tokens": items_tokens(8)}
    )
    assert user(first) == "Text:\nAll customers can return items within 30 days."
    assert user(second) == "Text:\nShipping is free over 50 dollars."
    assert shape(verdicts) == verdicts_request(3, YES_NO)
    assert user(verdicts).startswith(
        "Question:\nWhat if these shoes don't fit?\n\nStatements from the retrieved documents:\n"
        "1. Customers can return items.\n2. Returns take 30 days.\n3. Shipping is free over 50 dollars.\n"
    )
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert result.raw_score == pytest.approx(2 / 3, rel=1e-12)
    assert result.details == {
        "statements": [["Customers can return items.", "Returns take 30 days."], ["Shipping is free over 50 dollars."]],
        "dropped": 1,
        "verdicts": [
            {"node": 1, "statement": "Customers can return items.", "verdict": "yes"},
            {"node": 1, "statement": "Returns take 30 days.", "verdict": "yes"},
            {"node": 2, "statement": "Shipping is free over 50 dollars.", "verdict": "no"},
        ],
        "counts": {"yes": 2, "no": 1},
    }
    assert result.reason == "2 of 3 statements in the retrieval context are relevant to the input."


def test_max_statements_per_node_bounds_each_extraction() -> None:
    judge = ScriptedBackend(json_values=[{"statements": ["A."]}, {"statements": ["B."]}, {"verdicts": ["no", "no"]}])
    result = ContextualRelevancy(max_statements_per_node=2, include_reason=False).measure(CASE, judge)
    assert [r.json_schema for r in json_requests(judge)[:2]] == [items_schema("statements", 2)] * 2
    assert result.score == 0.0


# --- every RAG metric: one script each, with a perfect and an imperfect verdict -------------------------

#: kind -> (replies for a perfect score, replies for an imperfect one, the imperfect score).
SCRIPTS: dict[str, tuple[list[Any], list[Any], float]] = {
    "answer_relevancy": (
        [{"verdicts": ["yes", "idk"]}],
        [{"verdicts": ["yes", "no"]}],
        0.5,
    ),
    "faithfulness": ([{"verdicts": ["yes", "idk"]}], [{"verdicts": ["yes", "no"]}], 0.5),
    "hallucination": (
        [{"verdicts": ["agrees", "agrees"]}],
        [{"verdicts": ["agrees", "contradicts"]}],
        0.5,
    ),
    "contextual_precision": ([{"verdicts": ["yes", "no"]}], [{"verdicts": ["no", "yes"]}], 0.5),
    "contextual_recall": ([{"verdicts": ["yes", "yes"]}], [{"verdicts": ["yes", "no"]}], 0.5),
    "contextual_relevancy": (
        [{"statements": ["A."]}, {"statements": ["B."]}, {"verdicts": ["yes", "yes"]}],
        [{"statements": ["A."]}, {"statements": ["B."]}, {"verdicts": ["yes", "no"]}],
        0.5,
    ),
}
KINDS = list(SCRIPTS)
LOWER_IS_BETTER = {"hallucination"}
REQUIRED = {
    "answer_relevancy": ("input", "actual_output"),
    "faithfulness": ("actual_output", "retrieval_context"),
    "hallucination": ("actual_output", "context"),
    "contextual_precision": ("input", "expected_output", "retrieval_context"),
    "contextual_recall": ("expected_output", "retrieval_context"),
    "contextual_relevancy": ("input", "retrieval_context"),
}


def metric(kind: str, **options: Any) -> RagMetric:
    built = build_metric(kind, options)
    assert isinstance(built, RagMetric)
    return built


def test_the_six_kinds_are_registered() -> None:
    assert {cls.kind for cls in RAG_METRICS} == set(KINDS)
    assert set(KINDS) <= set(metric_names())
    classes = [AnswerRelevancy, Faithfulness, Hallucination, ContextualPrecision, ContextualRecall, ContextualRelevancy]
    assert [type(build_metric(kind)) for kind in KINDS] == classes


@pytest.mark.parametrize("kind", KINDS)
def test_defaults(kind: str) -> None:
    built = metric(kind)
    assert (built.threshold, built.include_reason, built.strict_mode, built.needs_judge) == (0.5, True, False, True)
    assert built.required_fields() == REQUIRED[kind]
    assert built.display_name == kind


MISSING = [
    (kind, field, empty)
    for kind, fields in REQUIRED.items()
    for field in fields
    for empty in ((None, []) if field in LIST_FIELDS else (None, ""))
]


@pytest.mark.parametrize(("kind", "field", "empty"), MISSING)
def test_a_missing_required_field_is_an_error_result_without_a_judge_call(kind: str, field: str, empty: Any) -> None:
    judge = ScriptedBackend()
    result = metric(kind).measure(CASE.model_copy(update={field: empty}), judge)
    assert (result.score, result.passed, result.details) == (None, None, {})
    state = "missing" if empty is None else "empty"  # absent, or there and empty: different fixes
    assert result.error == f"MetricInputError: metric '{kind}' needs field '{field}', which is {state}"
    assert judge.requests == []


@pytest.mark.parametrize("kind", KINDS)
def test_without_a_judge_is_an_error_result(kind: str) -> None:
    result = metric(kind).measure(CASE)
    assert result.error == f"BackendError: metric '{kind}' needs a judge backend"


@pytest.mark.parametrize("kind", KINDS)
def test_perfect_and_imperfect_scores(kind: str) -> None:
    perfect, imperfect, score = SCRIPTS[kind]
    best = 0.0 if kind in LOWER_IS_BETTER else 1.0
    good = metric(kind, include_reason=False).measure(CASE, ScriptedBackend(json_values=list(perfect)))
    bad = metric(kind, include_reason=False).measure(CASE, ScriptedBackend(json_values=list(imperfect)))
    assert (good.score, good.passed, good.raw_score) == (best, True, best)
    assert (bad.score, bad.raw_score) == (score, score)


# --- include_reason ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_reason_is_asked_for_last_and_told_the_score(kind: str) -> None:
    _, imperfect, score = SCRIPTS[kind]
    judge = ScriptedBackend(json_values=[*imperfect, {"reason": "  One verdict went against it. "}])
    result = metric(kind).measure(CASE, judge)
    *scoring, reason_request = json_requests(judge)
    assert len(scoring) == len(imperfect)
    assert all(r.json_schema != REASON_SCHEMA for r in scoring)
    assert (reason_request.json_schema, reason_request.max_tokens) == (REASON_SCHEMA, 512)
    assert f"score is {score:g}, on a scale from 0 to 1" in user(reason_request)
    assert (result.reason, result.score, result.error) == ("One verdict went against it.", score, None)
    assert "reason_error" not in result.details


@pytest.mark.parametrize("kind", KINDS)
def test_the_reason_is_a_follow_up_to_the_verdicts_request(kind: str) -> None:
    # The verdicts conversation, the judge's reply as it wrote it, then only the question: a judge that
    # keeps its last prompt's state reads the question, not the case again.
    _, imperfect, _ = SCRIPTS[kind]
    judge = ScriptedBackend(json_values=[*imperfect, {"reason": "r"}])
    metric(kind).measure(CASE, judge)
    *_, verdicts, reason = json_requests(judge)
    n = len(verdicts.messages)
    assert reason.messages[:n] == verdicts.messages
    assert reason.messages[n] == Message(role="assistant", content=json.dumps(imperfect[-1]))
    [question] = reason.messages[n + 1 :]
    assert question.role == "user"
    listed = "; ".join(f"{k}. {v}" for k, v in enumerate(imperfect[-1]["verdicts"], start=1))
    assert question.content.startswith("Your verdicts, ") and f": {listed}.\nWith them, " in question.content
    for text in (CASE.input, CASE.actual_output, CASE.expected_output, *CASE.context, *CASE.retrieval_context):
        assert text not in question.content  # the case is in the conversation already


def test_the_reason_question_of_answer_relevancy() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["yes", "no"]}, {"reason": "r"}])
    AnswerRelevancy().measure(CASE, judge)
    assert user(json_requests(judge)[-1]) == (
        "Your verdicts, statement by statement: 1. yes; 2. no.\n"
        "With them, the answer's relevancy score is 0.5, on a scale from 0 to 1: the share of its statements that "
        "are not off topic. Say why in one or two sentences, naming the off-topic statements if there are any.\n"
        'Answer in JSON: {"reason": your explanation}'
    )


@pytest.mark.parametrize(("options", "against"), [({}, "context does"), ({"truths_extraction_limit": 4}, "facts do")])
@pytest.mark.parametrize(("idk_is_faithful", "stricter"), [(True, ""), (False, " and {} support")])
def test_the_reason_question_of_faithfulness_says_what_the_score_counts(
    options: dict[str, Any], against: str, idk_is_faithful: bool, stricter: str
) -> None:
    truths = [{"truths": ["T."]}] if options else []
    judge = ScriptedBackend(json_values=[*truths, {"verdicts": ["yes", "idk"]}, {"reason": "r"}])
    Faithfulness(idk_is_faithful=idk_is_faithful, **options).measure(CASE, judge)
    verb = against.split()[-1]
    assert f"the share of its claims that the {against} not contradict{stricter.format(verb)}. Say why" in user(
        json_requests(judge)[-1]
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (SchemaViolation("reply is not JSON"), "SchemaViolation: reply is not JSON"),
        (TruncatedOutput("generation stopped by 'length'"), "TruncatedOutput: generation stopped by 'length'"),
        ({"reason": "   "}, "BackendError: the judge wrote a blank reason"),
    ],
)
def test_a_failed_reason_keeps_the_score_and_says_why(kind: str, failure: Any, error: str) -> None:
    _, imperfect, score = SCRIPTS[kind]
    judge = ScriptedBackend(json_values=[*imperfect, failure])
    result = metric(kind).measure(CASE, judge)
    assert (result.error, result.score) == (None, score)
    assert result.details["reason_error"] == error
    without = metric(kind, include_reason=False).measure(CASE, ScriptedBackend(json_values=list(imperfect)))
    assert result.reason == without.reason  # the summary of the counts


@pytest.mark.parametrize("kind", KINDS)
def test_without_include_reason_there_is_no_reason_request(kind: str) -> None:
    _, imperfect, _ = SCRIPTS[kind]
    judge = ScriptedBackend(json_values=list(imperfect))
    metric(kind, include_reason=False).measure(CASE, judge)
    assert len(judge.requests) == len(imperfect)
    assert all(r.json_schema != REASON_SCHEMA for r in json_requests(judge))


# --- strict_mode ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_strict_mode_sets_the_threshold(kind: str) -> None:
    best = 0.0 if kind in LOWER_IS_BETTER else 1.0
    assert metric(kind, strict_mode=True, threshold=0.3).threshold == best
    assert metric(kind, strict_mode="false", threshold=0.3).threshold == 0.3


@pytest.mark.parametrize("kind", KINDS)
def test_strict_mode_is_binary(kind: str) -> None:
    perfect, imperfect, score = SCRIPTS[kind]
    best, worst = (0.0, 1.0) if kind in LOWER_IS_BETTER else (1.0, 0.0)
    strict = metric(kind, strict_mode=True, include_reason=False)
    good = strict.measure(CASE, ScriptedBackend(json_values=list(perfect)))
    bad = strict.measure(CASE, ScriptedBackend(json_values=list(imperfect)))
    assert (good.score, good.passed, good.threshold) == (best, True, best)
    assert (bad.score, bad.passed, bad.raw_score) == (worst, False, score)


def test_strict_reason_is_told_the_formulas_score() -> None:
    _, imperfect, _ = SCRIPTS["contextual_recall"]
    judge = ScriptedBackend(json_values=[*imperfect, {"reason": "r"}])
    result = metric("contextual_recall", strict_mode=True).measure(CASE, judge)
    assert result.score == 0.0
    assert "contextual recall score is 0.5, on a scale" in user(json_requests(judge)[-1])


# --- the schema makes a miscount or a stray verdict an error, never a score -----------------------------


@pytest.mark.parametrize(
    ("verdicts", "where"),
    [
        (["yes"], "reply does not match the schema at verdicts: ['yes'] is too short"),
        (["yes", "no", "yes"], "reply does not match the schema at verdicts: ['yes', 'no', 'yes'] is too long"),
        (["yes", "yes."], "reply does not match the schema at verdicts/1: 'yes.' is not one of ['yes', 'no']"),
    ],
)
def test_a_wrong_verdict_list_is_a_schema_violation(verdicts: list[str], where: str) -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": verdicts}])
    result = ContextualRecall().measure(CASE, judge)
    assert (result.score, result.error) == (None, f"SchemaViolation: {where}")
    assert len(judge.requests) == 1  # no reason for a score that does not exist


@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_reply_is_an_error_result(kind: str) -> None:
    judge = ScriptedBackend(json_values=[TruncatedOutput("generation stopped by 'length' after 44 tokens")])
    result = metric(kind).measure(CASE, judge)
    assert (result.score, result.passed) == (None, None)
    assert result.error == "TruncatedOutput: generation stopped by 'length' after 44 tokens"


# --- prompt overrides ---------------------------------------------------------------------------------

PROMPT_OPTIONS = {
    "answer_relevancy": ("statements_prompt", "verdicts_prompt", "reason_prompt"),
    "faithfulness": ("truths_prompt", "claims_prompt", "verdicts_prompt", "reason_prompt"),
    "hallucination": ("verdicts_prompt", "reason_prompt"),
    "contextual_precision": ("verdicts_prompt", "reason_prompt"),
    "contextual_recall": ("verdicts_prompt", "reason_prompt"),
    "contextual_relevancy": ("statements_prompt", "verdicts_prompt", "reason_prompt"),
}


#: The options that make a metric use every one of its prompts, and the replies of the extra steps.
EVERY_STEP: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "answer_relevancy": ({"statements": "extracted"}, [{"statements": ["A.", "B."]}]),
    "faithfulness": (
        {"claims": "extracted", "truths_extraction_limit": 4},
        [{"truths": ["T."]}, {"claims": ["A.", "B."]}],
    ),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_prompt_can_be_overridden(kind: str, tmp_path: Path) -> None:
    options, extracted = EVERY_STEP.get(kind, ({}, []))
    options = dict(options)
    for option in PROMPT_OPTIONS[kind]:
        path = tmp_path / f"{option}.txt"
        system = "" if option == "reason_prompt" else "[[system]]\nMine.\n"  # a follow-up has user messages only
        path.write_text(f"{system}[[user]]\nMy {option}.\n", encoding="utf-8")
        options[option] = path
    _, imperfect, score = SCRIPTS[kind]
    judge = ScriptedBackend(json_values=[*extracted, *imperfect, {"reason": "r"}])
    result = metric(kind, **options).measure(CASE, judge)
    assert result.score == score
    used = [user(r).removeprefix("My ").removesuffix("_prompt.") for r in json_requests(judge)]
    steps = [o.removesuffix("_prompt") for o in PROMPT_OPTIONS[kind]]
    assert set(used) == set(steps)
    assert used[-1] == "reason"


def test_an_override_with_an_unknown_variable_is_an_error_result(tmp_path: Path) -> None:
    path = tmp_path / "verdicts.txt"
    path.write_text("Judge {{ answer }}.\n", encoding="utf-8")
    judge = ScriptedBackend()
    result = Hallucination(verdicts_prompt=path).measure(CASE, judge)
    assert result.error == f"PromptError: {path}: 'answer' is undefined"
    assert judge.requests == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_metric_judges_many_cases_and_keeps_nothing(kind: str) -> None:
    perfect, imperfect, score = SCRIPTS[kind]
    built = metric(kind, include_reason=False)
    before = built.model_dump()
    judge = ScriptedBackend(json_values=[*perfect, *imperfect])
    scores = [built.measure(CASE, judge).score for _ in range(2)]
    assert scores == [0.0 if kind in LOWER_IS_BETTER else 1.0, score]
    assert built.model_dump() == before


# --- the shipped example -------------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "rag"


def test_the_example_config_runs_the_six_metrics_on_the_example_set() -> None:
    config = RunConfig.load(EXAMPLES / "eval.toml")
    metrics = config.build_metrics()
    assert [m.kind for m in metrics] == KINDS
    assert isinstance(metrics[1], Faithfulness) and metrics[1].claims == "sentences"
    assert config.dataset.path == EXAMPLES / "rag.jsonl"
    dataset = Dataset.load(EXAMPLES / "rag.jsonl")
    assert len(dataset.cases) == 8
    for case in dataset.cases:
        for built in metrics:
            built.check_case(case)  # every case has every field every metric needs


def test_a_prompt_override_in_a_config_file_is_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "verdicts.txt").write_text("Mine: {{ actual_output }}\n", encoding="utf-8")
    (tmp_path / "eval.toml").write_text(
        '[[metrics]]\nmetric = "hallucination"\nverdicts_prompt = "prompts/verdicts.txt"\ninclude_reason = false\n',
        encoding="utf-8",
    )
    [built] = RunConfig.load(tmp_path / "eval.toml").build_metrics()
    judge = ScriptedBackend(json_values=[{"verdicts": ["agrees", "agrees"]}])
    assert built.measure(CASE, judge).score == 0.0
    assert user(json_requests(judge)[0]) == "Mine: You can return them within 30 days. Shipping is free."
