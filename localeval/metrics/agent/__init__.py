"""The agentic metrics, on single-turn cases with ``tools_called`` (and ``expected_tools``).

``tool_correctness`` compares the calls with the expected tools, no judge
(:mod:`localeval.metrics.agent.matching` is its pure part); ``argument_correctness``
and ``task_completion`` ask a judge.
"""

from __future__ import annotations

from localeval.metrics.agent.argument_correctness import ArgumentCorrectness
from localeval.metrics.agent.task_completion import TaskCompletion
from localeval.metrics.agent.tool_correctness import ToolCorrectness

AGENT_METRICS = (ToolCorrectness, ArgumentCorrectness, TaskCompletion)

__all__ = ["AGENT_METRICS", "ArgumentCorrectness", "TaskCompletion", "ToolCorrectness"]
