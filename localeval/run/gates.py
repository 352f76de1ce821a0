"""A run's gates against what it reached: ``[gate]`` (or ``--min-pass-rate`` / ``--min-mean``) and the
run's summaries → each gate's result. Pure: the report's figures in, verdicts out.

A gate compares the figure itself (the pass rate, the mean score over the scored cases) with what
it requires, "at least"; the Wilson interval of a pass rate is recorded beside it for information:
90% of 10 cases and 90% of 1,000 both pass a 0.9 gate, but only the second says much. A metric that
scored no case fails its gates: nothing shows it reached them.
"""

from __future__ import annotations

import math

from localeval.config import GateConfig
from localeval.data.results import GateResult, GateRule, MetricSummary
from localeval.stats import wilson


def gate_results(gate: GateConfig, summaries: list[MetricSummary]) -> list[GateResult]:
    """Each gate of ``gate`` over the run's ``summaries`` (one per metric, by name), in the gates' order."""
    by_name = {s.metric: s for s in summaries}
    return [_result(rule, by_name[metric], required) for rule, metric, required in gate.rules()]


def _result(rule: GateRule, summary: MetricSummary, required: float) -> GateResult:
    scored = summary.passed + summary.failed
    actual = summary.pass_rate if rule == "min_pass_rate" else summary.mean_score
    interval = wilson(summary.passed, scored) if rule == "min_pass_rate" else None
    return GateResult(
        metric=summary.metric, rule=rule, required=required, actual=actual, scored=scored,
        passed=actual is not None and (actual >= required or math.isclose(actual, required, abs_tol=1e-9)),
        low=interval.low if interval else None, high=interval.high if interval else None,
    )
