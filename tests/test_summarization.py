"""summarization against a scripted judge: the five requests, the prompts, alignment, coverage, the min."""

from __future__ import annotations

import pytest
from scripted import json_requests, request_shape

from localeval.data.case import TestCase
from localeval.errors import ConfigError
from localeval.metrics import Summarization, build_metric
from localeval.metrics.items import items_schema, items_tokens, verdicts_schema, verdicts_tokens
from localeval.metrics.summarization import coverage_score
from localeval.testing import ScriptedJudge

SOURCE = (
    "The library will close for renovation from June to September. Books can be returned at the town hall. "
    "The reopened library will have a children's wing."
)
CASE = TestCase(input=SOURCE, actual_output="The library closes in June for renovation. It will reopen in 2030.")
QUESTIONS = ["Will the library close?", "Can books be returned at the town hall?", "Will there be a children's wing?"]
TERNARY = ["yes", "no", "idk"]


@pytest.mark.parametrize(
    ("source", "summary", "score"),
    [
        (["yes", "yes", "yes"], ["yes", "idk", "no"], 1 / 3),
        (["yes", "no", "yes"], ["yes", "yes", "yes"], 1.0),  # a question the source says "no" to is not counted
        (["yes", "idk"], ["no", "yes"], 0.0),
        (["no", "idk"], ["yes", "yes"], 0.0),  # the source answers none "yes": nothing shown covered
        ([], [], 0.0),
    ],
)
def test_coverage_score(source: list[str], summary: list[str], score: float) -> None:
    assert coverage_score(source, summary) == pytest.approx(score, rel=1e-12)


def test_coverage_needs_as_many_answers_from_each_side() -> None:
    with pytest.raises(ValueError, match="3 answers from the source, 2 from the summary"):
        coverage_score(["yes"] * 3, ["yes"] * 2)


def test_questions_answers_then_alignment_and_the_score_is_the_smaller() -> None:
    judge = ScriptedJudge(
        json_values=[
            {"questions": QUESTIONS},
            {"verdicts": ["yes", "yes", "yes"]},  # from the source
            {"verdicts": ["yes", "idk", "idk"]},  # from the summary
            {"verdicts": ["yes", "idk"]},  # the summary's two sentences against the source
            {"reason": "It misses two points and adds a date."},
        ]
    )
    result = Summarization(questions=3).measure(CASE, judge)
    questions, from_source, from_summary, alignment, reason = json_requests(judge)

    assert request_shape(questions) == (items_schema("questions", 3, min_items=3), items_tokens(3))
    assert "exactly 3 short, distinct questions" in questions.messages[0].content
    assert questions.messages[-1].content == f"Text:\n{SOURCE}"
    assert [request_shape(r) for r in (from_source, from_summary)] == [(verdicts_schema(3, TERNARY), verdicts_tokens(3))] * 2
    assert from_source.messages[-1].content.startswith(f"Text:\n{SOURCE}\n\nQuestions:\n1. Will the library close?\n")
    assert from_summary.messages[-1].content.startswith(f"Text:\n{CASE.actual_output}\n\nQuestions:\n")
    assert request_shape(alignment) == (verdicts_schema(2, TERNARY), verdicts_tokens(2))
    assert alignment.messages[-1].content.startswith(
        f"Text:\n{SOURCE}\n\nClaims of the summary:\n1. The library closes in June for renovation.\n"
        "2. It will reopen in 2030.\n"
    )
    assert reason.messages[: len(alignment.messages)] == alignment.messages
    assert reason.messages[-1].content.startswith(
        "Your verdicts, claim by claim: 1. yes; 2. idk. Alignment, the share of the summary's claims the text "
        "supports: 0.5.\nOf 3 questions about the text's main points, the text answers \"yes\" to 3, and the "
        "summary to 1 of those. Coverage: 0.33.\nThe summarization score is the smaller of the two: 0.33,"
    )

    assert (result.error, result.score, result.passed) == (None, pytest.approx(1 / 3, rel=1e-12), False)
    assert result.reason == "It misses two points and adds a date."
    details = result.details
    assert (details["alignment_score"], details["coverage_score"]) == (0.5, pytest.approx(1 / 3, rel=1e-12))
    assert details["questions"] == [
        {"question": QUESTIONS[0], "source": "yes", "summary": "yes"},
        {"question": QUESTIONS[1], "source": "yes", "summary": "idk"},
        {"question": QUESTIONS[2], "source": "yes", "summary": "idk"},
    ]
    assert details["verdicts"] == [
        {"claim": "The library closes in June for renovation.", "verdict": "yes"},
        {"claim": "It will reopen in 2030.", "verdict": "idk"},
    ]
    assert details["counts"] == {"yes": 1, "no": 0, "idk": 1}
    assert (details["questions_from"], details["claims_from"], details["dropped"]) == (
        "judge", "sentences", {"questions": 0, "claims": 0}
    )


def test_idk_is_aligned_counts_only_contradictions_against_alignment() -> None:
    replies = [{"verdicts": ["yes", "yes"]}, {"verdicts": ["yes", "yes"]}, {"verdicts": ["yes", "idk"]}]
    given = ["Will the library close?", "Will there be a children's wing?"]
    strict = Summarization(assessment_questions=given, include_reason=False).measure(CASE, ScriptedJudge(replies))
    lenient = Summarization(assessment_questions=given, idk_is_aligned=True, include_reason=False).measure(
        CASE, ScriptedJudge(replies)
    )
    assert (strict.details["alignment_score"], strict.score) == (0.5, 0.5)
    assert (lenient.details["alignment_score"], lenient.score) == (1.0, 1.0)


def test_given_questions_skip_the_question_request_and_claims_can_be_extracted() -> None:
    judge = ScriptedJudge(
        json_values=[
            {"verdicts": ["yes", "yes"]},
            {"verdicts": ["yes", "no"]},
            {"claims": ["The library closes in June.", "It closes for renovation.", "It reopens in 2030."]},
            {"verdicts": ["yes", "yes", "no"]},
        ]
    )
    metric = Summarization(
        assessment_questions=QUESTIONS[:2], claims="extracted", max_claims=4, include_reason=False
    )
    result = metric.measure(CASE, judge)
    from_source, _, claims, alignment = json_requests(judge)
    assert "1. Will the library close?\n2. Can books be returned at the town hall?\n" in from_source.messages[-1].content
    assert request_shape(claims) == (items_schema("claims", 4), items_tokens(4))
    assert request_shape(alignment) == (verdicts_schema(3, TERNARY), verdicts_tokens(3))
    assert (result.details["alignment_score"], result.details["coverage_score"]) == (pytest.approx(2 / 3), 0.5)
    assert result.score == 0.5
    assert result.details["questions_from"] == "given"


def test_repeated_questions_are_dropped_before_answering() -> None:
    judge = ScriptedJudge(
        json_values=[
            {"questions": ["Will it close?", "Will it close?", "Is there a wing?"]},
            {"verdicts": ["yes", "yes"]},
            {"verdicts": ["yes", "yes"]},
            {"verdicts": ["yes", "yes"]},
        ]
    )
    result = Summarization(questions=3, include_reason=False).measure(CASE, judge)
    assert request_shape(json_requests(judge)[1]) == (verdicts_schema(2, TERNARY), verdicts_tokens(2))
    assert (result.score, result.details["dropped"]["questions"]) == (1.0, 1)


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"summarization.questions: Input should be less than or equal to 20"):
        build_metric("summarization", {"questions": 21})
    with pytest.raises(ConfigError, match=r"summarization.assessment_questions: List should have at least 1 item"):
        build_metric("summarization", {"assessment_questions": []})
