"""The DAG metric: a decision graph of small judge calls that ends at a score you chose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from localeval.backends.base import Backend
from localeval.data.case import CASE_FIELDS, TestCase
from localeval.errors import PromptError
from localeval.metrics.dag.graph import Graph, build_graph
from localeval.metrics.dag.nodes import AnyNode, Node, VerdictNode
from localeval.metrics.dag.walk import (
    SCHEMA_TOKENS,
    Prompts,
    node_request,
    path_lines,
    text_schema,
    walk,
)
from localeval.metrics.judged import JudgedMetric, Judgement

#: The longest reason the judge may write.
REASON_CHARS = 400


class DAG(JudgedMetric):
    """Score a case by walking a graph of task, judgement and verdict nodes.

    ``nodes`` maps ids to nodes (children refer to ids, or are given inline);
    ``root`` names the node (or nodes) where a run starts. The graph is checked
    when the metric is built (see :mod:`localeval.metrics.dag.graph`). The score is
    the reached verdict's ``score / 10``, or its G-Eval metric's score;
    ``details["path"]`` records every step. In strict mode the score is 1.0 only
    when the path gives 1.0, else 0.0, and the threshold is 1.0. The reason is a
    follow-up to the last task or judgement call on the path, told the path and the score.
    """

    kind = "dag"
    prompt_folder = "dag"
    #: One line without quotes or backslashes, like a task output: see :func:`text_schema`.
    reason_schema = text_schema("reason", REASON_CHARS)
    reason_tokens = SCHEMA_TOKENS + REASON_CHARS

    root: tuple[str, ...] = Field(description="The id of the node where a run starts (or a list of ids).")
    nodes: dict[str, Node] = Field(description="Every node by id.")
    field_labels: dict[str, str] = Field(
        default_factory=dict, description="How prompts name a field, e.g. actual_output -> 'Summary'."
    )
    task_prompt: Path | None = Field(None, description="Your own prompt file for task nodes.")
    judgement_prompt: Path | None = Field(None, description="Your own prompt file for judgement nodes.")

    @field_validator("root", mode="before")
    @classmethod
    def _one_root(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> DAG:
        unknown = [name for name in self.field_labels if name not in CASE_FIELDS]
        if unknown:
            raise ValueError(f"field_labels must name test-case fields, got {unknown}")
        self.graph()
        return self

    def graph(self) -> Graph:
        """The checked graph; computed from the fields, so a copy of the metric is never stale."""
        return build_graph(self.nodes, self.root)

    def required_fields(self) -> tuple[str, ...]:
        names: dict[str, None] = {}
        for node in self.graph().nodes.values():
            if isinstance(node, VerdictNode):
                names.update(dict.fromkeys(node.geval.required_fields() if node.geval else ()))
            else:
                names.update(dict.fromkeys(node.evaluation_params))
        return tuple(names)

    def prepare(self, judge: Backend | None) -> DAG:
        """This metric with its G-Eval children's evaluation steps written, once for a run."""
        nodes = self.graph().nodes
        prepared = {node_id: _prepared(node, judge) for node_id, node in nodes.items()}
        if all(prepared[n] is nodes[n] for n in nodes):
            return self
        return self.model_copy(update={"nodes": prepared})

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        """Walk the graph; the summary is the path, one step per ``;``."""
        graph = self.graph()
        outcome = walk(graph, case, judge, self._prompts())
        lines = path_lines(graph, outcome.steps)
        return Judgement(
            score=outcome.score,
            summary="; ".join(lines),
            details={"path": outcome.steps},
            conversation=outcome.last_call,
            reason_variables={"steps": lines},
        )

    def prompt_start(self, case: TestCase) -> str:
        """The first root's prompt: a run sorts calls by it, so calls sharing a prefix run back to back."""
        graph = self.graph()
        try:
            request = node_request(graph, graph.roots[0], case, self._prompts(), {})
        except PromptError:
            return super().prompt_start(case)  # the run reports it when it measures the case
        return "\n".join(m.content for m in request.prompt.messages)

    def _prompts(self) -> Prompts:
        return Prompts(self.task_prompt, self.judgement_prompt, self.field_labels)


def _prepared(node: AnyNode, judge: Backend | None) -> AnyNode:
    if isinstance(node, VerdictNode) and node.geval is not None:
        geval = node.geval.prepare(judge)
        return node if geval is node.geval else node.model_copy(update={"geval": geval})
    return node
