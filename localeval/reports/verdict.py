"""Per metric, whether a change between two runs is real: the numbers and the verdict. Pure.

Over the matched cases scored in both runs, the mean change B − A with its paired bootstrap 95%
interval (:func:`localeval.stats.paired_mean_change`: each case's own difficulty cancels out);
over those with a verdict in both, the pass rate before and after, with the exact McNemar test
of the flips (:func:`localeval.stats.mcnemar`). The verdict:

- the mean speaks when its interval excludes 0: ``better`` when the score moved the metric's
  good way (up; down for a metric that passes at ``score <= threshold``), else ``worse``;
- the flips speak when McNemar's p < 0.05: ``better`` with more fail → pass than pass → fail,
  else ``worse``;
- the verdict is what speaks; ``mixed`` when both speak and disagree (the mean rose while more
  cases fell below the threshold than rose above it, or the reverse); ``no difference the data
  can show`` when neither speaks (too few cases, or changes both ways that cancel out).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from localeval.data.results import MetricResult
from localeval.stats import McNemar, mcnemar, paired_mean_change

#: McNemar's p below this makes the flips speak.
ALPHA = 0.05

Verdict = Literal["better", "worse", "mixed", "no difference the data can show"]
NO_DIFFERENCE: Verdict = "no difference the data can show"


class ChangeInterval(BaseModel):
    """A mean change with its 95% interval."""

    model_config = ConfigDict(frozen=True)

    estimate: float
    low: float
    high: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


class MetricComparison(BaseModel):
    """One metric over the matched cases: its changes, its mean and pass rate before and after, the verdict."""

    model_config = ConfigDict(frozen=True)

    metric: str
    lower_is_better: bool = False
    compared: int  #: matched cases with this metric's result in both runs
    scored: int = 0  #: of those, scored in both: what the means and the pass rates are over
    regressions: int = 0
    fixes: int = 0
    score_changes: int = 0
    errored: int = 0
    recovered: int = 0
    mean_a: float | None = None
    mean_b: float | None = None
    mean_change: ChangeInterval | None = None  #: B − A; None below two scored cases
    pass_rate_a: float | None = None
    pass_rate_b: float | None = None
    mcnemar_p: float = 1.0
    verdict: Verdict = NO_DIFFERENCE

    @property
    def mean_delta(self) -> float | None:
        """B's mean minus A's (the interval's estimate, when there is one)."""
        return None if self.mean_a is None or self.mean_b is None else self.mean_b - self.mean_a

    def reason(self) -> str:
        """What the verdict rests on, in words: the mean change and its interval, the flips and McNemar's p."""
        change = self.mean_change
        if change is None:
            mean = f"{self.scored} case{'' if self.scored == 1 else 's'} scored in both runs: too few for an interval"
        else:
            side = "excludes" if change.excludes_zero() else "includes"
            mean = f"mean {signed(change.estimate)}, 95% CI {signed(change.low)} to {signed(change.high)}, {side} 0"
        return f"{mean}; {self.fixes} fail → pass, {self.regressions} pass → fail, McNemar p = {self.mcnemar_p:.3g}"

    @property
    def worse_beyond_interval(self) -> bool:
        """Whether the mean moved the bad way and its interval excludes 0."""
        return _mean_says(self.mean_change, self.lower_is_better) == "worse"


def measure_metric(metric: str, both: list[tuple[MetricResult, MetricResult]],
                   kinds: Sequence[str | None]) -> MetricComparison:
    """One metric over its results in both runs (``both``: A's and B's for each matched case), with
    each case's change (``kinds``, as :func:`~localeval.reports.compare.classify` names them)."""
    scored = [(ra, rb) for ra, rb in both if not ra.errored and not rb.errored]
    lower = any(ra.lower_is_better for ra, _ in both)
    scores = [(ra.score, rb.score) for ra, rb in scored if ra.score is not None and rb.score is not None]
    before, after = [a for a, _ in scores], [b for _, b in scores]
    verdicts = [(ra.passed, rb.passed) for ra, rb in scored if ra.passed is not None and rb.passed is not None]
    interval = paired_mean_change(before, after)
    change = None if interval is None else ChangeInterval(estimate=interval.estimate, low=interval.low,
                                                          high=interval.high)
    flips = mcnemar([v for v, _ in verdicts], [v for _, v in verdicts])
    return MetricComparison(
        metric=metric, lower_is_better=lower, compared=len(both), scored=len(scores),
        regressions=kinds.count("regression"), fixes=kinds.count("fix"), score_changes=kinds.count("score"),
        errored=kinds.count("errored"), recovered=kinds.count("recovered"),
        mean_a=_mean(before), mean_b=_mean(after), mean_change=change,
        pass_rate_a=_rate([v for v, _ in verdicts]), pass_rate_b=_rate([v for _, v in verdicts]),
        mcnemar_p=flips.p_value, verdict=verdict(change, lower, flips),
    )


def verdict(change: ChangeInterval | None, lower_is_better: bool, flips: McNemar) -> Verdict:
    """The rule of the module's docstring: what the mean change and the flips say, together."""
    by_mean = _mean_says(change, lower_is_better)
    by_flips: Verdict | None = None
    if flips.p_value < ALPHA:
        by_flips = "better" if flips.fixed > flips.broken else "worse"
    if by_mean and by_flips and by_mean != by_flips:
        return "mixed"
    return by_mean or by_flips or NO_DIFFERENCE


def _mean_says(change: ChangeInterval | None, lower_is_better: bool) -> Verdict | None:
    if change is None or not change.excludes_zero():
        return None
    return "better" if (change.estimate > 0) != lower_is_better else "worse"


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _rate(verdicts: Sequence[bool]) -> float | None:
    return sum(verdicts) / len(verdicts) if verdicts else None


def signed(value: float) -> str:
    """A change as every view writes it: three decimals and its sign, never "-0.000"."""
    return f"{round(value, 3) + 0.0:+.3f}"
