"""How a metric's run-level figures read in every report: its pass rate and mean score, each with its
95% confidence interval when the report has one (``80% [49–94]``, ``0.612 [0.551–0.668]``).

One place, so the terminal and the HTML page round and bracket them alike. A report written before
intervals were recorded shows the figures alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from localeval.data.results import ConfidenceInterval, MetricSummary


class Figure(NamedTuple):
    """A figure as text (``80%``), its interval (``[49–94]``, or "" without one) and what the interval is."""

    value: str
    interval: str = ""
    note: str = ""

    def __str__(self) -> str:
        return f"{self.value} {self.interval}" if self.interval else self.value


def pass_rate(summary: MetricSummary, missing: str = "-") -> Figure:
    """The pass rate and its Wilson interval, in whole percent: ``80% [49–94]``; ``missing`` when none scored."""
    if summary.pass_rate is None:
        return Figure(missing)
    return _figure(f"{summary.pass_rate:.0%}", summary.pass_rate_interval, lambda x: f"{x * 100:.0f}")


def mean_score(summary: MetricSummary, missing: str = "-") -> Figure:
    """The mean score and its bootstrap interval: ``0.612 [0.551–0.668]``; ``missing`` when none scored."""
    if summary.mean_score is None:
        return Figure(missing)
    return _figure(f"{summary.mean_score:.3f}", summary.mean_score_interval, lambda x: f"{x:.3f}")


def _figure(value: str, interval: ConfidenceInterval | None, shown: Callable[[float], str]) -> Figure:
    if interval is None:
        return Figure(value)
    note = f"{interval.confidence:.0%} confidence interval ({interval.method})"
    return Figure(value, f"[{shown(interval.low)}–{shown(interval.high)}]", note)
