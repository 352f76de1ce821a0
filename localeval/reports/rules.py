"""Facts every report format states the same way: case labels and how a result passed.

A :class:`~localeval.data.results.MetricResult` records its score, threshold, verdict
and pass rule (``lower_is_better``: hallucination passes at ``score <= threshold``,
most metrics at ``score >= threshold``), so the writers need no metric registry and
stay right for a metric they have never heard of.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from localeval.data.results import CaseResult, MetricResult

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


def verdict_text(result: MetricResult) -> str:
    """How a result's verdict reads to a person: an arena's outcome ("new preferred", "tie within the
    judge's noise"), which a pass at 0.5 would misstate; else :func:`verdict_word`."""
    outcome = result.details.get("outcome") if result.kind == "arena" and not result.errored else None
    return str(outcome) if outcome else verdict_word(result)


def failure_message(result: MetricResult) -> str:
    """One line that says why a failed result failed: ``score 0.31 < threshold 0.5 (passes at score >= threshold)``.

    A composite's line names what failed it: each part that failed on its own,
    ``part 'faithfulness' failed: score 0.6 < threshold 0.9 (passes at score >= threshold)``,
    and the aggregate when it fell short of the composite's threshold.
    """
    if result.score is None:
        return f"score none, threshold {result.threshold:g}"
    parts = composite_parts(result)
    if parts is None:
        return _comparison(result.score, result.threshold, result.lower_is_better)
    failed = result.details.get("failed_parts")
    named = failed if isinstance(failed, list) else []
    reasons = [f"part '{name}' failed: {_part_comparison(parts, name)}" for name in named]
    if not _reaches(result.score, result.threshold, result.lower_is_better):
        aggregate = f"aggregate ({result.details.get('aggregate')}) fell short: "
        reasons.append(aggregate + _comparison(result.score, result.threshold, result.lower_is_better))
        if all(part.get("passed") is True for part in parts):
            reasons[-1] += "; every part passed on its own"
    return "; ".join(reasons) or _comparison(result.score, result.threshold, result.lower_is_better)


def composite_failure(result: MetricResult) -> str | None:
    """What failed a failed composite (its :func:`failure_message`); None for any other result.

    For the writers that show a score and its threshold anyway (HTML, the terminal): there
    only a composite needs the line, as its aggregate can clear the threshold and still fail.
    """
    if result.passed is not False or result.errored or composite_parts(result) is None:
        return None
    return failure_message(result)


def composite_parts(result: MetricResult) -> list[Mapping[str, Any]] | None:
    """The parts' results of a composite (``details["parts"]``, each a result as a mapping); None for others.

    Shapes, not metric kinds: any result whose details hold an ``aggregate`` and its ``parts`` has them.
    """
    parts = result.details.get("parts")
    if "aggregate" not in result.details or not isinstance(parts, list):
        return None
    return [part for part in parts if isinstance(part, Mapping)]


def _part_comparison(parts: list[Mapping[str, Any]], name: str) -> str:
    part = next((p for p in parts if p.get("metric") == name), {})
    score, threshold = part.get("score"), part.get("threshold")
    if not isinstance(score, (int, float)) or not isinstance(threshold, (int, float)):
        return "no score recorded"  # a report edited by hand, say: say so rather than fail
    return _comparison(score, threshold, bool(part.get("lower_is_better")))


def _reaches(score: float, threshold: float, lower_is_better: bool) -> bool:
    return score <= threshold if lower_is_better else score >= threshold


def _comparison(score: float, threshold: float, lower_is_better: bool) -> str:
    shown = "<" if score < threshold else ">" if score > threshold else "="
    rule = "<=" if lower_is_better else ">="
    return f"score {score:.4g} {shown} threshold {threshold:g} (passes at score {rule} threshold)"


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
