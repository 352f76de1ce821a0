"""User-defined metrics: @metric functions, registered subclasses, plugins, and composites."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import ClassVar

import pytest
from command_line import localeval
from scripted import ScriptedBackend

from localeval.cli.exits import EXIT_FAILED
from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.errors import BackendError, ConfigError, UnknownMetric
from localeval.metrics import (
    AnswerRelevancy,
    Composite,
    ExactMatch,
    Faithfulness,
    GEval,
    Hallucination,
    build_metric,
    metric,
    register_metric,
)
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.composite import combine

ROOT = Path(__file__).resolve().parent.parent
CASE = TestCase(input="q", actual_output="one two three", expected_output="one two")


@metric("test_word_limit")
def word_limit(case: TestCase, max_words: int = 5) -> tuple[float, str]:
    words = len((case.actual_output or "").split())
    return (1.0 if words <= max_words else max_words / words), f"{words} words"


def test_a_decorated_function_is_a_metric_with_its_options() -> None:
    built = build_metric("test_word_limit", {"max_words": 2, "threshold": 0.7})
    assert isinstance(built, word_limit) and built.kind == "test_word_limit"
    result = built.measure(CASE)
    assert (result.score, result.passed, result.reason) == (pytest.approx(2 / 3), False, "3 words")
    assert word_limit().measure(CASE).score == 1.0


def test_its_options_are_validated_by_their_annotations() -> None:
    with pytest.raises(ConfigError, match=r"test_word_limit\.max_words: Input should be a valid integer"):
        build_metric("test_word_limit", {"max_words": "many"})
    with pytest.raises(ConfigError, match=r"^test_word_limit: unknown option 'colour' \(known: name, threshold, "):
        build_metric("test_word_limit", {"colour": "red"})


def test_required_fields_are_checked_before_scoring() -> None:
    result = word_limit().measure(TestCase(input="q"))
    assert result.error == "MetricInputError: metric 'test_word_limit' needs field 'actual_output', which is missing"


@pytest.mark.parametrize(("returned", "score", "reason", "details"), [
    (0.25, 0.25, "", {}),
    (1, 1.0, "", {}),
    ((0.5, "half"), 0.5, "half", {}),
    ((0.5, "half", {"k": 1}), 0.5, "half", {"k": 1}),
    (Verdict(0.75, "v", {"x": 2}), 0.75, "v", {"x": 2}),
])
def test_what_a_function_may_return(returned, score, reason, details) -> None:
    @metric("test_returns", register=False)
    def returns(case: TestCase) -> object:
        return returned

    result = returns().measure(CASE)
    assert (result.score, result.reason, result.details, result.error) == (score, reason, details, None)


def test_a_verdict_may_carry_its_own_pass() -> None:
    @metric("test_vetoed", register=False)
    def vetoed(case: TestCase) -> Verdict:
        return Verdict(0.9, "high, but vetoed", passed=False)

    assert (vetoed().measure(CASE).score, vetoed().measure(CASE).passed) == (0.9, False)


@pytest.mark.parametrize(("returned", "error"), [
    (1.5, "ScoreError: metric 'test_bad' gave the score 1.5; a score is a number from 0 to 1"),
    (math.nan, "ScoreError: metric 'test_bad' gave the score nan; a score is a number from 0 to 1"),
    (True, "ScoreError: metric 'test_bad' returned bool; return a score, (score, reason), (score, reason, "
           "details) or a Verdict"),
    ("0.5", "ScoreError: metric 'test_bad' returned str; return a score"),
    ((0.5, "r", ["x"]), "ScoreError: metric 'test_bad' returned details of type list; use a dict"),
])
def test_anything_but_a_score_is_that_cases_error(returned, error) -> None:
    @metric("test_bad", register=False)
    def bad(case: TestCase) -> object:
        return returned

    assert bad().measure(CASE).error.startswith(error)


def test_a_function_that_takes_judge_gets_the_runs_judge() -> None:
    @metric("test_judged", register=False)
    def judged(case: TestCase, judge: object) -> float:
        return 1.0 if judge is not None else 0.0

    assert judged.needs_judge and judged().measure(CASE, ScriptedBackend()).score == 1.0
    assert judged().measure(CASE).error == "BackendError: metric 'test_judged' needs a judge backend"


def test_mistakes_in_a_metric_function_are_found_when_it_is_decorated() -> None:
    with pytest.raises(TypeError, match="option 'limit' needs a default value"):
        @metric(register=False)
        def no_default(case: TestCase, limit: int) -> float:
            return 0.0
    with pytest.raises(TypeError, match="'threshold' is every metric's option"):
        @metric(register=False)
        def reserved(case: TestCase, threshold: float = 0.1) -> float:
            return 0.0
    with pytest.raises(TypeError, match="'answer' is not a test-case field"):
        metric(required=("answer",))


def test_a_kind_cannot_be_taken_twice() -> None:
    class Other(Metric):
        kind: ClassVar[str] = "exact_match"

    with pytest.raises(ConfigError, match="metric kind 'exact_match' is taken by localeval.metrics.exact_match.ExactMatch"):
        register_metric(Other)
    register_metric(ExactMatch)  # the same class again is fine


# -- plugins --------------------------------------------------------------------------------


def write_config(folder: Path, body: str) -> Path:
    path = folder / "eval.toml"
    path.write_text(body)
    return path


def test_a_plugin_file_is_relative_to_the_config(tmp_path) -> None:
    (tmp_path / "mine.py").write_text(
        "from localeval import metric\n\n"
        "@metric('test_plugin_len')\n"
        "def length(case, most: int = 10):\n"
        "    return min(len(case.actual_output) / most, 1.0)\n"
    )
    config = RunConfig.load(write_config(tmp_path, 'plugins = ["mine.py"]\n[[metrics]]\nmetric = "test_plugin_len"\nmost = 26\n'))
    (built,) = config.build_metrics()
    assert built.measure(CASE).score == pytest.approx(13 / 26)


@pytest.mark.parametrize(("plugin", "message"), [
    ("missing.py", "plugins[1] 'missing.py': no such file: "),
    ("broken.py", "plugins[1] 'broken.py': ZeroDivisionError: division by zero"),
    ("no_such_module_xyz", "plugins[1] 'no_such_module_xyz': ModuleNotFoundError: No module named 'no_such_module_xyz'"),
])
def test_a_plugin_that_cannot_load_is_named(tmp_path, plugin: str, message: str) -> None:
    """Named as the config is read: its plugins load before its tables are checked (one may add a backend kind)."""
    (tmp_path / "broken.py").write_text("x = 1 / 0\n")
    with pytest.raises(ConfigError, match="eval.toml: " + message.replace("(", r"\(").replace("[", r"\[")):
        RunConfig.load(write_config(tmp_path, f'plugins = ["{plugin}"]\n[[metrics]]\nmetric = "exact_match"\n'))


def test_an_unloaded_custom_metric_is_an_unknown_metric(tmp_path) -> None:
    config = RunConfig.load(write_config(tmp_path, '[[metrics]]\nmetric = "not_loaded_anywhere"\n'))
    with pytest.raises(UnknownMetric, match="unknown metric 'not_loaded_anywhere'"):
        config.build_metrics()


# -- composite -------------------------------------------------------------------------------


@pytest.mark.parametrize(("aggregate", "weights", "expected"), [
    ("min", None, 0.2), ("max", None, 0.8), ("mean", None, 0.5), ("weighted_mean", [3.0, 1.0], 0.35),
])
def test_combine(aggregate, weights, expected) -> None:
    assert combine(aggregate, [0.2, 0.8], weights) == pytest.approx(expected, abs=1e-12)


def test_a_composite_of_a_function_metric_and_exact_match() -> None:
    built = build_metric("composite", {"metrics": [{"metric": "test_word_limit", "max_words": 6},
                                                    {"metric": "exact_match"}], "aggregate": "mean"})
    result = built.measure(CASE)
    assert result.score == 0.5 and result.reason.startswith("mean of test_word_limit 1.00, exact_match 0.00; ")
    assert not result.passed  # exact_match fails its own threshold of 1
    assert [p["metric"] for p in result.details["parts"]] == ["test_word_limit", "exact_match"]
    assert built.required_fields() == ("actual_output", "expected_output")
    assert not built.needs_judge


def test_a_lower_is_better_part_counts_as_one_minus_its_score() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["agrees", "contradicts", "agrees", "agrees"]}])
    case = CASE.model_copy(update={"context": ["a", "b", "c", "d"]})
    built = Composite(metrics=[Hallucination(include_reason=False), ExactMatch(name="em", ignore_case=True)],
                      aggregate="max")
    result = built.measure(case, judge)
    assert built.needs_judge
    assert result.score == 0.75  # max(1 - 0.25, 0.0)
    assert result.details["parts"][0]["score"] == 0.25


RAG_CASE = TestCase(
    input="What if these shoes don't fit?",
    actual_output="Returns are free. You have 30 days. Keep the receipt. Refunds take a week. Stores take them too.",
    retrieval_context=["Returns are free within 30 days with a receipt."],
)


def grounded_and_relevant(**options: object) -> tuple[Composite, ScriptedBackend]:
    """The issue's example: faithfulness (threshold 0.9) scores 3/5 = 0.6, answer relevancy 1.0; min 0.6."""
    judge = ScriptedBackend(json_values=[{"verdicts": ["yes", "yes", "yes", "no", "no"]}, {"verdicts": ["yes"] * 5}])
    parts = [Faithfulness(threshold=0.9, include_reason=False), AnswerRelevancy(include_reason=False)]
    return Composite(metrics=parts, aggregate="min", threshold=0.5, **options), judge  # type: ignore[arg-type]


def test_a_composite_fails_when_a_part_fails_on_its_own_threshold() -> None:
    built, judge = grounded_and_relevant()
    result = built.measure(RAG_CASE, judge)
    assert [(p["metric"], p["score"], p["passed"]) for p in result.details["parts"]] == [
        ("faithfulness", 0.6, False), ("answer_relevancy", 1.0, True)
    ]
    assert (result.score, result.threshold, result.passed) == (0.6, 0.5, False)
    assert result.reason == (
        "min of faithfulness 0.60, answer_relevancy 1.00; failed on its own: faithfulness 0.60 < threshold 0.90"
    )
    assert result.details["failed_parts"] == ["faithfulness"]


def test_require_parts_pass_false_lets_the_aggregate_alone_decide() -> None:
    built, judge = grounded_and_relevant(require_parts_pass=False)
    result = built.measure(RAG_CASE, judge)
    assert (result.score, result.passed) == (0.6, True)
    assert result.reason == "min of faithfulness 0.60, answer_relevancy 1.00"
    assert "failed_parts" not in result.details
    assert build_metric("composite", {"metrics": [{"metric": "exact_match"}], "require_parts_pass": False})


def test_a_composite_also_needs_its_aggregate_to_reach_its_threshold() -> None:
    built = Composite(metrics=[word_limit(max_words=6), ExactMatch(threshold=0.0)], aggregate="mean", threshold=0.6)
    result = built.measure(CASE)
    assert [p["passed"] for p in result.details["parts"]] == [True, True]
    assert (result.score, result.passed) == (0.5, False)
    assert "failed_parts" not in result.details


@pytest.mark.parametrize(("verdicts", "hallucination", "passed", "failed"), [
    (["agrees", "contradicts", "agrees", "agrees"], 0.25, True, None),  # 0.25 <= 0.5: the part passes
    (["contradicts", "contradicts", "contradicts", "agrees"], 0.75, False, "hallucination 0.75 > threshold 0.50"),
])
def test_a_lower_is_better_part_passes_by_its_own_rule(verdicts, hallucination, passed, failed) -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": verdicts}])
    case = CASE.model_copy(update={"context": ["a", "b", "c", "d"], "actual_output": "one two"})
    built = Composite(metrics=[Hallucination(include_reason=False), ExactMatch(name="em")], aggregate="max")
    result = built.measure(case, judge)
    assert result.details["parts"][0]["score"] == hallucination
    assert result.score == 1.0  # max(1 - hallucination, exact match 1.0)
    assert result.passed is passed
    assert result.reason.endswith(f"; failed on its own: {failed}" if failed else "em 1.00")


def test_a_part_that_errors_makes_the_composite_an_error_that_keeps_the_parts() -> None:
    built = Composite(metrics=[ExactMatch(), word_limit()])
    result = built.measure(TestCase(input="q", actual_output="x", expected_output="x"), None)
    assert result.error is None
    missing = TestCase(input="q", actual_output="x")
    result = built.measure(missing)
    assert result.error.startswith("MetricInputError: metric 'composite' needs field 'expected_output'")
    judge_part = Composite(metrics=[word_limit(), GEval(criteria="c", evaluation_steps=("s",), include_reason=False)])
    result = judge_part.measure(CASE, ScriptedBackend(logprobs=[BackendError("scripted failure")]))
    assert result.error == "PartFailed: part 'geval' could not score: BackendError: scripted failure"
    assert [p["metric"] for p in result.details["parts"]] == ["test_word_limit", "geval"]
    assert result.details["parts"][0]["score"] == 1.0


def test_prepare_reaches_the_parts() -> None:
    judge = ScriptedBackend(json_values=[{"steps": ["Read it.", "Score it."]}])
    built = Composite(metrics=[GEval(criteria="c", include_reason=False), ExactMatch()]).prepare(judge)
    assert built.metrics[0].evaluation_steps == ("Read it.", "Score it.")


@pytest.mark.parametrize(("options", "message"), [
    ({"metrics": []}, "metrics: List should have at least 1 item"),
    ({"metrics": [{"ignore_case": True}]}, "part 1: the 'metric' key"),
    ({"metrics": [{"metric": "nope"}]}, "unknown metric 'nope'"),
    ({"metrics": [{"metric": "exact_match"}, {"metric": "exact_match"}]}, "two parts are named alike"),
    ({"metrics": [{"metric": "exact_match"}], "aggregate": "weighted_mean"}, "needs one weight per part"),
    ({"metrics": [{"metric": "exact_match"}], "weights": [1.0]}, "'weights' is only for aggregate = 'weighted_mean'"),
])
def test_composite_config_mistakes(options, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        build_metric("composite", options)


@pytest.mark.model
def test_the_custom_metric_example_runs_with_the_default_model(tmp_path) -> None:
    env = {"LOCALEVAL_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    result = localeval("run", "-c", str(ROOT / "examples/custom/eval.toml"), "--report", str(tmp_path / "report.json"),
                       env=env)
    assert result.returncode == EXIT_FAILED, result.stderr  # token_f1 fails capital-australia (0.0)
    report = json.loads((tmp_path / "report.json").read_text())
    results = [r for case in report["cases"] for r in case["results"]]
    assert len(results) == 18 and all(r["error"] is None for r in results)
    f1 = {case["name"]: case["results"][0]["score"] for case in report["cases"]}
    assert f1["capital-france"] == 1.0 and f1["capital-australia"] == 0.0
    assert report["stats"]["model_calls"] == 6  # the composite's judge calls came from the cache
