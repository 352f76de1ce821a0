"""Running a checked graph on one case: the judge calls, the path taken, the score.

Nodes run in topological order, only those on the path: the roots, every child
of a task node that ran, the verdict child that a judgement chose, and a
verdict's child. Each judge call is schema-constrained JSON with a bound on
its length, so a small model cannot answer off the menu:

* task node: ``{"output": one line of text}``, at most the node's ``max_chars``;
* binary judgement node: ``{"verdict": boolean}``;
* non-binary judgement node: ``{"verdict": one of the verdict children's strings}``.

The graph's checks (:mod:`localeval.metrics.dag.graph`) guarantee that a run
ends at exactly one verdict node with a score or a G-Eval metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.errors import BackendError, PromptError
from localeval.metrics.base import field_text
from localeval.metrics.dag.graph import MAX_SCORE, Graph
from localeval.metrics.dag.nodes import (
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from localeval.metrics.judged import Exchange, ask, format_score
from localeval.prompts import RenderedPrompt, load_prompt

#: Room around a reply's value: the braces, the key, white space.
SCHEMA_TOKENS = 32
BINARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "boolean"}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def text_schema(key: str, max_chars: int) -> dict[str, Any]:
    """``{key: one line of 1 to max_chars characters}``, with no quote, backslash or control character.

    The pattern is what the grammar is built from (llama-cpp-python turns a
    ``pattern`` into the string's grammar, and ignores min/maxLength then). Its
    own string rule lets raw newlines into a string, which is not JSON; and on a
    string without escapes the pattern means the same on the JSON text as on
    the value, so a constrained reply always parses and validates.
    """
    return {
        "type": "object",
        "properties": {
            key: {
                "type": "string",
                "minLength": 1,
                "maxLength": max_chars,
                "pattern": f"^[^\"\\\\\\x00-\\x1f]{{1,{max_chars}}}$",
            }
        },
        "required": [key],
        "additionalProperties": False,
    }


def choice_schema(verdicts: list[str]) -> dict[str, Any]:
    """A non-binary judgement node's reply: ``{"verdict": one of verdicts}``."""
    return {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": verdicts}},
        "required": ["verdict"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Prompts:
    """The prompt files for task and judgement nodes (None: the shipped ones) and field labels."""

    task: Path | None = None
    judgement: Path | None = None
    field_labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, name: str) -> str:
        return self.field_labels.get(name) or name.replace("_", " ").title()


@dataclass(frozen=True)
class Outcome:
    """Where a run ended: the score in [0, 1], the steps taken (each a dict, as reported), and
    the last task or judgement call on the path (None if there was none), which the reason continues."""

    score: float
    steps: list[dict[str, Any]]
    last_call: Exchange | None = None


@dataclass
class _Run:
    graph: Graph
    case: TestCase
    judge: Backend
    prompts: Prompts
    outputs: dict[str, str] = field(default_factory=dict)  #: task output_label -> output
    steps: list[dict[str, Any]] = field(default_factory=list)
    score: float | None = None
    last_call: Exchange | None = None


def walk(graph: Graph, case: TestCase, judge: Backend, prompts: Prompts) -> Outcome:
    """Run ``graph`` on ``case``. A failed judge call is re-raised naming its node."""
    run = _Run(graph, case, judge, prompts)
    active = set(graph.roots)
    for node_id in graph.order:
        if node_id in active:
            try:
                active.update(_visit(run, node_id))
            except (BackendError, PromptError) as err:
                raise type(err)(f"node '{node_id}': {err}") from err
    if run.score is None:  # the graph's checks make this unreachable
        raise BackendError("the run ended without reaching a verdict node with a score")
    return Outcome(score=run.score, steps=run.steps, last_call=run.last_call)


def _visit(run: _Run, node_id: str) -> tuple[str, ...]:
    """Run one node, record its step, and return the ids of the nodes it activates."""
    node = run.graph.nodes[node_id]
    if isinstance(node, TaskNode):
        return _task(run, node_id, node)
    if isinstance(node, (BinaryJudgementNode, NonBinaryJudgementNode)):
        return _judgement(run, node_id, node)
    return _verdict(run, node_id, node)


@dataclass(frozen=True)
class NodeRequest:
    """What a task or judgement node asks the judge: the prompt, the reply's schema, its token bound."""

    prompt: RenderedPrompt
    schema: dict[str, Any]
    max_tokens: int


def node_request(
    graph: Graph, node_id: str, case: TestCase, prompts: Prompts, outputs: Mapping[str, str]
) -> NodeRequest:
    """The request of task or judgement node ``node_id``, given the task ``outputs`` so far."""
    node = graph.nodes[node_id]
    if isinstance(node, VerdictNode):
        raise ValueError(f"verdict node '{node_id}' asks the judge nothing")
    fields = _fields(case, prompts, node.evaluation_params)
    if isinstance(node, TaskNode):
        prompt = load_prompt("dag/task", prompts.task).render(
            fields=fields, outputs=dict(outputs), instructions=node.instructions
        )
        return NodeRequest(prompt, text_schema("output", node.max_chars), SCHEMA_TOKENS + node.max_chars)
    binary = isinstance(node, BinaryJudgementNode)
    choices = [str(v) for v in _verdicts(graph, node_id).values()]
    prompt = load_prompt("dag/judgement", prompts.judgement).render(
        fields=fields, outputs=dict(outputs), criteria=node.criteria, binary=binary,
        verdicts=[] if binary else choices,
    )
    if binary:
        return NodeRequest(prompt, BINARY_SCHEMA, SCHEMA_TOKENS)
    return NodeRequest(prompt, choice_schema(choices), SCHEMA_TOKENS + max(len(c) for c in choices))


def _ask(run: _Run, request: NodeRequest) -> Any:
    """The value of the judge's reply to a node's request; the call is kept as the run's last."""
    reply = ask(run.judge, request.prompt, request.schema, request.max_tokens)
    run.last_call = Exchange(request.prompt, reply.text)
    return reply.value


def _task(run: _Run, node_id: str, node: TaskNode) -> tuple[str, ...]:
    request = node_request(run.graph, node_id, run.case, run.prompts, run.outputs)
    output = str(_ask(run, request)["output"]).strip()
    run.outputs[node.output_label] = output
    run.steps.append({"node": node_id, "kind": node.kind, "output": output})
    return run.graph.children(node_id)


def _judgement(run: _Run, node_id: str, node: BinaryJudgementNode | NonBinaryJudgementNode) -> tuple[str, ...]:
    request = node_request(run.graph, node_id, run.case, run.prompts, run.outputs)
    chosen = _ask(run, request)["verdict"]
    run.steps.append({"node": node_id, "kind": node.kind, "verdict": chosen})
    verdicts = _verdicts(run.graph, node_id)
    return tuple(child for child, verdict in verdicts.items() if _same(verdict, chosen))


def _verdicts(graph: Graph, node_id: str) -> dict[str, bool | str]:
    """A judgement node's verdict children: id -> verdict."""
    children = {child: graph.nodes[child] for child in graph.children(node_id)}
    return {child: node.verdict for child, node in children.items() if isinstance(node, VerdictNode)}


def _verdict(run: _Run, node_id: str, node: VerdictNode) -> tuple[str, ...]:
    step: dict[str, Any] = {"node": node_id, "kind": node.kind, "verdict": node.verdict}
    run.steps.append(step)
    if node.score is not None:
        step["score"] = node.score
        run.score = node.score / MAX_SCORE
    elif node.geval is not None:
        judged = node.geval.verdict(run.case, run.judge)
        step["geval"] = {
            "metric": node.geval.display_name, "score": judged.score, "reason": judged.reason,
            "details": judged.details,
        }
        run.score = judged.score
    return run.graph.children(node_id)


def _same(verdict: bool | str, chosen: Any) -> bool:
    # True == 1 in Python: compare types too, though the graph's checks keep them apart.
    return type(verdict) is type(chosen) and verdict == chosen


def _fields(case: TestCase, prompts: Prompts, names: tuple[str, ...]) -> dict[str, str]:
    return {prompts.label(name): field_text(case.field_value(name)) for name in names}


def path_lines(graph: Graph, steps: list[dict[str, Any]]) -> list[str]:
    """The steps as the reason prompt and the summary show them, one line each."""
    lines = []
    for step in steps:
        node = graph.nodes[step["node"]]
        if isinstance(node, TaskNode):
            lines.append(f"{node.output_label}: {step['output']}")
        elif isinstance(node, (BinaryJudgementNode, NonBinaryJudgementNode)):
            lines.append(f"{node.criteria} -> {_show(step['verdict'])}")
        elif "score" in step:
            lines.append(f"score {step['score']} out of {MAX_SCORE}")
        elif "geval" in step:
            lines.append(f"G-Eval '{step['geval']['metric']}' scored {format_score(step['geval']['score'])}")
    return lines


def _show(verdict: bool | str) -> str:
    return str(verdict).lower() if isinstance(verdict, bool) else verdict
