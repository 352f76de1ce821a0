"""The assertion API of localeval.testing, against a scripted judge: outcomes and exact messages."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted import ScriptedBackend

from localeval.backends.base import Fingerprint, JsonRequest, Message
from localeval.data.case import TestCase
from localeval.errors import DatasetError, SchemaViolation
from localeval.metrics import ExactMatch, GEval, Hallucination, Verdict, metric
from localeval.metrics.length import OutputLength
from localeval.testing import (
    Expect,
    ScriptedJudge,
    ScriptExhausted,
    assert_evaluation,
    assert_fails,
    assert_passes,
    assert_score,
    assert_test,
    cases,
    clear_prepared,
    prepared,
)

CASE = TestCase(name="hamlet", input="Who wrote Hamlet?", actual_output="Shakespeare", expected_output="Shakespeare")
STEPS = ("Check the author.",)
RULE = "passes when score >= threshold"
#: G-Eval's reason when it writes none: a summary of the distribution.
SUMMARY = "reason: Expected score {} on 1-5 (the valid scores covered 100% of the judge's probability)."


def score(points: int) -> dict[str, float]:
    """Scripted log-probabilities with all the mass on ``points`` of 1..5: G-Eval scores (points - 1) / 4."""
    return {str(s): 0.0 if s == points else -math.inf for s in range(1, 6)}


def geval(**options: object) -> GEval:
    return GEval(**{"name": "correctness", "evaluation_steps": STEPS, "include_reason": False, **options})


def message(excinfo: pytest.ExceptionInfo[AssertionError]) -> list[str]:
    return str(excinfo.value).splitlines()


@pytest.fixture(autouse=True)
def _fresh_prepared() -> Iterator[None]:
    clear_prepared()
    yield
    clear_prepared()


# --- assert_test / assert_passes ------------------------------------------------------


def test_passing_metrics_return_their_results_in_order() -> None:
    judge = ScriptedBackend(logprobs=[score(4)])
    results = assert_test(CASE, [ExactMatch(), geval()], judge)
    assert [(r.metric, r.score, r.passed) for r in results] == [("exact_match", 1.0, True), ("correctness", 0.75, True)]


def test_a_failing_metric_shows_score_threshold_rule_and_reason() -> None:
    judge = ScriptedBackend(json_values=[{"reason": "It names\nthe wrong author."}], logprobs=[score(2)])
    with pytest.raises(AssertionError) as excinfo:
        assert_passes(CASE, geval(include_reason=True), judge)
    assert message(excinfo) == [
        "case 'hamlet': 1 of 1 metric did not meet expectations",
        f"  correctness: score 0.25 < threshold 0.50 (failed; {RULE}) — reason: It names the wrong author.",
    ]


def test_every_metric_that_failed_or_errored_is_listed() -> None:
    judge = ScriptedBackend(logprobs=[SchemaViolation("no score")])
    case = CASE.model_copy(update={"actual_output": "Marlowe"})
    with pytest.raises(AssertionError) as excinfo:
        assert_test(case, [ExactMatch(), OutputLength(), geval()], judge)
    assert message(excinfo) == [
        "case 'hamlet': 2 of 3 metrics did not meet expectations",
        (
            f"  exact_match: score 0.00 < threshold 1.00 (failed; {RULE}) — reason: The outputs differ at "
            "character 0: 'Marlowe' where 'Shakespeare' was expected."
        ),
        f"  correctness: error, no score (threshold 0.50; {RULE}) — error: SchemaViolation: no score",
    ]


def test_an_error_is_never_a_pass_nor_a_failure() -> None:
    case = CASE.model_copy(update={"expected_output": None})
    error = "MetricInputError: metric 'exact_match' needs field 'expected_output', which is missing"
    for check in (assert_passes, assert_fails):
        with pytest.raises(AssertionError) as excinfo:
            check(case, ExactMatch())
        assert message(excinfo)[1] == f"  exact_match: error, no score (threshold 1.00; {RULE}) — error: {error}"


def test_assert_test_takes_one_metric_too() -> None:
    [result] = assert_test(CASE, ExactMatch())
    assert result.passed is True


def test_lower_is_better_metrics_pass_by_their_own_rule() -> None:
    case = CASE.model_copy(update={"context": ["Shakespeare wrote Hamlet.", "Hamlet is a play."]})
    metric = Hallucination(include_reason=False)
    result = assert_passes(case, metric, ScriptedBackend(json_values=[{"verdicts": ["agrees", "agrees"]}]))
    assert (result.score, result.passed) == (0.0, True)
    judge = ScriptedBackend(json_values=[{"verdicts": ["contradicts", "contradicts"]}])
    with pytest.raises(AssertionError) as excinfo:
        assert_passes(case, metric, judge)
    assert message(excinfo)[1] == (
        "  hallucination: score 1.00 > threshold 0.50 (failed; passes when score <= threshold) — "
        "reason: The output contradicts 2 of 2 context items."
    )


def test_a_case_without_a_name_is_shown_by_its_input() -> None:
    case = TestCase(input="Tell me\n" + "x" * 80, actual_output="a", expected_output="b")
    with pytest.raises(AssertionError) as excinfo:
        assert_passes(case, ExactMatch())
    assert message(excinfo)[0] == "case 'Tell me " + "x" * 49 + "...': 1 of 1 metric did not meet expectations"


def test_a_score_gets_the_decimals_that_keep_it_on_its_side_of_the_threshold() -> None:
    case = CASE.model_copy(update={"actual_output": "word " * 4996})
    with pytest.raises(AssertionError) as excinfo:
        assert_passes(case, OutputLength(max_words=10000, threshold=0.5))
    assert message(excinfo)[1] == f"  output_length: score 0.4996 < threshold 0.50 (failed; {RULE}) — reason: 4996 words."
    with pytest.raises(AssertionError) as excinfo:
        assert_score(case, OutputLength(max_words=10000, threshold=0.0015), min=0.49961)
    assert message(excinfo)[1] == (
        f"  output_length: score 0.4996 > threshold 0.0015 (passed; {RULE}), expected a score >= 0.49961 — "
        "reason: 4996 words."
    )


def test_a_judge_metric_without_a_judge_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="metric 'correctness' needs a judge: pass judge=...") as excinfo:
        assert_test(CASE, [ExactMatch(), geval()])
    assert "localeval_judge fixture" in str(excinfo.value)


# --- assert_fails ------------------------------------------------------------------------


def test_assert_fails_returns_the_failed_result() -> None:
    result = assert_fails(CASE.model_copy(update={"actual_output": "Marlowe"}), ExactMatch())
    assert (result.score, result.passed) == (0.0, False)


def test_assert_fails_on_a_pass_says_it_expected_a_failure() -> None:
    with pytest.raises(AssertionError) as excinfo:
        assert_fails(CASE, ExactMatch())
    assert message(excinfo)[1] == (
        f"  exact_match: score 1.00 = threshold 1.00 (passed; {RULE}), expected to fail — "
        "reason: The actual output matches the expected output exactly."
    )


# --- assert_score ---------------------------------------------------------------------------


def test_assert_score_in_range_ignores_pass_or_fail() -> None:
    result = assert_score(CASE, geval(threshold=0.9), ScriptedBackend(logprobs=[score(3)]), min=0.4, max=0.6)
    assert (result.score, result.passed) == (0.5, False)


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"min": 0.6, "max": 0.9}, "expected a score in [0.60, 0.90]"),
        ({"min": 0.75}, "expected a score >= 0.75"),
        ({"max": 0.25}, "expected a score <= 0.25"),
        ({"exact": 0.501}, "expected a score of 0.501 ± 1e-09"),
        ({"exact": 0.49, "delta": 0.005}, "expected a score of 0.49 ± 0.005"),
    ],
)
def test_a_score_out_of_range_says_what_was_expected(bounds: dict[str, float], expected: str) -> None:
    judge = ScriptedBackend(logprobs=[score(3)])
    with pytest.raises(AssertionError) as excinfo:
        assert_score(CASE, geval(), judge, **bounds)
    assert message(excinfo)[1] == f"  correctness: score 0.50 = threshold 0.50 (passed; {RULE}), {expected} — " + SUMMARY.format("3.00")


def test_exact_scores_match_within_delta() -> None:
    result = assert_score(CASE, geval(), ScriptedBackend(logprobs=[score(3)]), exact=0.50001, delta=1e-4)
    assert result.score == 0.5


@pytest.mark.parametrize(
    ("bounds", "problem"),
    [
        ({}, "assert_score: give min, max or exact"),
        ({"exact": 0.5, "min": 0.1}, "Expect: give exact, or min and/or max, not both"),
        ({"min": 0.8, "max": 0.2}, "Expect: min 0.8 is greater than max 0.2"),
        ({"exact": 0.5, "delta": -1.0}, "Expect: delta must not be negative, got -1.0"),
    ],
)
def test_impossible_bounds_are_usage_errors(bounds: dict[str, float], problem: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        assert_score(CASE, ExactMatch(), **bounds)
    assert str(excinfo.value) == problem


# --- assert_evaluation: several metrics, each with its own expectation ------------------------


def test_several_expectations_are_checked_together() -> None:
    judge = ScriptedBackend(logprobs=[score(4)])
    results = assert_evaluation(
        CASE.model_copy(update={"actual_output": "Shakespeare wrote it"}),
        [Expect(ExactMatch(), passed=False), Expect(geval(), passed=True, min=0.7), OutputLength(), Expect(OutputLength())],
        judge,
    )
    assert [r.passed for r in results] == [False, True, True, True]


def test_each_unmet_expectation_gets_its_line() -> None:
    judge = ScriptedBackend(logprobs=[score(2)])
    case = CASE.model_copy(update={"actual_output": "Shakespeare wrote it"})
    with pytest.raises(AssertionError) as excinfo:
        assert_evaluation(
            case,
            [
                Expect(ExactMatch(), passed=True),
                Expect(geval(), passed=True, min=0.2),
                Expect(OutputLength(max_words=10), max=0.2),
                Expect(OutputLength(name="words", max_words=10), passed=False),
            ],
            judge,
        )
    assert message(excinfo) == [
        "case 'hamlet': 4 of 4 metrics did not meet expectations",
        (
            f"  exact_match: score 0.00 < threshold 1.00 (failed; {RULE}) — reason: The outputs differ at "
            "character 11: ' wrote it' where '' was expected."
        ),
        f"  correctness: score 0.25 < threshold 0.50 (failed; {RULE}), expected to pass and a score >= 0.20 — "
        + SUMMARY.format("2.00"),
        f"  output_length: score 0.30 > threshold 0.00 (passed; {RULE}), expected a score <= 0.20 — reason: 3 words.",
        f"  words: score 0.30 > threshold 0.00 (passed; {RULE}), expected to fail — reason: 3 words.",
    ]


def test_expect_with_nothing_given_wants_only_a_score() -> None:
    assert_evaluation(CASE, [Expect(ExactMatch(threshold=1.0))])
    with pytest.raises(AssertionError):
        assert_evaluation(CASE.model_copy(update={"actual_output": None}), [Expect(ExactMatch())])


def test_no_expectations_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="no metrics given"):
        assert_evaluation(CASE, [])


# --- preparing once per process ---------------------------------------------------------------------


def steps_judge(fingerprint: str = "m") -> ScriptedBackend:
    identity = Fingerprint(kind="scripted", model=fingerprint, runtime="scripted 1")
    return ScriptedBackend(json_values=[{"steps": ["Step one."]}], logprobs=[score(4)] * 3, fingerprint=identity)


def test_generated_steps_are_written_once_per_metric_and_judge() -> None:
    metric = GEval(name="c", criteria="Correct.", include_reason=False)
    judge = steps_judge()
    for _ in range(3):
        result = assert_passes(CASE, metric, judge)
    assert result.details["evaluation_steps"] == ["Step one."]
    assert len(judge.requests) == 1 + 3  # the steps once, a score per test
    other = steps_judge("another model")  # another fingerprint: its own steps
    assert_passes(CASE, metric, other)
    assert len(other.requests) == 2


def test_a_failure_to_prepare_is_not_remembered() -> None:
    metric = GEval(name="c", criteria="Correct.", include_reason=False)
    judge = ScriptedBackend(json_values=[SchemaViolation("bad steps"), {"steps": ["Step one."]}], logprobs=[score(4)])
    assert prepared(metric, judge) is metric
    assert prepared(metric, judge).evaluation_steps == ("Step one.",)


def test_equal_configurations_share_the_prepared_metric() -> None:
    judge = steps_judge()
    first = prepared(GEval(criteria="Correct."), judge)
    assert prepared(GEval(criteria="Correct."), judge) is first
    assert prepared(GEval(criteria="Correct.", threshold=0.6), steps_judge()).evaluation_steps == ("Step one.",)


# --- cases(): parametrizing over a dataset ----------------------------------------------------------


def test_cases_are_params_with_names_or_locations_as_ids(tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text('{"name": "first", "input": "a"}\n\n{"input": "b"}\n')
    params = cases(data)
    assert [p.id for p in params] == ["first", "qa.jsonl:3"]
    assert [p.values[0].input for p in params] == ["a", "b"]
    assert all(isinstance(p.values[0], TestCase) for p in params)


def test_cases_take_the_load_options(tmp_path: Path) -> None:
    data = tmp_path / "qa.csv"
    data.write_text("question,extra\nq,1\n")
    [param] = cases(data, fields={"question": "input"}, unknown_fields="metadata")
    assert param.values[0].metadata == {"extra": "1"}


def test_cases_errors_name_the_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text('{"input": "a"}\n{"input": "b", "answer": "c"}\n')
    with pytest.raises(DatasetError, match=r"qa\.jsonl:2: field 'answer': not a test-case field"):
        cases(data)


# -- the scripted judge is public --------------------------------------------------------------


def test_a_user_tests_their_own_metric_with_the_public_scripted_judge() -> None:
    """docs/pytest.md's example, with a metric written as a user would."""
    @metric("yes_share", required=("actual_output",))
    def yes_share(case: TestCase, judge) -> Verdict:
        schema = {"type": "object", "properties": {"verdicts": {"type": "array", "items": {"enum": ["yes", "no"]}}},
                  "required": ["verdicts"]}
        messages = (Message(role="user", content=f"Judge each sentence: {case.actual_output}"),)
        verdicts = judge.generate_json(JsonRequest(messages=messages, json_schema=schema)).value["verdicts"]
        return Verdict(score=verdicts.count("yes") / len(verdicts), reason=f"{len(verdicts)} verdicts")

    judge = ScriptedJudge(json_values=[{"verdicts": ["yes", "no", "yes"]}, {"verdicts": ["maybe"]}])
    case = TestCase(input="q", actual_output="a. b. c.")
    result = yes_share().measure(case, judge)
    assert result.score == pytest.approx(2 / 3, rel=1e-12)
    assert judge.requests[0].messages[-1].content == "Judge each sentence: a. b. c."
    refused = yes_share().measure(case, judge)  # "maybe" breaks the schema, as it would in production
    assert refused.error is not None and refused.error.startswith("SchemaViolation")
    with pytest.raises(ScriptExhausted):
        judge.generate_json(judge.requests[0])
