"""The four kinds of node a DAG metric is made of, as immutable configuration.

A node refers to its children by id (a key of the metric's ``nodes`` table), or
holds a child inline; an inline child gets its place as its id, e.g.
``has_all.children[0]`` or ``complete.child``. The rules that make a set of
nodes a graph that can run (ids that exist, no cycle, verdicts under judgements)
are checked by :func:`localeval.metrics.dag.graph.build_graph`, which names the node.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from localeval.metrics.geval import GEval


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def child_refs(self) -> tuple[NodeRef, ...]:
        """The children, as given: ids or inline nodes."""
        return ()

    def with_child_ids(self, ids: tuple[str, ...]) -> _Node:
        """This node with its children replaced by ``ids`` (same count, same order)."""
        return self


class TaskNode(_Node):
    """The judge does a task (extract, list, rewrite) and writes a short text.

    Every node after it on the path sees that text under ``output_label``.
    All its children run.
    """

    kind: Literal["task"] = "task"
    instructions: str = Field(min_length=1, description="What the judge is to write.")
    output_label: str = Field(min_length=1, description="How later prompts name the output.")
    evaluation_params: tuple[str, ...] = Field((), description="The test-case fields the judge sees.")
    children: tuple[NodeRef, ...] = ()
    max_chars: int = Field(300, ge=20, le=1000, description="The longest output the judge may write.")

    def child_refs(self) -> tuple[NodeRef, ...]:
        return self.children

    def with_child_ids(self, ids: tuple[str, ...]) -> TaskNode:
        return self.model_copy(update={"children": ids})


class BinaryJudgementNode(_Node):
    """The judge answers true or false to ``criteria``; the verdict child of that answer runs."""

    kind: Literal["binary_judgement"] = "binary_judgement"
    criteria: str = Field(min_length=1, description="A yes/no question about the case.")
    evaluation_params: tuple[str, ...] = Field((), description="The test-case fields the judge sees.")
    children: tuple[NodeRef, ...] = Field((), description="Two verdict nodes: verdict true and false.")

    def child_refs(self) -> tuple[NodeRef, ...]:
        return self.children

    def with_child_ids(self, ids: tuple[str, ...]) -> BinaryJudgementNode:
        return self.model_copy(update={"children": ids})


class NonBinaryJudgementNode(_Node):
    """The judge picks one of its verdict children's verdicts (strings); that child runs."""

    kind: Literal["non_binary_judgement"] = "non_binary_judgement"
    criteria: str = Field(min_length=1, description="A question with the children's verdicts as answers.")
    evaluation_params: tuple[str, ...] = Field((), description="The test-case fields the judge sees.")
    children: tuple[NodeRef, ...] = Field((), description="Verdict nodes with distinct string verdicts.")

    def child_refs(self) -> tuple[NodeRef, ...]:
        return self.children

    def with_child_ids(self, ids: tuple[str, ...]) -> NonBinaryJudgementNode:
        return self.model_copy(update={"children": ids})


class VerdictNode(_Node):
    """One answer of a judgement node, and what follows it: exactly one of

    * ``score`` (0-10): the run ends here; the metric's score is ``score / 10``;
    * ``child``: a task or judgement node that runs next;
    * ``geval``: a G-Eval metric whose score becomes the metric's score.
    """

    kind: Literal["verdict"] = "verdict"
    verdict: bool | str = Field(description="true/false under a binary node, a string under a non-binary one.")
    score: int | None = Field(None, description="0 to 10, for a verdict that ends the run.")
    child: NodeRef | None = None
    geval: GEval | None = Field(None, description="A G-Eval metric that scores the case instead.")

    def child_refs(self) -> tuple[NodeRef, ...]:
        return () if self.child is None else (self.child,)

    def with_child_ids(self, ids: tuple[str, ...]) -> VerdictNode:
        return self.model_copy(update={"child": ids[0]}) if ids else self


def _ref_kind(value: Any) -> str:
    # An id or a node: deciding first keeps a typo in an inline node from being
    # reported as "Input should be a valid string".
    return "id" if isinstance(value, str) else "node"


AnyNode = TaskNode | BinaryJudgementNode | NonBinaryJudgementNode | VerdictNode
#: A node of any kind; in a config table, its ``kind`` says which.
Node = Annotated[AnyNode, Field(discriminator="kind")]
#: A child: the id of a node in the metric's ``nodes`` table, or a node given inline.
NodeRef = Annotated[Annotated[str, Tag("id")] | Annotated[Node, Tag("node")], Discriminator(_ref_kind)]
JUDGEMENT_NODES = (BinaryJudgementNode, NonBinaryJudgementNode)

for _model in (TaskNode, BinaryJudgementNode, NonBinaryJudgementNode, VerdictNode):
    _model.model_rebuild()
