"""The agentic metrics: tool correctness by hand-checked numbers; the judged two against a scripted judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted import ScriptedBackend

from localeval.backends.base import Capabilities, DistributionRequest, JsonRequest
from localeval.data.case import TestCase, ToolCall
from localeval.data.dataset import Dataset
from localeval.errors import DatasetError
from localeval.metrics import ArgumentCorrectness, TaskCompletion, ToolCorrectness, build_metric, metric_names
from localeval.metrics.agent.argument_correctness import call_verdicts_schema
from localeval.metrics.agent.matching import max_matching, ordered_matching, parameters_agree, same_value
from localeval.metrics.agent.task_completion import OUTCOME_SCHEMA, OUTCOME_TOKENS, VERDICT_SCHEMA
from localeval.metrics.agent.tool_correctness import tool_correctness_score
from localeval.metrics.judged import REASON_SCHEMA, REASON_TOKENS
from localeval.run.runner import check_inputs

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent"


def tools(*names: str) -> list[ToolCall]:
    return [ToolCall(name=n) for n in names]


def case(called: list[ToolCall] | None, expected: list[ToolCall] | None = None, **fields: Any) -> TestCase:
    return TestCase(input=fields.pop("input", "q"), tools_called=called, expected_tools=expected, **fields)


# -- the pure part ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "called", "matched", "subset", "exact"),
    [
        (0, 0, 0, 1.0, 1.0),  # nothing expected, nothing called: right
        (0, 2, 0, 1.0, 0.0),  # nothing expected, two calls: ignored by subset, all wrong for exact
        (3, 0, 0, 0.0, 0.0),  # expected but nothing called
        (2, 2, 2, 1.0, 1.0),
        (2, 3, 2, 1.0, 2 / 3),  # one extra call
        (3, 2, 1, 1 / 3, 1 / 4),
    ],
)
def test_score_from_counts(expected: int, called: int, matched: int, subset: float, exact: float) -> None:
    assert tool_correctness_score(expected, called, matched, "subset") == subset
    assert tool_correctness_score(expected, called, matched, "exact") == exact


def test_score_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="matched 3"):
        tool_correctness_score(2, 5, 3, "subset")


def test_json_equality_keeps_bools_apart_from_numbers() -> None:
    assert same_value({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
    assert not same_value(True, 1) and not same_value([0], [False]) and not same_value({"a": 1}, {"a": 1, "b": 2})
    assert parameters_agree({"q": "x"}, {"q": "x", "limit": 5}, "subset")
    assert not parameters_agree({"q": "x"}, {"q": "x", "limit": 5}, "exact")
    assert not parameters_agree({"q": "x", "limit": 5}, {"q": "x"}, "subset")
    assert parameters_agree(None, {}, "exact")


def test_max_matching_finds_what_greedy_pairing_misses() -> None:
    # expected 0 matches calls 0 and 1, expected 1 only call 0: greedy (0->0) leaves 1 unmatched
    edges = {(0, 0), (0, 1), (1, 0)}
    assert max_matching(2, 2, lambda e, c: (e, c) in edges) == [(0, 1), (1, 0)]


def test_ordered_matching_is_the_longest_common_subsequence() -> None:
    expected, called = "abcab", "xbaycab"
    assert ordered_matching(len(expected), len(called), lambda e, c: expected[e] == called[c]) == [
        (0, 2), (2, 4), (3, 5), (4, 6)
    ]
    assert ordered_matching(2, 0, lambda e, c: True) == [] == ordered_matching(0, 3, lambda e, c: True)


# -- tool correctness --------------------------------------------------------------------


def test_names_in_any_order_extra_calls_ignored() -> None:
    result = ToolCorrectness().measure(case(tools("search", "calc", "search", "mail"), tools("calc", "search")))
    assert (result.score, result.passed) == (1.0, True)
    assert result.details["matched"] == [{"expected": 0, "call": 1, "name": "calc"},
                                         {"expected": 1, "call": 0, "name": "search"}]
    assert result.details["unexpected"] == [{"call": 2, "name": "search"}, {"call": 3, "name": "mail"}]
    assert result.details["missing"] == [] and "out_of_order" not in result.details
    assert result.reason == "2 of 2 expected tools called; unexpected calls (ignored): search, mail."


def test_exact_counts_extra_calls_against() -> None:
    result = ToolCorrectness(match="exact").measure(case(tools("search", "calc", "mail"), tools("calc", "search")))
    assert result.score == 2 / 3
    assert result.reason == "2 of 2 expected tools called; unexpected calls (counted against): mail."


def test_duplicates_need_as_many_calls() -> None:
    assert ToolCorrectness().measure(case(tools("search"), tools("search", "search"))).score == 0.5
    twice = ToolCorrectness(match="exact").measure(case(tools("search", "search"), tools("search")))
    assert twice.score == 0.5 and twice.details["unexpected"] == [{"call": 1, "name": "search"}]


def test_ordered_reports_out_of_order_apart_from_missing() -> None:
    metric = ToolCorrectness(ordered=True)
    result = metric.measure(case(tools("refund", "lookup"), tools("lookup", "refund", "notify")))
    assert result.score == 1 / 3
    assert result.details["matched"] == [{"expected": 0, "call": 1, "name": "lookup"}]
    assert result.details["out_of_order"] == [{"expected": 1, "name": "refund", "calls": [0]}]
    assert result.details["unexpected"] == []
    assert result.details["missing"] == [{"expected": 2, "name": "notify"}]
    assert result.reason == "1 of 3 expected tools called in order; missing: notify; out of order: refund."
    # other calls in between do not break the order
    assert metric.measure(case(tools("lookup", "log", "refund", "notify"), tools("lookup", "refund", "notify"))).score == 1.0


def test_ordered_and_exact_is_one_only_for_the_exact_sequence() -> None:
    metric = ToolCorrectness(ordered=True, match="exact")
    assert metric.measure(case(tools("a", "b"), tools("a", "b"))).score == 1.0
    assert metric.measure(case(tools("b", "a"), tools("a", "b"))).score == 1 / 3  # 1 / (2 + 2 - 1)
    assert metric.measure(case(tools("a", "x", "b"), tools("a", "b"))).score == 2 / 3


def test_parameters_and_output_when_asked() -> None:
    called = [ToolCall(name="search", input_parameters={"q": "paris", "limit": 5}, output=["p"]),
              ToolCall(name="search", input_parameters={"q": "rome"}, output=["r"])]
    expected = [ToolCall(name="search", input_parameters={"q": "rome"}),
                ToolCall(name="search", input_parameters={"q": "paris"})]
    by_name = ToolCorrectness().measure(case(called, expected))
    exact_args = ToolCorrectness(evaluation_params=("name", "input_parameters")).measure(case(called, expected))
    subset_args = ToolCorrectness(evaluation_params=("name", "input_parameters"), parameter_match="subset")
    assert (by_name.score, exact_args.score, subset_args.measure(case(called, expected)).score) == (1.0, 0.5, 1.0)
    assert exact_args.details["missing"] == [{"expected": 1, "name": "search", "same_name_calls": [0]}]
    with_output = [ToolCall(name="search", input_parameters={"q": "rome"}, output=["r"])]
    metric = ToolCorrectness(evaluation_params=("name", "output"))
    assert metric.measure(case(called, with_output)).details["matched"] == [{"expected": 0, "call": 1, "name": "search"}]


def test_nothing_expected_edge_cases() -> None:
    assert ToolCorrectness().measure(case([], [])).score == 1.0
    assert ToolCorrectness(match="exact").measure(case([], [])).score == 1.0
    assert ToolCorrectness().measure(case(tools("search"), [])).score == 1.0
    assert ToolCorrectness(match="exact").measure(case(tools("search"), [])).score == 0.0
    nothing_called = ToolCorrectness().measure(case([], tools("search")))
    assert nothing_called.score == 0.0 and nothing_called.details["missing"] == [{"expected": 0, "name": "search"}]


@pytest.mark.parametrize("ordered", [False, True])
def test_nothing_expected_is_the_same_with_or_without_order(ordered: bool) -> None:
    # deepeval 4.1 scores 1.0 for nothing expected and nothing called in every mode, and 0.0 when nothing is
    # expected but something is called; ours ignores extra calls under "subset" whether or not something is expected.
    assert ToolCorrectness(ordered=ordered).measure(case([], [])).score == 1.0
    assert ToolCorrectness(ordered=ordered, match="exact").measure(case([], [])).score == 1.0
    assert ToolCorrectness(ordered=ordered).measure(case(tools("search"), [])).score == 1.0
    assert ToolCorrectness(ordered=ordered, match="exact").measure(case(tools("search"), [])).score == 0.0


def test_strict_mode_is_binary_with_threshold_one() -> None:
    metric = build_metric("tool_correctness", {"strict_mode": "true"})
    assert metric.threshold == 1.0
    result = metric.measure(case(tools("a"), tools("a", "b")))
    assert (result.score, result.raw_score, result.passed) == (0.0, 0.5, False)


def test_options_are_checked() -> None:
    with pytest.raises(Exception, match="evaluation_params must include 'name'"):
        build_metric("tool_correctness", {"evaluation_params": ["output"]})
    with pytest.raises(Exception, match="tool_correctness.match"):
        build_metric("tool_correctness", {"match": "some"})


def test_absent_fields_are_bad_input_but_empty_lists_are_not(tmp_path: Path) -> None:
    data = tmp_path / "agent.jsonl"
    data.write_text('{"input": "a", "tools_called": [], "expected_tools": []}\n{"input": "b", "expected_tools": []}\n')
    dataset = Dataset.load(data)
    with pytest.raises(DatasetError) as info:
        check_inputs(dataset, [ToolCorrectness()])
    assert str(info.value) == f"{data}:2: field 'tools_called': metric 'tool_correctness' needs it, and it is missing"
    with pytest.raises(DatasetError, match=r":2: field 'tools_called'"):
        check_inputs(dataset, [ArgumentCorrectness()])
    first = tmp_path / "first.jsonl"
    first.write_text(data.read_text().splitlines()[0] + "\n")
    check_inputs(Dataset.load(first), [ToolCorrectness(), ArgumentCorrectness()])
    # task_completion does not need tools_called, but it needs actual_output
    with pytest.raises(DatasetError, match=r":1: field 'actual_output'"):
        check_inputs(dataset, [TaskCompletion()])


def test_the_three_are_registered() -> None:
    assert {"tool_correctness", "argument_correctness", "task_completion"} <= set(metric_names())


# -- argument correctness --------------------------------------------------------------

WEATHER = TestCase(
    input="Will it rain in Paris tomorrow?",
    actual_output="Light rain in the afternoon.",
    tools_called=[
        ToolCall(name="geocode", description="Place to coordinates", input_parameters={"place": "Paris, France"},
                 output={"lat": 48.86, "lon": 2.35}),
        ToolCall(name="forecast", input_parameters={"lat": 48.86, "day": "today"}, output="x" * 30),
    ],
)


def test_argument_correctness_one_verdict_per_call_then_the_reason() -> None:
    judge = ScriptedBackend(json_values=[
        {"verdicts": [{"verdict": "yes", "reason": "Paris, France as asked."},
                      {"verdict": "no", "reason": " today, not tomorrow. "}]},
        {"reason": "The forecast asks for the wrong day."},
    ])
    result = ArgumentCorrectness(max_output_chars=28).measure(WEATHER, judge)
    assert (result.score, result.passed, result.reason) == (0.5, True, "The forecast asks for the wrong day.")
    assert result.details["verdicts"] == [
        {"call": 0, "name": "geocode", "arguments": '{"place": "Paris, France"}', "verdict": "yes",
         "reason": "Paris, France as asked."},
        {"call": 1, "name": "forecast", "arguments": '{"day": "today", "lat": 48.86}', "verdict": "no",
         "reason": "today, not tomorrow."},
    ]
    assert result.details["counts"] == {"yes": 1, "no": 1} and result.details["calls"] == 2
    first, second = judge.requests
    assert isinstance(first, JsonRequest) and isinstance(second, JsonRequest)
    assert (first.json_schema, first.max_tokens) == (call_verdicts_schema(2), 480)  # 32 + 2 * (200 + 24)
    assert first.json_schema["properties"]["verdicts"]["minItems"] == first.json_schema["properties"]["verdicts"]["maxItems"] == 2
    assert first.messages[-1].content == (
        "User input:\nWill it rain in Paris tomorrow?\n\nTool calls, in the order the agent made them:\n"
        '1. geocode (Place to coordinates)\n   arguments: {"place": "Paris, France"}\n'
        '   output: {"lat": 48.86, "lon": 2.35}\n'
        '2. forecast\n   arguments: {"day": "today", "lat": 48.86}\n'
        '   output: "xxxxxxxxxxxxxxxxxxxxxxxxxxx… [4 more characters]\n\n'
        'Give one verdict per tool call, in the same order:\n'
        '"yes" - the arguments are right for what the user asked (values taken from an earlier call\'s output are '
        'right when they fit the request);\n"no" - an argument is wrong, missing or made up.\n'
        "Add a short reason to each verdict.\nWrite exactly 2 verdicts.\n"
        'Answer in JSON: {"verdicts": [{"verdict": "yes" or "no", "reason": why}, one per tool call]}'
    )
    # the reason continues the verdicts conversation
    assert second.messages[:2] == first.messages and second.messages[2].role == "assistant"
    assert json.loads(second.messages[2].content)["verdicts"][1]["verdict"] == "no"
    assert second.messages[3].content.startswith("Your verdicts, call by call: 1. geocode: yes; 2. forecast: no.\n"
                                                 "With them, the argument correctness score is 0.5,")
    assert (second.json_schema, second.max_tokens) == (REASON_SCHEMA, REASON_TOKENS)


def test_argument_correctness_score_recomputed_from_its_recorded_verdicts() -> None:
    verdicts = ["no", "yes", "yes", "no", "yes"]
    called = [ToolCall(name=f"t{i}", input_parameters={"i": i}) for i in range(5)]
    judge = ScriptedBackend(json_values=[{"verdicts": [{"verdict": v, "reason": "r"} for v in verdicts]}])
    result = ArgumentCorrectness(include_reason=False).measure(case(called), judge)
    recorded = [item["verdict"] for item in result.details["verdicts"]]
    assert recorded == verdicts and result.score == recorded.count("yes") / len(recorded) == 0.6
    assert result.reason == "3 of 5 tool calls have the right arguments for the input."


def test_argument_correctness_with_no_call_asks_nothing() -> None:
    judge = ScriptedBackend()
    result = ArgumentCorrectness().measure(case([]), judge)
    assert (result.score, result.passed, judge.requests) == (1.0, True, [])
    assert result.details == {"calls": 0, "verdicts": [], "counts": {"yes": 0, "no": 0}}
    assert result.reason == "No tool was called, so no argument can be wrong."


def test_argument_correctness_strict_mode() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": [{"verdict": "yes", "reason": "r"}, {"verdict": "no", "reason": "r"}]}])
    result = build_metric("argument_correctness", {"strict_mode": True, "include_reason": False}).measure(WEATHER, judge)
    assert (result.score, result.raw_score, result.threshold, result.passed) == (0.0, 0.5, 1.0, False)


def test_a_verdict_list_of_the_wrong_length_never_reaches_the_score() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": [{"verdict": "yes", "reason": "r"}]}])
    result = ArgumentCorrectness().measure(WEATHER, judge)
    assert result.score is None and result.error is not None and result.error.startswith("SchemaViolation")


# -- task completion -------------------------------------------------------------------

STATED = {"task": "Say if it rains in Paris tomorrow.", "outcome": "It gave the forecast for today."}
#: log-probabilities whose renormalized distribution is 0.1, 0.1, 0.2, 0.2, 0.4 (covered mass 0.5)
LOGPROBS = {"1": -2.995732273553991, "2": -2.995732273553991, "3": -2.302585092994046, "4": -2.302585092994046,
            "5": -1.6094379124341003}


def test_task_completion_states_the_task_then_weights_the_scores() -> None:
    judge = ScriptedBackend(json_values=[STATED, {"reason": "Wrong day."}], logprobs=[LOGPROBS])
    result = TaskCompletion().measure(WEATHER, judge)
    expected = 0.1 * 1 + 0.1 * 2 + 0.2 * 3 + 0.2 * 4 + 0.4 * 5  # 3.7
    assert result.raw_score == pytest.approx(expected, abs=1e-12)
    assert result.score == pytest.approx((expected - 1) / 4, abs=1e-12)  # 0.675
    assert result.details["task"] == STATED["task"] and result.details["outcome"] == STATED["outcome"]
    assert result.details["method"] == "logprobs" and result.details["most_likely_score"] == 5.0
    assert result.details["covered_mass"] == pytest.approx(0.5)
    assert result.reason == "Wrong day."
    stated, scored, reason = judge.requests
    assert isinstance(stated, JsonRequest) and (stated.json_schema, stated.max_tokens) == (OUTCOME_SCHEMA, OUTCOME_TOKENS)
    assert "Final answer:\nLight rain in the afternoon." in stated.messages[-1].content
    assert isinstance(scored, DistributionRequest)
    assert scored.candidates == ("1", "2", "3", "4", "5") and scored.prefill == "Score: "
    assert scored.messages[:2] == stated.messages  # a follow-up turn of the same conversation
    assert json.loads(scored.messages[2].content) == STATED
    assert scored.messages[3].content.startswith("How completely did the agent achieve the task? Grade it from 1 to 5")
    assert isinstance(reason, JsonRequest) and reason.messages[:4] == scored.messages
    assert reason.messages[4].content == "Score: 3.7"
    assert "received the score 3.7 on the scale from 1 to 5" in reason.messages[5].content


def test_task_completion_without_tool_calls_shows_none() -> None:
    judge = ScriptedBackend(json_values=[STATED], logprobs=[LOGPROBS])
    TaskCompletion(include_reason=False).measure(TestCase(input="q", actual_output="a"), judge)
    assert "Tool calls, in order:\n(none)\n\nFinal answer:\na" in judge.requests[0].messages[-1].content


def test_task_completion_fallback_is_explicit_and_recorded() -> None:
    no_logprobs = Capabilities(json_schema=True, distribution=False, multi_token_candidates=False, max_top_logprobs=0)
    judge = ScriptedBackend(json_values=[STATED], capabilities=no_logprobs)
    refused = TaskCompletion(include_reason=False).measure(WEATHER, judge)
    assert refused.error is not None and "allow_fallback = true" in refused.error
    judge = ScriptedBackend(json_values=[STATED, {"score": 4}], capabilities=no_logprobs)
    result = TaskCompletion(include_reason=False, allow_fallback=True).measure(WEATHER, judge)
    assert (result.raw_score, result.score) == (4.0, 0.75)
    assert result.details["method"] == "verdict" and result.details["verdict"] == 4
    assert result.details["fallback"] == "logprobs -> verdict: the backend gives no log-probabilities"
    assert isinstance(judge.requests[1], JsonRequest) and judge.requests[1].json_schema == VERDICT_SCHEMA


def test_task_completion_strict_and_low_mass() -> None:
    strict = TaskCompletion(include_reason=False, strict_mode=True)
    assert strict.threshold == 1.0
    sure = {**{k: -9.0 for k in LOGPROBS}, "5": 0.0}  # p(5) ~ 0.9995: expected score above 4.5
    result = strict.measure(WEATHER, ScriptedBackend(json_values=[STATED], logprobs=[sure]))
    assert result.score == 1.0 and result.raw_score > 4.5
    assert strict.measure(WEATHER, ScriptedBackend(json_values=[STATED], logprobs=[LOGPROBS])).score == 0.0
    tiny = {k: -9.0 for k in LOGPROBS}
    low = TaskCompletion(include_reason=False).measure(WEATHER, ScriptedBackend(json_values=[STATED], logprobs=[tiny]))
    assert low.score is None and "min_covered_mass" in (low.error or "")


def test_the_example_loads_and_passes_the_input_checks() -> None:
    from localeval.config import RunConfig

    config = RunConfig.load(EXAMPLE / "eval.toml")
    dataset = Dataset.load(EXAMPLE / "agent.jsonl")
    check_inputs(dataset, config.build_metrics())
    assert [m.kind for m in config.build_metrics()] == [
        "tool_correctness", "tool_correctness", "argument_correctness", "task_completion"
    ]
    scores = {c.name: ToolCorrectness().measure(c).score for c in dataset.cases}
    assert scores == {"weather-paris": 1.0, "weather-wrong-place": 1.0, "flight-not-booked": 0.5,
                      "refund-out-of-order": 1.0, "capital-no-tool": 1.0, "sum-extra-search": 1.0,
                      "convert-twice": 0.5}
    strict = config.build_metrics()[1]
    assert {c.name: strict.measure(c).score for c in dataset.cases} == {
        "weather-paris": 1.0, "weather-wrong-place": 1 / 3, "flight-not-booked": 0.5, "refund-out-of-order": 1 / 3,
        "capital-no-tool": 1.0, "sum-extra-search": 0.5, "convert-twice": 0.5,
    }
