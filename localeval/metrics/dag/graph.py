"""A DAG metric's nodes checked into a graph that can run, or an error naming the node.

:func:`build_graph` flattens inline children into the id table, then checks, in
this order: ids, cycles, each node's shape, the roots, reachability, that a run
ends at exactly one verdict, task output labels, and that every judge sees
something. The first violation is raised as a :class:`GraphError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from localeval.data.case import CASE_FIELDS
from localeval.metrics.dag.nodes import (
    JUDGEMENT_NODES,
    AnyNode,
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)

MAX_SCORE = 10
#: Whether a walk over the graph goes on through a node's children.
_Expand = Callable[[AnyNode], bool]


class GraphError(ValueError):
    """A DAG description that cannot run. The message names the node.

    A ``ValueError``, so that pydantic reports it as a validation error of the metric.
    """


@dataclass(frozen=True)
class Graph:
    """Checked nodes keyed by id, every child an id, and an order in which parents come first."""

    nodes: Mapping[str, AnyNode]
    roots: tuple[str, ...]
    order: tuple[str, ...]

    def children(self, node_id: str) -> tuple[str, ...]:
        return _ids(self.nodes[node_id])


def build_graph(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> Graph:
    """The graph of ``nodes`` from ``roots``; :class:`GraphError` for the first rule broken."""
    flat = flatten(nodes)
    _check_ids(flat, roots)
    order = topological_order(flat, roots)
    for node_id, node in flat.items():
        _check_node(flat, node_id, node)
    _check_roots(flat, roots)
    _check_reachable(flat, roots)
    _check_one_verdict_per_run(flat, roots)
    _check_labels(flat)
    _check_sees_something(flat, roots)
    return Graph(nodes=flat, roots=tuple(roots), order=order)


def flatten(nodes: Mapping[str, AnyNode]) -> dict[str, AnyNode]:
    """Every node keyed by id, inline children given their place as id (``j.children[0]``)."""
    flat: dict[str, AnyNode] = {}

    def add(node_id: str, node: AnyNode) -> None:
        if node_id in flat or (node_id in nodes and node is not nodes[node_id]):
            raise GraphError(f"node id '{node_id}' is used twice (an inline node's id is its place)")
        refs = node.child_refs()
        ids = tuple(r if isinstance(r, str) else _place(node_id, node, i) for i, r in enumerate(refs))
        flat[node_id] = node.with_child_ids(ids)
        for ref, child_id in zip(refs, ids):
            if not isinstance(ref, str):
                add(child_id, ref)

    for node_id, node in nodes.items():
        add(node_id, node)
    return flat


def _place(parent_id: str, parent: AnyNode, index: int) -> str:
    """The id of an inline child: where it is written."""
    return f"{parent_id}.child" if isinstance(parent, VerdictNode) else f"{parent_id}.children[{index}]"


def topological_order(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> tuple[str, ...]:
    """Every node after all of its parents, roots first in the order given; a cycle is an error."""
    indegree = {node_id: 0 for node_id in nodes}
    for node in nodes.values():
        for child in _ids(node):
            indegree[child] += 1
    ready = deque(n for n in dict.fromkeys([*roots, *nodes]) if indegree[n] == 0)
    order: list[str] = []
    while ready:
        node_id = ready.popleft()
        order.append(node_id)
        for child in _ids(nodes[node_id]):
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    if len(order) < len(nodes):
        cycle = _find_cycle(nodes, {n for n in nodes if indegree[n] > 0})
        raise GraphError(f"the nodes form a cycle: {' -> '.join(cycle)}")
    return tuple(order)


def _find_cycle(nodes: Mapping[str, AnyNode], left: set[str]) -> list[str]:
    # Every node Kahn's algorithm left has a parent that was left too: walking up
    # from any of them must come back to a node already seen.
    parents = {n: [p for p in nodes if p in left and n in _ids(nodes[p])] for n in left}
    walked = [next(n for n in nodes if n in left)]
    while walked.count(walked[-1]) == 1:
        walked.append(parents[walked[-1]][0])
    start = walked.index(walked[-1])
    return list(reversed(walked[start:]))


def _ids(node: AnyNode) -> tuple[str, ...]:
    return tuple(r for r in node.child_refs() if isinstance(r, str))


def _check_ids(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> None:
    if not roots:
        raise GraphError("root must name at least one node")
    for root in roots:
        if root not in nodes:
            raise GraphError(f"root '{root}' is not a node (nodes: {', '.join(nodes)})")
    if len(set(roots)) < len(roots):
        raise GraphError(f"root names a node twice: {list(roots)}")
    for node_id, node in nodes.items():
        for child in _ids(node):
            if child not in nodes:
                raise GraphError(f"node '{node_id}': child '{child}' is not a node")


def _check_node(nodes: Mapping[str, AnyNode], node_id: str, node: AnyNode) -> None:
    if not isinstance(node, VerdictNode):
        unknown = [p for p in node.evaluation_params if p not in CASE_FIELDS]
        if unknown:
            raise GraphError(f"node '{node_id}': evaluation_params must name test-case fields, got {unknown}")
        if not node.children:
            raise GraphError(f"{_kind(node)} node '{node_id}' has no children: a leaf must be a verdict node")
    for child in _ids(node):
        if isinstance(nodes[child], VerdictNode) and not isinstance(node, JUDGEMENT_NODES):
            raise GraphError(
                f"verdict node '{child}' has parent '{node_id}', a {_kind(node)} node: "
                "a verdict node's parent must be a judgement node"
            )
    if isinstance(node, VerdictNode):
        _check_verdict(node_id, node)
    elif isinstance(node, JUDGEMENT_NODES):
        _check_judgement(nodes, node_id, node)


def _check_verdict(node_id: str, node: VerdictNode) -> None:
    given = [name for name in ("score", "child", "geval") if getattr(node, name) is not None]
    if len(given) != 1:
        raise GraphError(
            f"verdict node '{node_id}' needs exactly one of score, child or geval; "
            f"it has {' and '.join(given) if given else 'none'}"
        )
    if node.score is not None and not 0 <= node.score <= MAX_SCORE:
        raise GraphError(f"verdict node '{node_id}' has score {node.score}: a score is from 0 to {MAX_SCORE}")


def _check_judgement(
    nodes: Mapping[str, AnyNode], node_id: str, node: BinaryJudgementNode | NonBinaryJudgementNode
) -> None:
    verdicts: dict[str, VerdictNode] = {}
    for child in _ids(node):
        verdict = nodes[child]
        if not isinstance(verdict, VerdictNode):
            raise GraphError(
                f"judgement node '{node_id}': child '{child}' is a {_kind(verdict)} node; "
                "a judgement node's children must be verdict nodes"
            )
        verdicts[child] = verdict
    if isinstance(node, BinaryJudgementNode):
        _check_binary(node_id, verdicts)
    else:
        _check_non_binary(node_id, verdicts)


def _check_binary(node_id: str, verdicts: Mapping[str, VerdictNode]) -> None:
    for child, verdict in verdicts.items():
        if not isinstance(verdict.verdict, bool):
            raise GraphError(
                f"verdict node '{child}' has verdict {_show(verdict.verdict)} under binary judgement node "
                f"'{node_id}': under a binary judgement node a verdict is true or false"
            )
    given = [v.verdict for v in verdicts.values()]
    if sorted(given) != [False, True]:
        raise GraphError(
            f"binary judgement node '{node_id}' needs exactly two verdict children, one true and "
            f"one false; it has {_json_list(given)}"
        )


def _check_non_binary(node_id: str, verdicts: Mapping[str, VerdictNode]) -> None:
    seen: dict[str, str] = {}
    for child, verdict in verdicts.items():
        value = verdict.verdict
        if isinstance(value, bool) or not value.strip():
            raise GraphError(
                f"verdict node '{child}' has verdict {_show(value)} under non-binary judgement "
                f"node '{node_id}': under a non-binary judgement node a verdict is a non-blank string"
            )
        if value in seen:
            raise GraphError(
                f"non-binary judgement node '{node_id}' has the verdict '{value}' twice "
                f"(verdict nodes '{seen[value]}' and '{child}'); its verdicts must be distinct"
            )
        seen[value] = child
    if len(seen) < 2:
        raise GraphError(f"non-binary judgement node '{node_id}' needs at least two verdict children")


def _check_roots(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> None:
    for root in roots:
        if isinstance(nodes[root], VerdictNode):
            raise GraphError(f"verdict node '{root}' is a root: a root must be a task or judgement node")


def _check_reachable(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> None:
    reached = _reach(nodes, roots, through=lambda node: True)
    for node_id in nodes:
        if node_id not in reached:
            raise GraphError(f"node '{node_id}' cannot be reached from the root")


def _check_one_verdict_per_run(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> None:
    # Task nodes run all their children; judgement nodes pick one. So the nodes
    # that start together (the roots, or a verdict's child) must lead, through
    # task nodes, to a single judgement node, or a run would end at two verdicts.
    starts = [("the root" if len(roots) == 1 else "the roots", tuple(roots))] + [
        (f"verdict node '{node_id}'", (node.child,))
        for node_id, node in nodes.items()
        if isinstance(node, VerdictNode) and isinstance(node.child, str)
    ]
    for where, start in starts:
        reached = _reach(nodes, start, through=lambda node: isinstance(node, TaskNode))
        judgements = [n for n in reached if isinstance(nodes[n], JUDGEMENT_NODES)]
        if len(judgements) > 1:
            raise GraphError(
                f"from {where}, a run reaches {len(judgements)} judgement nodes at once "
                f"({', '.join(repr(j) for j in judgements)}): task nodes that run together must all "
                "lead to the same judgement node, so that a run ends at one verdict"
            )


def _check_labels(nodes: Mapping[str, AnyNode]) -> None:
    writers: dict[str, str] = {}
    for node_id, node in nodes.items():
        if isinstance(node, TaskNode):
            if node.output_label in writers:
                raise GraphError(
                    f"task nodes '{writers[node.output_label]}' and '{node_id}' both write "
                    f"'{node.output_label}': output_label must be distinct"
                )
            writers[node.output_label] = node_id


def _check_sees_something(nodes: Mapping[str, AnyNode], roots: Sequence[str]) -> None:
    # Nodes a run can reach before any task node has written something.
    early = _reach(nodes, roots, through=lambda node: not isinstance(node, TaskNode))
    for node_id in early:
        node = nodes[node_id]
        if not isinstance(node, VerdictNode) and not node.evaluation_params:
            raise GraphError(
                f"{_kind(node)} node '{node_id}' sees nothing: give it evaluation_params, "
                "or put a task node before it on every path"
            )


def _reach(nodes: Mapping[str, AnyNode], start: Iterable[str], through: _Expand) -> list[str]:
    """The nodes reached from ``start`` (included), expanding only the nodes ``through`` accepts."""
    reached = dict.fromkeys(start)
    queue = deque(reached)
    while queue:
        node = nodes[queue.popleft()]
        if through(node):
            for child in _ids(node):
                if child not in reached:
                    reached[child] = None
                    queue.append(child)
    return list(reached)


def _kind(node: AnyNode) -> str:
    return node.kind.replace("_", " ").replace("non binary", "non-binary")


def _show(value: bool | str) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _json_list(values: Sequence[bool | str]) -> str:
    return "[" + ", ".join(_show(v) for v in values) + "]"

