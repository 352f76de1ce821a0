"""summarization, bias, toxicity, pii_leakage and prompt_alignment with the real default model.

These check mechanics, not judgement: a 135M judge is near chance here. What
must hold is that every schema-constrained request is answered validly (no
invalid JSON, no verdict list of the wrong length, no reply cut off), reasons
included, and that the numbers in the details add up to the score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localeval.config import RunConfig
from localeval.data.dataset import Dataset
from localeval.metrics.judged import JudgedMetric
from localeval.run.runner import evaluate

pytestmark = pytest.mark.model

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "metrics" / "eval.toml"
KINDS = ["summarization", "bias", "toxicity", "pii_leakage", "prompt_alignment"]


def test_the_judged_metrics_score_the_example_cases_without_an_error(llama_backend: Any) -> None:
    config = RunConfig.load(EXAMPLE)
    metrics = [m for m in config.build_metrics() if isinstance(m, JudgedMetric)]
    assert [m.kind for m in metrics] == KINDS
    cases = Dataset.load(config.dataset.path).cases[:3]  # type: ignore[arg-type]

    report = evaluate(Dataset.from_cases(cases), metrics, llama_backend)

    errors = [f"{c.name} {r.metric}: {r.error}" for c in report.cases for r in c.results if r.error]
    assert errors == []
    for case_result in report.cases:
        results = {r.kind: r for r in case_result.results}
        for result in results.values():
            assert result.score is not None and 0.0 <= result.score <= 1.0
            assert result.reason and "reason_error" not in result.details
        summary = results["summarization"].details
        assert results["summarization"].score == min(summary["alignment_score"], summary["coverage_score"])
        assert len(summary["questions"]) == 3 - summary["dropped"]["questions"]
        for kind, bad in (("bias", "biased"), ("toxicity", "toxic")):
            details = results[kind].details
            judged = len(details["verdicts"])
            assert results[kind].score == (details["counts"][bad] / judged if judged else 0.0)
            assert results[kind].lower_is_better
        pii = results["pii_leakage"]
        assert pii.score == (1.0 if pii.details["counts"]["leaks"] else 0.0) and pii.lower_is_better
        alignment = results["prompt_alignment"].details
        assert len(alignment["verdicts"]) == 3
        assert results["prompt_alignment"].score == alignment["counts"]["yes"] / 3
