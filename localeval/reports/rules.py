"""Facts every report format states the same way: case labels and how a result passed.

A :class:`~localeval.results.MetricResult` records its score, threshold and
verdict but not the comparison that decided it (most metrics pass at
``score >= threshold``; hallucination passes at ``score <= threshold``). The
writers read the rule back from the result itself, so they need no metric
registry and stay right for a metric they have never heard of.
"""

from __future__ import annotations

from collections.abc import Iterable
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
    """The case's name, or ``case-<number>`` when it has none."""
    return case.name or case_anchor(case)


def pass_rule(result: MetricResult) -> PassRule | None:
    """The comparison that decided ``result``, when the result alone shows it.

    A failure always shows it (a score below the threshold failed ``>=``; one
    above failed ``<=``), and so does a pass off the threshold. A pass exactly
    at the threshold, and an errored result, do not: None.
    """
    if result.score is None or result.passed is None or result.score == result.threshold:
        return None
    above = result.score > result.threshold
    return ">=" if above == result.passed else "<="


def metric_rule(results: Iterable[MetricResult]) -> PassRule | None:
    """The rule of a metric's results: the first one any of them shows, else None."""
    for result in results:
        rule = pass_rule(result)
        if rule is not None:
            return rule
    return None


def verdict_word(result: MetricResult) -> str:
    """``pass``, ``fail`` or ``error``."""
    if result.errored:
        return "error"
    return "pass" if result.passed else "fail"


def failure_message(result: MetricResult) -> str:
    """One line that says why a failed result failed: ``score 0.31 < threshold 0.5 (passes at >=)``."""
    score = "none" if result.score is None else f"{result.score:.4g}"
    rule = pass_rule(result)
    if rule is None or result.score is None:
        return f"score {score}, threshold {result.threshold:g}"
    shown = "<" if result.score < result.threshold else ">"
    return f"score {score} {shown} threshold {result.threshold:g} (passes at score {rule} threshold)"
