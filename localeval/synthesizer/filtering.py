"""The quality filter: G-Eval scores each input against its context; below the threshold it is dropped.

This is G-Eval itself (:mod:`localeval.metrics.geval`), not a copy: the criteria
become evaluation steps once per run, and each input's score is the
probability-weighted expected score read from log-probabilities (or, with
``allow_fallback``, from seeded samples: recorded in each golden's metadata).
"""

from __future__ import annotations

from typing import Any

from localeval.backends.base import Backend
from localeval.data.case import TestCase
from localeval.data.results import MetricResult
from localeval.metrics.geval import GEval
from localeval.synthesizer.contexts import Context
from localeval.synthesizer.options import SynthesizerOptions


def quality_metric(options: SynthesizerOptions) -> GEval:
    """The G-Eval that judges an input's quality from the input and its context."""
    return GEval(
        name="input quality",
        criteria=options.quality_criteria,
        evaluation_params=("input", "context"),
        threshold=options.quality_threshold,
        scoring=options.quality_scoring,
        allow_fallback=options.allow_fallback,
        seed=options.seed,
        include_reason=False,  # a filter needs the score only; a reason would double the calls
    )


def score_input(metric: GEval, judge: Backend, text: str, context: Context) -> MetricResult:
    """``metric``'s result for input ``text`` with ``context``: a score, or an error saying why not."""
    return metric.measure(TestCase(input=text, context=context.texts), judge)


def quality_record(result: MetricResult) -> dict[str, Any]:
    """What a golden's metadata keeps of its quality score."""
    details = result.details
    record: dict[str, Any] = {
        "score": result.score, "raw_score": result.raw_score, "score_range": details.get("score_range"),
        "threshold": result.threshold, "method": details.get("method"),
    }
    if "fallback" in details:
        record["fallback"] = details["fallback"]
    return record


#: The name a rejected input's record gives the filter that dropped it.
QUALITY_FILTER = "quality"


def rejection_reason(result: MetricResult) -> str:
    """Why the quality filter dropped an input: its score against the threshold, on both scales."""
    low, high = result.details.get("score_range", (None, None))
    raw = f"{result.raw_score:g} on {low}-{high}, " if result.raw_score is not None and low is not None else ""
    return f"quality score {raw}{float(result.score or 0.0):.3f} on 0-1, below the threshold {result.threshold:g}"
