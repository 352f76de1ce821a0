"""The order a run measures its (case, metric) pairs in. Results are reported in input order regardless.

An in-process llama.cpp judge keeps the last prompt's KV state and reads only
what differs from it (measured with SmolLM2: a 617-token prompt 2.4 s cold, 0.04 s
after one sharing its prefix). Sorting the calls by the text their prompts start
with puts those that share the longest prefix next to each other: the same
criteria and steps, then the same document. The conversational metrics all open
with the transcript (:mod:`localeval.metrics.conversational.base`), so the calls
about one conversation sort together and the transcript is read once. Python's
sort is stable, so pairs with equal starts keep their input order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from localeval.data.case import Case
from localeval.metrics.base import Metric

Order = Literal["prefix", "input"]


@dataclass(frozen=True, order=True)
class Task:
    """Measure metric number ``metric`` on case number ``case``."""

    case: int
    metric: int


def plan(cases: Sequence[Case], metrics: Sequence[Metric], order: Order = "prefix") -> list[Task]:
    """Every (case, metric) pair once: case by case for ``input``, by shared prompt prefix for ``prefix``."""
    tasks = [Task(c, m) for c in range(len(cases)) for m in range(len(metrics))]
    if order == "input":
        return tasks
    return sorted(tasks, key=lambda t: metrics[t.metric].prompt_start(cases[t.case]))


#: The most tasks in one group: big enough that a group's first, cold prompt is a small
#: share of its work, small enough that the last groups of a run keep every worker busy.
MAX_GROUP = 64


def group_size(tasks: int, workers: int) -> int:
    """How many neighbouring tasks go together to one worker: at least 4 groups per worker."""
    return max(1, min(MAX_GROUP, -(-tasks // (4 * workers))))


def groups(tasks: Sequence[Task], size: int) -> list[list[Task]]:
    """``tasks`` (in plan order) cut into contiguous groups of ``size`` (the last may be shorter).

    Neighbours in prefix order share the longest prompt prefixes: an executor that
    sends a whole group to one judge keeps that judge's prefix cache as warm as a
    local run does, but at each group's first prompt.
    """
    if size < 1:
        raise ValueError(f"a group holds at least one task, not {size}")
    return [list(tasks[start:start + size]) for start in range(0, len(tasks), size)]
