"""The DAG metric against a scripted judge: every branch of the example, the prompts, validation, options."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from scripted import ScriptedBackend, json_requests

from localeval.backends.base import DistributionRequest, JsonRequest, Message
from localeval.config import RunConfig
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import ConfigError, SchemaViolation, TruncatedOutput
from localeval.metrics import DAG, GEval, build_metric, metric_names
from localeval.metrics.dag import (
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from localeval.metrics.dag.walk import BINARY_SCHEMA, choice_schema, text_schema

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "dag"
HEADINGS = (
    "Copy the headings of the summary, in the order they appear, separated by commas. "
    "A heading is a word such as Intro, Body or Conclusion at the start of a line."
)
ORDERS = ("in order", "two out of order", "all out of order")
SUMMARY = "Intro: Ana opened the standup.\nBody: Ben finished the login page.\nConclusion: Release on Friday."
CASE = TestCase(input="Ana: standup. Ben: login page done.", actual_output=SUMMARY)


def format_correctness(**options: Any) -> DAG:
    """The example graph of examples/dag/eval.toml, built in Python (as docs/dag.md shows it)."""
    return DAG(
        name="format_correctness",
        root="headings",
        field_labels={"actual_output": "Summary"},
        nodes={
            "headings": TaskNode(
                instructions=HEADINGS, output_label="Headings", evaluation_params=["actual_output"],
                max_chars=100, children=["has_all"],
            ),
            "has_all": BinaryJudgementNode(
                criteria="Do the headings include all three of intro, body and conclusion?",
                children=[VerdictNode(verdict=False, score=0), VerdictNode(verdict=True, child="order")],
            ),
            "order": NonBinaryJudgementNode(
                criteria="Are the headings in the order intro, then body, then conclusion?",
                children=[
                    VerdictNode(verdict="in order", score=10),
                    VerdictNode(verdict="two out of order", score=4),
                    VerdictNode(verdict="all out of order", score=2),
                ],
            ),
        },
        **options,
    )


def user(request: JsonRequest | DistributionRequest) -> str:
    return request.messages[-1].content


# --- every branch of the example ------------------------------------------------------------


TASK = {"node": "headings", "kind": "task", "output": "Intro, Body, Conclusion"}
ALL_THERE = [
    TASK,
    {"node": "has_all", "kind": "binary_judgement", "verdict": True},
    {"node": "has_all.children[1]", "kind": "verdict", "verdict": True},
]
BRANCHES = {
    "missing": (
        [{"output": "Intro, Body"}, {"verdict": False}],
        0.0,
        [
            {**TASK, "output": "Intro, Body"},
            {"node": "has_all", "kind": "binary_judgement", "verdict": False},
            {"node": "has_all.children[0]", "kind": "verdict", "verdict": False, "score": 0},
        ],
    ),
    **{
        order: (
            [{"output": "Intro, Body, Conclusion"}, {"verdict": True}, {"verdict": order}],
            score / 10,
            [
                *ALL_THERE,
                {"node": "order", "kind": "non_binary_judgement", "verdict": order},
                {"node": f"order.children[{i}]", "kind": "verdict", "verdict": order, "score": score},
            ],
        )
        for i, (order, score) in enumerate(zip(ORDERS, (10, 4, 2)))
    },
}


@pytest.mark.parametrize("branch", list(BRANCHES))
def test_each_branch_of_the_example_gives_its_score_and_records_its_path(branch: str) -> None:
    replies, score, path = BRANCHES[branch]
    judge = ScriptedBackend(json_values=replies)
    result = format_correctness(include_reason=False).measure(CASE, judge)
    assert result.error is None
    assert result.score == score
    assert result.passed is (score >= 0.5)
    assert result.raw_score == score
    assert result.details == {"path": path}
    assert len(judge.requests) == len(replies)  # one judge call per task or judgement node on the path


def test_the_requests_are_bounded_schemas() -> None:
    judge = ScriptedBackend(json_values=BRANCHES["in order"][0])
    format_correctness(include_reason=False).measure(CASE, judge)
    task, has_all, order = json_requests(judge)
    assert (task.json_schema, task.max_tokens) == (text_schema("output", 100), 32 + 100)
    assert (has_all.json_schema, has_all.max_tokens) == (BINARY_SCHEMA, 32)
    assert (order.json_schema, order.max_tokens) == (choice_schema(list(ORDERS)), 32 + len("two out of order"))
    assert order.json_schema["properties"]["verdict"] == {"type": "string", "enum": list(ORDERS)}
    assert task.json_schema["properties"]["output"] == {
        "type": "string", "minLength": 1, "maxLength": 100, "pattern": '^[^"\\\\\\x00-\\x1f]{1,100}$',
    }


def test_the_prompts_show_the_fields_and_the_task_outputs_under_their_labels() -> None:
    judge = ScriptedBackend(json_values=BRANCHES["in order"][0])
    format_correctness(include_reason=False).measure(CASE, judge)
    task, has_all, order = json_requests(judge)
    assert task.messages == (
        Message(role="system", content="You do one small task on a text and write only the result."),
        Message(role="user", content=f"Task: {HEADINGS}\n\nSummary:\n{SUMMARY}\n\nWrite only the result of the task."),
    )
    assert user(has_all) == (
        "Headings:\nIntro, Body, Conclusion\n\n"
        "Question: Do the headings include all three of intro, body and conclusion?\n"
        "Answer true if the answer is yes, false if it is no.\n"
        'Answer in JSON: {"verdict": true or false}'
    )
    assert user(order) == (
        "Headings:\nIntro, Body, Conclusion\n\n"
        "Question: Are the headings in the order intro, then body, then conclusion?\n"
        'Answer with the verdict that fits best, one of: "in order", "two out of order", "all out of order".\n'
        'Answer in JSON: {"verdict": one of those verdicts}'
    )


def test_the_example_config_is_the_python_graph() -> None:
    [metric] = RunConfig.load(EXAMPLE / "eval.toml").build_metrics()
    assert isinstance(metric, DAG)
    assert metric.graph() == format_correctness().graph()
    assert (metric.name, metric.field_labels, metric.threshold) == ("format_correctness", {"actual_output": "Summary"}, 0.5)
    assert metric.required_fields() == ("actual_output",)
    dataset = Dataset.load(EXAMPLE / "meetings.jsonl")
    assert 8 <= len(dataset.cases) <= 12
    assert {tag for case in dataset.cases for tag in case.tags} == {
        "in-order", "missing-heading", "two-out-of-order", "all-out-of-order",
    }


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("order", "score", "passed"), [("in order", 1.0, True), ("two out of order", 0.0, False)])
def test_strict_mode_gives_one_only_for_a_perfect_path(order: str, score: float, passed: bool) -> None:
    metric = format_correctness(include_reason=False, strict_mode=True)
    assert metric.threshold == 1.0
    judge = ScriptedBackend(json_values=[{"output": "Intro, Body, Conclusion"}, {"verdict": True}, {"verdict": order}])
    result = metric.measure(CASE, judge)
    assert (result.score, result.passed) == (score, passed)
    assert result.raw_score == {"in order": 1.0, "two out of order": 0.4}[order]


def test_the_reason_is_written_last_and_told_the_path_and_the_score() -> None:
    replies = [*BRANCHES["two out of order"][0], {"reason": "Body and conclusion are swapped."}]
    judge = ScriptedBackend(json_values=replies)
    result = format_correctness().measure(CASE, judge)
    assert (result.score, result.reason) == (0.4, "Body and conclusion are swapped.")
    *_, last_call, reason = json_requests(judge)
    assert (reason.json_schema, reason.max_tokens) == (text_schema("reason", 400), 32 + 400)
    # a follow-up to the last judgement on the path: its conversation, the judge's reply, the question
    n = len(last_call.messages)
    assert reason.messages[:n] == last_call.messages
    assert reason.messages[n:-1] == (Message(role="assistant", content='{"verdict": "two out of order"}'),)
    assert user(reason) == (
        "How the output was judged, step by step:\n"
        "- Headings: Intro, Body, Conclusion\n"
        "- Do the headings include all three of intro, body and conclusion? -> true\n"
        "- Are the headings in the order intro, then body, then conclusion? -> two out of order\n"
        "- score 4 out of 10\n\n"
        "The score is 0.4, on a scale from 0 to 1. Say why in one or two sentences.\n"
        'Answer in JSON: {"reason": your explanation}'
    )
    assert "reason_error" not in result.details


def test_without_a_reason_the_reason_is_the_path() -> None:
    judge = ScriptedBackend(json_values=BRANCHES["missing"][0])
    result = format_correctness(include_reason=False).measure(CASE, judge)
    assert result.reason == (
        "Headings: Intro, Body; Do the headings include all three of intro, body and conclusion? -> false; "
        "score 0 out of 10"
    )


def test_a_failed_reason_leaves_the_score_and_says_why() -> None:
    judge = ScriptedBackend(json_values=[*BRANCHES["missing"][0], TruncatedOutput("cut off")])
    result = format_correctness().measure(CASE, judge)
    assert (result.error, result.score) == (None, 0.0)
    assert result.details["reason_error"] == "TruncatedOutput: cut off"


def test_prompt_files_can_be_overridden(tmp_path: Path) -> None:
    for name in ("task", "judgement", "reason"):
        (tmp_path / f"{name}.txt").write_text(f"[[user]]\nmy {name}: {{{{ outputs if outputs is defined else steps }}}}\n")
    metric = format_correctness(
        task_prompt=tmp_path / "task.txt", judgement_prompt=tmp_path / "judgement.txt",
        reason_prompt=tmp_path / "reason.txt",
    )
    judge = ScriptedBackend(json_values=[*BRANCHES["missing"][0], {"reason": "No conclusion."}])
    assert metric.measure(CASE, judge).score == 0.0
    assert [user(r) for r in json_requests(judge)] == [
        "my task: {}",
        "my judgement: {'Headings': 'Intro, Body'}",
        (
            "my reason: ['Headings: Intro, Body', "
            "'Do the headings include all three of intro, body and conclusion? -> false', 'score 0 out of 10']"
        ),
    ]


# --- errors become error results naming the node --------------------------------------------


def test_a_backend_failure_is_an_error_result_naming_the_node() -> None:
    judge = ScriptedBackend(json_values=[{"output": "Intro, Body, Conclusion"}, {"verdict": True}, SchemaViolation("bad")])
    result = format_correctness().measure(CASE, judge)
    assert (result.score, result.passed) == (None, None)
    assert result.error == "SchemaViolation: node 'order': bad"


def test_a_missing_field_is_an_error_result_before_any_call() -> None:
    judge = ScriptedBackend()
    result = format_correctness().measure(TestCase(input="q"), judge)
    assert result.error == "MetricInputError: metric 'format_correctness' needs field 'actual_output', which is missing"
    assert judge.requests == []


def test_without_a_judge_it_is_an_error_result() -> None:
    assert format_correctness().measure(CASE).error == "BackendError: metric 'format_correctness' needs a judge backend"


# --- G-Eval as a verdict's child -------------------------------------------------------------


def logprobs(**probabilities: float) -> dict[str, float]:
    return {str(s): math.log(probabilities.get(str(s), 0.0)) if probabilities.get(str(s)) else -math.inf for s in range(1, 6)}


def with_geval(geval: GEval) -> DAG:
    return DAG(
        root="relevant",
        nodes={
            "relevant": BinaryJudgementNode(
                criteria="Is the output about the input?", evaluation_params=["input", "actual_output"],
                children=["off_topic", "on_topic"],
            ),
            "off_topic": VerdictNode(verdict=False, score=0),
            "on_topic": VerdictNode(verdict=True, geval=geval),
        },
        include_reason=False,
    )


def test_a_geval_child_scores_the_case_and_its_details_are_nested() -> None:
    geval = GEval(name="clarity", evaluation_steps=("Is it clear?",), evaluation_params=("actual_output", "expected_output"), include_reason=False)
    metric = with_geval(geval)
    assert metric.required_fields() == ("input", "actual_output", "expected_output")
    judge = ScriptedBackend(json_values=[{"verdict": True}], logprobs=[logprobs(**{"3": 0.5, "5": 0.5})])
    case = CASE.model_copy(update={"expected_output": "A summary with three headings."})
    result = metric.measure(case, judge)
    assert result.error is None
    assert result.score == 0.75  # expected score 4 on 1-5
    step = result.details["path"][-1]
    assert step["node"] == "on_topic" and step["geval"]["metric"] == "clarity"
    assert step["geval"]["score"] == 0.75
    assert step["geval"]["details"]["raw_score"] == pytest.approx(4.0, rel=1e-12)
    assert isinstance(judge.requests[1], DistributionRequest)
    assert "Actual Output:" in user(judge.requests[1]) and "Expected Output:" in user(judge.requests[1])


def test_after_a_geval_child_the_reason_follows_the_judgement_that_chose_it() -> None:
    metric = with_geval(GEval(evaluation_steps=("Is it clear?",), include_reason=False))
    metric = metric.model_copy(update={"include_reason": True})
    judge = ScriptedBackend(json_values=[{"verdict": True}, {"reason": "On topic and clear."}], logprobs=[logprobs(**{"5": 1.0})])
    result = metric.measure(CASE, judge)
    judgement, _, reason = judge.requests
    assert isinstance(reason, JsonRequest) and result.reason == "On topic and clear."
    assert reason.messages == (
        *judgement.messages,
        Message(role="assistant", content='{"verdict": true}'),
        Message(
            role="user",
            content="How the output was judged, step by step:\n- Is the output about the input? -> true\n"
            "- G-Eval 'geval' scored 1\n\nThe score is 1, on a scale from 0 to 1. Say why in one or two sentences.\n"
            'Answer in JSON: {"reason": your explanation}',
        ),
    )


def test_prepare_writes_the_geval_steps_once() -> None:
    metric = with_geval(GEval(criteria="The summary is clear.", evaluation_params=("actual_output",), include_reason=False))
    judge = ScriptedBackend(
        json_values=[{"steps": ["Read it.", "Judge clarity."]}, {"verdict": True}, {"verdict": True}],
        logprobs=[logprobs(**{"5": 1.0}), logprobs(**{"1": 1.0})],
    )
    prepared = metric.prepare(judge)
    assert prepared is not metric and prepared.prepare(judge) is prepared
    scores = [prepared.measure(CASE, judge).score for _ in range(2)]
    assert scores == [1.0, 0.0]
    steps_requests = [r for r in judge.requests if isinstance(r, JsonRequest) and "steps" in r.json_schema["properties"]]
    assert len(steps_requests) == 1
    geval = prepared.graph().nodes["on_topic"].geval  # type: ignore[union-attr]
    assert geval is not None and geval.evaluation_steps == ("Read it.", "Judge clarity.")


def test_a_geval_failure_names_the_verdict_node() -> None:
    metric = with_geval(GEval(evaluation_steps=("Is it clear?",), include_reason=False))
    judge = ScriptedBackend(json_values=[{"verdict": True}], logprobs=[{"1": -50.0, "2": -50.0, "3": -50.0, "4": -50.0, "5": -50.0}])
    result = metric.measure(CASE.model_copy(update={"input": "q"}), judge)
    assert result.error is not None and result.error.startswith("BackendError: node 'on_topic': the valid scores covered")


# --- graphs beyond a tree ---------------------------------------------------------------------


def test_task_roots_run_in_order_and_a_judgement_sees_both_outputs() -> None:
    metric = DAG(
        root=["names", "dates"],
        include_reason=False,
        nodes={
            "names": TaskNode(instructions="List the names.", output_label="Names", evaluation_params=["input"], children=["ok"]),
            "dates": TaskNode(instructions="List the dates.", output_label="Dates", evaluation_params=["input"], children=["ok"]),
            "ok": BinaryJudgementNode(
                criteria="Is every name given a date?",
                children=[VerdictNode(verdict=True, score=10), VerdictNode(verdict=False, score=3)],
            ),
        },
    )
    judge = ScriptedBackend(json_values=[{"output": "Ana, Ben"}, {"output": "Monday"}, {"verdict": False}])
    result = metric.measure(CASE, judge)
    assert result.score == 0.3
    assert [s["node"] for s in result.details["path"]] == ["names", "dates", "ok", "ok.children[1]"]
    assert user(json_requests(judge)[1]).startswith("Task: List the dates.\n\nInput:\n")
    assert "Names:\nAna, Ben" in user(json_requests(judge)[1])  # a later task sees the earlier output
    assert user(json_requests(judge)[2]).startswith("Names:\nAna, Ben\n\nDates:\nMonday\n\nQuestion:")


def test_a_shared_node_runs_on_either_branch() -> None:
    shared = {
        "kind": "binary_judgement", "criteria": "Is it polite?", "evaluation_params": ["actual_output"],
        "children": [{"kind": "verdict", "verdict": True, "score": 8}, {"kind": "verdict", "verdict": False, "score": 1}],
    }
    metric = build_metric("dag", {
        "root": "kind", "include_reason": False,
        "nodes": {
            "kind": {
                "kind": "non_binary_judgement", "criteria": "What is it?", "evaluation_params": ["actual_output"],
                "children": [
                    {"kind": "verdict", "verdict": "answer", "child": "polite"},
                    {"kind": "verdict", "verdict": "refusal", "child": "polite"},
                    {"kind": "verdict", "verdict": "other", "score": 0},
                ],
            },
            "polite": shared,
        },
    })
    for kind in ("answer", "refusal"):
        judge = ScriptedBackend(json_values=[{"verdict": kind}, {"verdict": True}])
        result = metric.measure(CASE, judge)
        assert result.score == 0.8
        assert [s["node"] for s in result.details["path"]] == ["kind", f"kind.children[{kind == 'refusal':d}]", "polite", "polite.children[0]"]


def test_an_inline_child_of_a_verdict_is_named_by_its_place() -> None:
    metric = build_metric("dag", {
        "root": "a", "include_reason": False,
        "nodes": {"a": binary(verdict(False), verdict(True, score=None, child=binary(verdict(True, score=9), verdict(False))))},
    })
    judge = ScriptedBackend(json_values=[{"verdict": True}, {"verdict": True}])
    result = metric.measure(CASE, judge)
    assert result.score == 0.9
    assert [s["node"] for s in result.details["path"]] == [
        "a", "a.children[1]", "a.children[1].child", "a.children[1].child.children[0]",
    ]


def test_a_run_orders_calls_by_the_first_roots_prompt() -> None:
    metric = format_correctness()
    judge = ScriptedBackend(json_values=BRANCHES["missing"][0])
    metric.model_copy(update={"include_reason": False}).measure(CASE, judge)
    first = json_requests(judge)[0]
    assert metric.prompt_start(CASE) == "\n".join(m.content for m in first.messages)


# --- validation: every rule names the node ---------------------------------------------------


def verdict(value: bool | str, **rest: Any) -> dict[str, Any]:
    return {"kind": "verdict", "verdict": value, **({"score": 5} if not rest else rest)}


def binary(*children: Any, **rest: Any) -> dict[str, Any]:
    return {"kind": "binary_judgement", "criteria": "Yes?", "evaluation_params": ["actual_output"], "children": list(children), **rest}


def task(*children: str, **rest: Any) -> dict[str, Any]:
    return {"kind": "task", "instructions": "Do it.", "output_label": "Out", "evaluation_params": ["actual_output"], "children": list(children), **rest}


YES_NO = [verdict(True), verdict(False)]
INVALID: dict[str, tuple[Any, dict[str, Any], str]] = {
    "unknown child": ("a", {"a": task("b")}, "node 'a': child 'b' is not a node"),
    "unknown root": ("x", {"a": binary(*YES_NO)}, "root 'x' is not a node (nodes: a, a.children[0], a.children[1])"),
    "cycle": (
        "a",
        {"a": task("b"), "b": task("c", output_label="B"), "c": task("b", output_label="C")},
        "the nodes form a cycle: b -> c -> b",
    ),
    "task leaf": ("a", {"a": task()}, "task node 'a' has no children: a leaf must be a verdict node"),
    "judgement leaf": ("a", {"a": binary()}, "binary judgement node 'a' has no children: a leaf must be a verdict node"),
    "verdict root": ("v", {"v": verdict(True)}, "verdict node 'v' is a root: a root must be a task or judgement node"),
    "two trues": ("a", {"a": binary(verdict(True), verdict(True))}, "binary judgement node 'a' needs exactly two verdict children, one true and one false; it has [true, true]"),
    "one child": ("a", {"a": binary(verdict(True))}, "binary judgement node 'a' needs exactly two verdict children, one true and one false; it has [true]"),
    "string under binary": ("a", {"a": binary(verdict(True), verdict("no"))}, "verdict node 'a.children[1]' has verdict 'no' under binary judgement node 'a': under a binary judgement node a verdict is true or false"),
    "bool under non-binary": (
        "a", {"a": binary(verdict("x"), verdict(True), kind="non_binary_judgement")},
        "verdict node 'a.children[1]' has verdict true under non-binary judgement node 'a': under a non-binary judgement node a verdict is a non-blank string",
    ),
    "repeated verdict": (
        "a", {"a": binary(verdict("x"), "y", kind="non_binary_judgement"), "y": verdict("x")},
        "non-binary judgement node 'a' has the verdict 'x' twice (verdict nodes 'a.children[0]' and 'y'); its verdicts must be distinct",
    ),
    "one verdict": ("a", {"a": binary(verdict("x"), kind="non_binary_judgement")}, "non-binary judgement node 'a' needs at least two verdict children"),
    "score and child": ("a", {"a": binary(verdict(True, score=1, child="b"), verdict(False)), "b": binary(*YES_NO)}, "verdict node 'a.children[0]' needs exactly one of score, child or geval; it has score and child"),
    "neither": ("a", {"a": binary(verdict(True, score=None), verdict(False))}, "verdict node 'a.children[0]' needs exactly one of score, child or geval; it has none"),
    "score 11": ("a", {"a": binary(verdict(True, score=11), verdict(False))}, "verdict node 'a.children[0]' has score 11: a score is from 0 to 10"),
    "score -1": ("a", {"a": binary(verdict(True), "neg"), "neg": verdict(False, score=-1)}, "verdict node 'neg' has score -1: a score is from 0 to 10"),
    "verdict under task": ("a", {"a": task("v"), "v": verdict(True)}, "verdict node 'v' has parent 'a', a task node: a verdict node's parent must be a judgement node"),
    "verdict under verdict": (
        "a", {"a": binary(verdict(True, child="v"), verdict(False)), "v": verdict(True)},
        "verdict node 'v' has parent 'a.children[0]', a verdict node: a verdict node's parent must be a judgement node",
    ),
    "task under judgement": ("a", {"a": binary("t", verdict(False)), "t": task("a")}, "the nodes form a cycle: a -> t -> a"),
    "judgement child not a verdict": (
        "a", {"a": binary("t", verdict(False)), "t": task("b"), "b": binary(*YES_NO)},
        "judgement node 'a': child 't' is a task node; a judgement node's children must be verdict nodes",
    ),
    "unreachable": ("a", {"a": binary(*YES_NO), "lost": binary(*YES_NO)}, "node 'lost' cannot be reached from the root"),
    "two judgements at once": (
        "a", {"a": task("b", "c"), "b": binary(*YES_NO), "c": binary(*YES_NO)},
        "from the root, a run reaches 2 judgement nodes at once ('b', 'c'): task nodes that run together must all lead to the same judgement node, so that a run ends at one verdict",
    ),
    "two judgement roots": (
        ["a", "b"], {"a": binary(*YES_NO), "b": binary(*YES_NO)},
        "from the roots, a run reaches 2 judgement nodes at once ('a', 'b')",
    ),
    "a verdict's child forks": (
        "a", {"a": binary(verdict(True, child="t"), verdict(False)), "t": task("b", "c"), "b": binary(*YES_NO), "c": binary(*YES_NO)},
        "from verdict node 'a.children[0]', a run reaches 2 judgement nodes at once ('b', 'c')",
    ),
    "same label": (
        ["a", "b"], {"a": task("j"), "b": task("j"), "j": binary(*YES_NO)},
        "task nodes 'a' and 'b' both write 'Out': output_label must be distinct",
    ),
    "sees nothing": ("a", {"a": binary(*YES_NO, evaluation_params=[])}, "binary judgement node 'a' sees nothing: give it evaluation_params, or put a task node before it on every path"),
    "unknown field": ("a", {"a": binary(*YES_NO, evaluation_params=["summary"])}, "node 'a': evaluation_params must name test-case fields, got ['summary']"),
    "no root": ([], {"a": binary(*YES_NO)}, "root must name at least one node"),
    "id used twice": ("a", {"a": binary(*YES_NO), "a.children[0]": verdict(True)}, "node id 'a.children[0]' is used twice"),
}


@pytest.mark.parametrize("rule", list(INVALID))
def test_an_invalid_graph_is_refused_naming_the_node(rule: str) -> None:
    root, nodes, message = INVALID[rule]
    with pytest.raises(ValidationError) as info:
        DAG(root=root, nodes=nodes)
    assert message in str(info.value)
    with pytest.raises(ConfigError) as config_info:
        build_metric("dag", {"root": root, "nodes": nodes}, where="eval.toml: metrics[1]")
    assert str(config_info.value).startswith(f"eval.toml: metrics[1]: dag: {message}")


def test_a_typo_in_an_inline_node_names_its_place() -> None:
    nodes = {"a": binary(verdict(True), {"kind": "verdict", "verdict": False, "scor": 0})}
    with pytest.raises(ConfigError) as info:
        build_metric("dag", {"root": "a", "nodes": nodes})
    assert str(info.value) == "dag.nodes.a.binary_judgement.children.1.node.verdict.scor: Extra inputs are not permitted"


def test_field_labels_must_name_fields() -> None:
    with pytest.raises(ConfigError, match=r"field_labels must name test-case fields, got \['summary'\]"):
        build_metric("dag", {"root": "a", "nodes": {"a": binary(*YES_NO)}, "field_labels": {"summary": "S"}})


# --- config files ----------------------------------------------------------------------------


CONFIG = """
[dataset]
path = "cases.jsonl"

[[metrics]]
metric = "dag"
name = "polite"
root = "tone"
judgement_prompt = "prompts/judgement.txt"

[metrics.nodes.tone]
kind = "binary_judgement"
criteria = "Is the answer polite?"
evaluation_params = ["actual_output"]
children = ["rude", "polite"]

[metrics.nodes.rude]
kind = "verdict"
verdict = false
score = 0

[metrics.nodes.polite]
kind = "verdict"
verdict = true
score = 10
"""


def test_a_config_file_builds_the_metric_and_its_prompt_paths_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "judgement.txt").write_text("[[user]]\nMine: {{ criteria }}\n", encoding="utf-8")
    (tmp_path / "eval.toml").write_text(CONFIG, encoding="utf-8")
    [metric] = RunConfig.load(tmp_path / "eval.toml").build_metrics()
    assert isinstance(metric, DAG)
    assert metric.judgement_prompt == tmp_path / "prompts" / "judgement.txt"
    judge = ScriptedBackend(json_values=[{"verdict": True}, {"reason": "It says please."}])
    result = metric.measure(CASE, judge)
    assert (result.metric, result.kind, result.score, result.reason) == ("polite", "dag", 1.0, "It says please.")
    assert user(json_requests(judge)[0]) == "Mine: Is the answer polite?"


def test_a_config_error_names_the_file_and_the_node(tmp_path: Path) -> None:
    (tmp_path / "eval.toml").write_text(CONFIG.replace("score = 10", "score = 12"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        RunConfig.load(tmp_path / "eval.toml").build_metrics()
    assert str(info.value) == (
        f"{tmp_path / 'eval.toml'}: metrics[1]: dag: verdict node 'polite' has score 12: a score is from 0 to 10"
    )


def test_dag_is_registered() -> None:
    assert "dag" in metric_names()
    assert isinstance(build_metric("dag", {"root": "a", "nodes": {"a": binary(*YES_NO)}}), DAG)


def test_a_metric_is_frozen_and_keeps_nothing_of_the_case() -> None:
    metric = format_correctness(include_reason=False)
    before = metric.model_dump()
    metric.measure(CASE, ScriptedBackend(json_values=BRANCHES["missing"][0]))
    assert metric.model_dump() == before
    with pytest.raises(ValidationError):
        metric.root = ("has_all",)  # type: ignore[misc]
