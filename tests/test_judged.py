"""The judged-metric base on a small metric of its own: strict mode, the reason step, its failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripted import ScriptedBackend

from localeval.backends.base import Backend, JsonRequest, Message
from localeval.data.case import TestCase
from localeval.errors import SchemaViolation
from localeval.metrics.judged import (
    REASON_SCHEMA,
    Exchange,
    JudgedMetric,
    Judgement,
    ask,
    format_score,
    strict_requested,
)
from localeval.prompts import PromptTemplate

COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"contradicted": {"type": "integer", "minimum": 0}},
    "required": ["contradicted"],
    "additionalProperties": False,
}
CASE = TestCase(input="q", actual_output="It opens at ten.", context=["It opens at nine.", "It is closed on Monday."])
NOTHING_TO_JUDGE = CASE.model_copy(update={"context": None})


class Contradicted(JudgedMetric):
    """The share of context items the output contradicts, as the judge counts them. Lower is better.

    With no context there is nothing to judge: the score is 0.0 and no judge call is made.
    """

    kind = "test_contradicted"
    prompt_folder = "test_contradicted"  # not shipped: the tests give reason_prompt
    lower_is_better = True

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        context = case.context or []
        if not context:
            return Judgement(score=0.0, summary="Nothing to judge.", reason_variables={"items": 0})
        prompt = PromptTemplate.from_text(
            "[[system]]\nCount contradictions.\n[[user]]\n{{ output }}\n{{ context }}\n"
        ).render(output=case.actual_output, context=context)
        reply = ask(judge, prompt, COUNT_SCHEMA, 16)
        contradicted = min(reply.value["contradicted"], len(context))
        return Judgement(
            score=contradicted / len(context),
            summary=f"{contradicted} of {len(context)} contradicted.",
            details={"contradicted": contradicted},
            conversation=Exchange(prompt, reply.text),
            reason_variables={"items": len(context)},
        )


@pytest.fixture
def reason_prompt(tmp_path: Path) -> Path:
    path = tmp_path / "reason.txt"
    path.write_text("[[user]]\nWhy {{ score }} of {{ items }} items?\n", encoding="utf-8")
    return path


def test_the_reason_continues_the_scoring_conversation(reason_prompt: Path) -> None:
    judge = ScriptedBackend(json_values=[{"contradicted": 1}, {"reason": " The hours differ. "}])
    result = Contradicted(reason_prompt=reason_prompt).measure(CASE, judge)
    scored, reason = judge.requests
    assert isinstance(reason, JsonRequest)
    assert reason.messages == (
        *scored.messages,
        Message(role="assistant", content='{"contradicted": 1}'),
        Message(role="user", content="Why 0.5 of 2 items?"),
    )
    assert (reason.json_schema, reason.max_tokens) == (REASON_SCHEMA, 512)
    assert (result.score, result.passed, result.reason) == (0.5, True, "The hours differ.")  # 0.5 <= 0.5
    assert result.raw_score == 0.5
    assert result.details == {"contradicted": 1}


def test_without_a_scoring_call_the_reason_is_a_fresh_request(reason_prompt: Path) -> None:
    judge = ScriptedBackend(json_values=[{"reason": "Nothing was judged."}])
    result = Contradicted(reason_prompt=reason_prompt).measure(NOTHING_TO_JUDGE, judge)
    [reason] = judge.requests
    assert reason.messages == (Message(role="user", content="Why 0 of 0 items?"),)
    assert (result.score, result.passed, result.reason) == (0.0, True, "Nothing was judged.")


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (SchemaViolation("reply is not JSON"), "SchemaViolation: reply is not JSON"),
        ({"reason": " "}, "BackendError: the judge wrote a blank reason"),
    ],
)
def test_a_failed_reason_leaves_the_score_and_says_why(reason_prompt: Path, failure: Any, error: str) -> None:
    judge = ScriptedBackend(json_values=[{"contradicted": 1}, failure])
    result = Contradicted(reason_prompt=reason_prompt).measure(CASE, judge)
    assert (result.error, result.score, result.reason) == (None, 0.5, "1 of 2 contradicted.")
    assert result.details["reason_error"] == error


def test_a_reason_prompt_that_does_not_render_is_a_reason_error(tmp_path: Path) -> None:
    path = tmp_path / "reason.txt"
    path.write_text("[[user]]\n{{ unknown }}\n", encoding="utf-8")
    judge = ScriptedBackend(json_values=[{"contradicted": 0}])
    result = Contradicted(reason_prompt=path).measure(CASE, judge)
    assert (result.error, result.score) == (None, 0.0)
    assert result.details["reason_error"] == f"PromptError: {path}: 'unknown' is undefined"
    assert len(judge.requests) == 1


def test_without_include_reason_the_reason_is_the_summary() -> None:
    judge = ScriptedBackend(json_values=[{"contradicted": 2}])
    result = Contradicted(include_reason=False).measure(CASE, judge)
    assert (result.score, result.reason, len(judge.requests)) == (1.0, "2 of 2 contradicted.", 1)


def test_strict_mode_of_a_lower_is_better_metric_mirrors_the_perfect_score() -> None:
    strict = Contradicted(strict_mode=True, threshold=0.3, include_reason=False)
    assert strict.threshold == 0.0
    scores = []
    for count in (0, 1, 2):
        result = strict.measure(CASE, ScriptedBackend(json_values=[{"contradicted": count}]))
        scores.append((result.score, result.passed, result.raw_score))
    assert scores == [(0.0, True, 0.0), (1.0, False, 0.5), (1.0, False, 1.0)]


def test_strict_mode_of_a_higher_is_better_metric_needs_a_perfect_score() -> None:
    class Agreed(Contradicted):
        kind = "test_agreed"
        lower_is_better = False

    strict = Agreed(strict_mode="yes", threshold=0.3, include_reason=False)
    assert strict.threshold == 1.0
    assert [strict.final_score(raw) for raw in (1.0, 0.99, 0.0)] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(("options", "on"), [({"strict_mode": True}, True), ({"strict_mode": "false"}, False),
                                             ({"strict_mode": "maybe"}, False), ({}, False), (None, False)])
def test_strict_requested_reads_the_option_as_pydantic_will(options: Any, on: bool) -> None:
    assert strict_requested(options) is on


def test_an_unreadable_strict_mode_is_a_validation_error_and_changes_nothing() -> None:
    with pytest.raises(ValueError, match="strict_mode"):
        Contradicted(strict_mode="maybe", threshold=0.3)


@pytest.mark.parametrize(("score", "shown"), [(0.5, "0.5"), (1.0, "1"), (1 / 3, "0.33"), (0.0, "0"), (3.25, "3.25")])
def test_format_score(score: float, shown: str) -> None:
    assert format_score(score) == shown


def test_without_a_judge_it_is_an_error_result() -> None:
    assert Contradicted().measure(CASE).error == "BackendError: metric 'test_contradicted' needs a judge backend"
