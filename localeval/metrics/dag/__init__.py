"""The DAG metric: a decision graph of task, judgement and verdict nodes (docs/dag.md).

``nodes`` — task nodes write a short text, judgement nodes choose a verdict,
verdict nodes end the run with a score (or go on to a child, or a G-Eval
metric) — keyed by id, checked when the metric is built (:mod:`.graph`), run
on a case one judge call per node on the path (:mod:`.walk`).
"""

from localeval.metrics.dag.graph import Graph, GraphError, build_graph
from localeval.metrics.dag.metric import DAG
from localeval.metrics.dag.nodes import (
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)

__all__ = [
    "DAG", "BinaryJudgementNode", "Graph", "GraphError", "NonBinaryJudgementNode", "TaskNode", "VerdictNode",
    "build_graph",
]
