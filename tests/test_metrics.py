"""Metrics: ExactMatch exactly, GEval against a scripted judge, and building metrics by name."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError
from scripted import ScriptedBackend

from localeval.backends.base import DistributionRequest, JsonRequest, Message
from localeval.data.case import TestCase
from localeval.errors import ConfigError, SchemaViolation, UnknownMetric
from localeval.metrics import ExactMatch, GEval, build_metric, metric_names, register_metric
from localeval.metrics.geval import MAX_STEPS, STEPS_SCHEMA

CASE = TestCase(input="What is 2+2?", actual_output="4", expected_output="4")

#: p = .1 .2 .3 .2 .2 on the scores 1..5: expected 3.2, on [0, 1] (3.2 - 1) / 4 = 0.55.
LOGPROBS = {str(s): math.log(p) for s, p in zip(range(1, 6), (0.1, 0.2, 0.3, 0.2, 0.2))}
STEPS = ("Check the arithmetic.", "Penalize extra text.")


# --- ExactMatch ------------------------------------------------------------------------


def exact(actual: str, expected: str, **options: object) -> tuple[float | None, bool | None]:
    result = ExactMatch(**options).measure(  # type: ignore[arg-type]
        TestCase(input="q", actual_output=actual, expected_output=expected)
    )
    assert result.error is None
    return result.score, result.passed


def test_exact_match_strips_both_sides() -> None:
    assert exact("  Paris \n", "\tParis") == (1.0, True)


def test_exact_match_is_case_sensitive_by_default() -> None:
    assert exact("paris", "Paris") == (0.0, False)


def test_exact_match_ignore_case() -> None:
    assert exact("PARIS", "paris", ignore_case=True) == (1.0, True)
    assert exact("Straße", "STRASSE", ignore_case=True) == (1.0, True)  # casefold, not lower


def test_exact_match_keeps_inner_whitespace_by_default() -> None:
    assert exact("New  York", "New York") == (0.0, False)


def test_exact_match_normalize_whitespace() -> None:
    assert exact("New  \n York", "New York", normalize_whitespace=True) == (1.0, True)


def test_exact_match_evidence_names_the_first_difference() -> None:
    result = ExactMatch().measure(TestCase(input="q", actual_output=" abcXef", expected_output="abcdef"))
    assert result.details == {"first_difference": 3, "actual": "abcXef", "expected": "abcdef"}
    assert result.reason == "The outputs differ at character 3: 'Xef' where 'def' was expected."


def test_exact_match_first_difference_of_a_prefix_is_its_length() -> None:
    result = ExactMatch().measure(TestCase(input="q", actual_output="abc", expected_output="abcd"))
    assert result.details["first_difference"] == 3


def test_exact_match_result_fields() -> None:
    result = ExactMatch().measure(CASE)
    assert result.metric == "exact_match"
    assert result.kind == "exact_match"
    assert result.threshold == 1.0
    assert (result.score, result.passed, result.error) == (1.0, True, None)
    assert result.reason == "The actual output matches the expected output exactly."
    assert result.details == {}
    assert result.duration_s >= 0.0


def test_exact_match_threshold_defaults_to_one() -> None:
    assert ExactMatch().threshold == 1.0
    assert ExactMatch(threshold=0.0).measure(
        TestCase(input="q", actual_output="a", expected_output="b")
    ).passed is True


def test_exact_match_without_expected_output_is_an_error_result() -> None:
    result = ExactMatch().measure(TestCase(input="q", actual_output="4"))
    assert result.score is None
    assert result.passed is None
    assert result.errored
    assert result.error == "MetricInputError: metric 'exact_match' needs field 'expected_output', which is missing"


def test_an_empty_actual_output_is_an_error_result() -> None:
    result = ExactMatch(name="em").measure(TestCase(input="q", actual_output="", expected_output="x"))
    assert result.error == "MetricInputError: metric 'em' needs field 'actual_output', which is empty"
    assert result.metric == "em"
    absent = ExactMatch(name="em").measure(TestCase(input="q", expected_output="x"))
    assert absent.error == "MetricInputError: metric 'em' needs field 'actual_output', which is missing"


def test_metrics_are_frozen() -> None:
    metric = ExactMatch()
    with pytest.raises(ValidationError, match="frozen"):
        metric.ignore_case = True  # type: ignore[misc]
    geval = GEval(evaluation_steps=STEPS)
    with pytest.raises(ValidationError, match="frozen"):
        geval.criteria = "x"  # type: ignore[misc]


def test_a_metric_keeps_nothing_of_the_case() -> None:
    metric = ExactMatch()
    before = metric.model_dump()
    metric.measure(TestCase(input="q", actual_output="a", expected_output="b"))
    assert metric.model_dump() == before


# --- GEval with given steps ------------------------------------------------------------


def test_geval_asks_for_one_distribution_over_the_scores() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    result = GEval(criteria="Correct.", evaluation_steps=STEPS, include_reason=False).measure(CASE, judge)
    assert result.error is None
    [request] = judge.requests
    assert isinstance(request, DistributionRequest)
    assert request.candidates == ("1", "2", "3", "4", "5")
    assert request.prefill == "Score: "
    assert [m.role for m in request.messages] == ["system", "user"]


def test_geval_score_is_the_expected_value_scaled() -> None:
    result = GEval(criteria="Correct.", evaluation_steps=STEPS, include_reason=False).measure(
        CASE, ScriptedBackend(logprobs=[LOGPROBS])
    )
    assert result.score == pytest.approx(0.55, rel=1e-12)
    assert result.details["expected_score"] == pytest.approx(3.2, rel=1e-12)
    assert result.details["covered_mass"] == pytest.approx(1.0, rel=1e-12)
    assert result.details["method"] == "logprobs"
    assert result.details["score_range"] == [1, 5]
    assert result.details["distribution"] == {
        s: pytest.approx(p, rel=1e-12) for s, p in zip("12345", (0.1, 0.2, 0.3, 0.2, 0.2))
    }
    assert result.details["evaluation_steps"] == list(STEPS)
    assert result.details["steps_source"] == "given"
    assert result.reason == (
        "Expected score 3.20 on 1-5 (the valid scores covered 100% of the judge's probability)."
    )


def test_geval_reports_the_covered_mass() -> None:
    half = {s: lp + math.log(0.5) for s, lp in LOGPROBS.items()}
    result = GEval(evaluation_steps=STEPS, include_reason=False).measure(CASE, ScriptedBackend(logprobs=[half]))
    assert result.details["covered_mass"] == pytest.approx(0.5, rel=1e-12)
    assert result.score == pytest.approx(0.55, rel=1e-12)  # renormalized: the same score
    assert "covered 50%" in result.reason


def test_geval_with_a_custom_score_range() -> None:
    logprobs = {"0": math.log(0.1), "1": math.log(0.2), "2": math.log(0.3), "3": math.log(0.4)}
    judge = ScriptedBackend(logprobs=[logprobs])
    result = GEval(evaluation_steps=STEPS, score_range=(0, 3), include_reason=False).measure(CASE, judge)
    [request] = judge.requests
    assert isinstance(request, DistributionRequest)
    assert request.candidates == ("0", "1", "2", "3")
    assert result.details["expected_score"] == pytest.approx(2.0, rel=1e-12)  # .2 + .6 + 1.2
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert "on a scale from 0 (worst) to 3 (best)" in request.messages[-1].content


def test_geval_prompt_shows_the_case_fields_with_labels() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    GEval(criteria="Correct.", evaluation_steps=STEPS, include_reason=False).measure(
        TestCase(input="What is 2+2?", actual_output="four", expected_output="4"), judge
    )
    user = judge.requests[0].messages[-1].content
    assert user.startswith("Evaluation criteria:\nCorrect.\n\nEvaluation steps:\n")  # criteria first
    assert "---\nInput:\nWhat is 2+2?\n\nActual Output:\nfour\n\nFollowing the steps" in user
    assert "Expected Output" not in user  # only the evaluation params are shown
    assert "Evaluation criteria:\nCorrect.\n" in user
    assert "1. Check the arithmetic.\n2. Penalize extra text.\n" in user
    assert "grade the Input and Actual Output above" in user


def test_geval_prompt_shows_list_fields_as_items() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    case = TestCase(input="q", actual_output="a", retrieval_context=["doc one", "doc two"])
    GEval(
        evaluation_steps=STEPS, evaluation_params=("actual_output", "retrieval_context"), include_reason=False
    ).measure(case, judge)
    user = judge.requests[0].messages[-1].content
    assert "---\nActual Output:\na\n\nRetrieval Context:\n- doc one\n- doc two\n" in user
    assert "grade the Actual Output and Retrieval Context above" in user


def test_geval_without_criteria_leaves_the_criteria_out_of_the_prompt() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    GEval(evaluation_steps=STEPS, include_reason=False).measure(CASE, judge)
    user = judge.requests[0].messages[-1].content
    assert "criteria" not in user
    assert user.startswith("Evaluation steps:\n1. Check the arithmetic.\n2. Penalize extra text.\n\n---\nInput:")


def test_geval_uses_an_override_score_prompt(tmp_path: Path) -> None:
    prompt = tmp_path / "score.txt"
    prompt.write_text(
        "[[user]]\n{{ fields['Actual Output'] }} {{ low }}-{{ high }}\n[[assistant]]\nRating: \n",
        encoding="utf-8",
    )
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    GEval(evaluation_steps=STEPS, score_prompt=prompt, include_reason=False).measure(CASE, judge)
    [request] = judge.requests
    assert request.messages == (Message(role="user", content="4 1-5"),)
    assert isinstance(request, DistributionRequest) and request.prefill == "Rating: "


# --- GEval generating its steps --------------------------------------------------------


def test_geval_generates_steps_from_the_criteria() -> None:
    judge = ScriptedBackend(
        json_values=[{"steps": ["  Compare with 4. ", "Ignore style.", "   "]}], logprobs=[LOGPROBS]
    )
    result = GEval(criteria="The answer is correct.", include_reason=False).measure(CASE, judge)
    assert result.error is None
    steps_request, score_request = judge.requests
    assert isinstance(steps_request, JsonRequest)
    assert steps_request.json_schema == STEPS_SCHEMA
    assert steps_request.json_schema["properties"]["steps"]["maxItems"] == MAX_STEPS
    assert steps_request.temperature == 0.0 and steps_request.seed == 0  # cacheable
    steps_prompt = steps_request.messages[-1].content
    assert "Criteria for the evaluation:\nThe answer is correct.\n" in steps_prompt
    assert "using only: Input and Actual Output." in steps_prompt
    assert isinstance(score_request, DistributionRequest)
    assert "Evaluation steps:\n1. Compare with 4.\n2. Ignore style.\n\n" in score_request.messages[-1].content
    assert result.details["evaluation_steps"] == ["Compare with 4.", "Ignore style."]
    assert result.details["steps_source"] == "generated"
    assert result.score == pytest.approx(0.55, rel=1e-12)


def test_geval_given_steps_win_over_generating_them() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    GEval(criteria="Correct.", evaluation_steps=STEPS, include_reason=False).measure(CASE, judge)
    assert [type(r) for r in judge.requests] == [DistributionRequest]


def test_geval_backend_schema_violation_is_an_error_result() -> None:
    judge = ScriptedBackend(json_values=[SchemaViolation("reply is not JSON (Expecting value at char 0)")])
    result = GEval(criteria="Correct.").measure(CASE, judge)
    assert (result.score, result.passed) == (None, None)
    assert result.error == "SchemaViolation: reply is not JSON (Expecting value at char 0)"
    assert len(judge.requests) == 1  # it did not go on to score


def test_geval_reply_off_schema_is_an_error_result() -> None:
    judge = ScriptedBackend(json_values=[{"steps": []}])  # minItems 1: the backend rejects it
    result = GEval(criteria="Correct.").measure(CASE, judge)
    assert result.error is not None
    assert result.error.startswith("SchemaViolation: reply does not match the schema at steps: ")


def test_geval_with_only_blank_steps_is_an_error_result() -> None:
    judge = ScriptedBackend(json_values=[{"steps": ["  "]}])
    result = GEval(criteria="Correct.").measure(CASE, judge)
    assert result.error == "BackendError: the judge wrote no evaluation steps"


def test_geval_without_a_judge_is_an_error_result() -> None:
    result = GEval(evaluation_steps=STEPS).measure(CASE)
    assert result.error == "BackendError: metric 'geval' needs a judge backend"
    assert result.score is None


def test_geval_missing_evaluation_param_makes_no_backend_call() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    metric = GEval(evaluation_steps=STEPS, evaluation_params=("input", "actual_output", "context"))
    result = metric.measure(CASE, judge)
    assert judge.requests == []
    assert (result.score, result.passed) == (None, None)
    assert result.error == "MetricInputError: metric 'geval' needs field 'context', which is missing"


# --- threshold ---------------------------------------------------------------------------


@pytest.mark.parametrize(("threshold", "passed"), [(0.5, True), (0.55, True), (0.56, False)])
def test_threshold_decides_passed(threshold: float, passed: bool) -> None:
    result = GEval(evaluation_steps=STEPS, threshold=threshold, include_reason=False).measure(
        CASE, ScriptedBackend(logprobs=[LOGPROBS])
    )
    assert result.passed is passed
    assert result.threshold == threshold


def test_a_score_equal_to_the_threshold_passes() -> None:
    # p(5) = 1: score exactly 1.0, threshold exactly 1.0.
    logprobs = {"1": -math.inf, "2": -math.inf, "3": -math.inf, "4": -math.inf, "5": 0.0}
    result = GEval(evaluation_steps=STEPS, threshold=1.0, include_reason=False).measure(
        CASE, ScriptedBackend(logprobs=[logprobs])
    )
    assert result.score == 1.0
    assert result.passed is True
    assert ExactMatch(threshold=1.0).passes(1.0) is True
    assert ExactMatch(threshold=0.75).passes(0.75) is True
    assert ExactMatch(threshold=0.75).passes(0.7499999) is False


# --- validation and building by name ---------------------------------------------------


def test_geval_needs_criteria_or_steps() -> None:
    with pytest.raises(ValidationError, match="give criteria or evaluation_steps"):
        GEval()
    with pytest.raises(ValidationError, match="give criteria or evaluation_steps"):
        GEval(evaluation_steps=())


def test_geval_rejects_an_unknown_evaluation_param() -> None:
    with pytest.raises(ValidationError, match=r"evaluation_params must name test-case fields, got \['answer'\]"):
        GEval(criteria="c", evaluation_params=("input", "answer"))


@pytest.mark.parametrize("score_range", [(5, 1), (3, 3), (-1, 5), (0, 101)])
def test_geval_rejects_a_score_range_that_is_empty_or_beyond_0_to_100(score_range: tuple[int, int]) -> None:
    low, high = score_range
    with pytest.raises(ValidationError, match=f"score_range must satisfy 0 <= low < high <= 100, got {low}-{high}"):
        GEval(criteria="c", score_range=score_range)


@pytest.mark.parametrize("score_range", [(0, 1), (1, 10), (0, 100), (99, 100)])
def test_geval_accepts_any_score_range_within_0_to_100(score_range: tuple[int, int]) -> None:
    assert GEval(criteria="c", score_range=score_range).score_range == score_range


def test_build_metric_makes_a_configured_metric() -> None:
    metric = build_metric("geval", {"criteria": "c", "evaluation_steps": ["a", "b"], "score_range": [0, 9]})
    assert isinstance(metric, GEval)
    assert metric.evaluation_steps == ("a", "b")
    assert metric.score_range == (0, 9)
    assert build_metric("exact_match") == ExactMatch()


def test_build_metric_turns_a_validator_error_into_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("geval", {"criteria": "c", "score_range": [1, 101]}, where="eval.toml: metrics[2]")
    assert str(info.value) == (
        "eval.toml: metrics[2]: geval: score_range must satisfy 0 <= low < high <= 100, got 1-101"
    )
    assert not isinstance(info.value, UnknownMetric)


def test_build_metric_names_the_field_of_a_bad_option() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("exact_match", {"threshold": 2})
    assert str(info.value) == "exact_match.threshold: Input should be less than or equal to 1"


def test_build_metric_names_an_unknown_option() -> None:
    with pytest.raises(ConfigError, match=r"^geval: unknown option 'critera' \(did you mean 'criteria'\?; known: name, "):
        build_metric("geval", {"critera": "c", "evaluation_steps": ["a"]})


def test_build_metric_unknown_param_names_it() -> None:
    with pytest.raises(ConfigError, match=r"^geval: evaluation_params must name test-case fields, got \['answer'\]$"):
        build_metric("geval", {"criteria": "c", "evaluation_params": ["answer"]})


def test_build_metric_of_an_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMetric) as info:
        build_metric("nope")
    assert str(info.value) == f"unknown metric 'nope' (known: {', '.join(metric_names())})"
    assert isinstance(info.value, ConfigError)


def test_metric_names_are_the_registered_kinds_then_the_presets() -> None:
    names = metric_names()
    kinds = [n for n in names if ":" not in n]
    assert {"exact_match", "geval"} <= set(kinds)
    assert kinds == sorted(kinds)
    assert names[len(kinds):] == [
        "geval:coherence", "geval:consistency", "geval:engagingness", "geval:fluency",
        "geval:groundedness", "geval:naturalness", "geval:relevance",
    ]


def test_registered_metrics_are_buildable_by_kind() -> None:
    class Shouting(ExactMatch):
        kind = "test_shouting_exact_match"
        ignore_case: bool = True

    try:
        register_metric(Shouting)
        assert "test_shouting_exact_match" in metric_names()
        assert isinstance(build_metric("test_shouting_exact_match"), Shouting)
    finally:
        from localeval.metrics.registry import _REGISTRY

        _REGISTRY.pop("test_shouting_exact_match", None)
    assert "test_shouting_exact_match" not in metric_names()
