"""Facts every report format states the same way: case labels and how a result passed.

A :class:`~localeval.results.MetricResult` records its score, threshold, verdict
and pass rule (``lower_is_better``: hallucination passes at ``score <= threshold``,
most metrics at ``score >= threshold``), so the writers need no metric registry and
stay right for a metric they have never heard of.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from localeval.results import CaseResult, MetricResult

PassRule = Literal[">=", "<="]


def case_number(case: CaseResult) -> int:
    """The case's 1-based number, as the terminal's ``#`` column shows it."""
    return case.index + 1


def case_anchor(case: CaseResult) -> str:
    """The id of the case in the HTML report: ``case-3`` is the case numbered 3."""
    return f"case-{case_number(case)}"


def case_label(case: CaseResult) -> str:
    """The case's name, or ``case-<number>`` when it has none; `` @ target`` with several targets."""
    return (case.name or case_anchor(case)) + (f" @ {case.target}" if case.target else "")


def pass_rule(result: MetricResult) -> PassRule:
    """The comparison that decides ``result``: ``<=`` for a lower-is-better metric, else ``>=``."""
    return "<=" if result.lower_is_better else ">="


def verdict_word(result: MetricResult) -> str:
    """``pass``, ``fail`` or ``error``."""
    if result.errored:
        return "error"
    return "pass" if result.passed else "fail"


def failure_message(result: MetricResult) -> str:
    """One line that says why a failed result failed: ``score 0.31 < threshold 0.5 (passes at >=)``."""
    score = "none" if result.score is None else f"{result.score:.4g}"
    if result.score is None:
        return f"score {score}, threshold {result.threshold:g}"
    shown = "<" if result.score < result.threshold else ">" if result.score > result.threshold else "="
    return f"score {score} {shown} threshold {result.threshold:g} (passes at score {pass_rule(result)} threshold)"


def turn_verdicts(result: MetricResult) -> list[tuple[int, str]]:
    """A conversational result's per-turn verdicts: (turn number, from 1; verdict), from ``details["verdicts"]``.

    Shapes, not metric kinds: any result whose verdicts name a ``turn`` has them.
    """
    verdicts = result.details.get("verdicts")
    if not isinstance(verdicts, list):
        return []
    return [
        (item["turn"], str(item.get("verdict")))
        for item in verdicts
        if isinstance(item, Mapping) and isinstance(item.get("turn"), int)
    ]


def turn_count(case: CaseResult) -> int | None:
    """How many turns a conversation has; None for a single-turn case."""
    turns = case.inputs.get("turns")
    return len(turns) if isinstance(turns, list) else None
