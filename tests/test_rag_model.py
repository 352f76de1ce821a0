"""The six RAG metrics with the real default model on examples/rag: every reply valid, every score in [0, 1].

These check mechanics, not judgement: a 135M judge is near chance on these
questions. What must hold is that schema-constrained generation never fails:
no invalid JSON, no verdict list of the wrong length, no reply cut off.

Answer relevancy runs as by default (the output's sentences, nothing extracted);
faithfulness runs with every extraction step (truths, then claims) so that
each extraction schema meets the real model. The extraction bounds are tighter
than the defaults (four claims and truths; three statements per retrieved node)
to keep the run short on a 2-core machine: a small model that loops fills every
slot it is given.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from localeval.config import RunConfig
from localeval.data.dataset import Dataset
from localeval.metrics.sentences import split_sentences
from localeval.run.runner import evaluate

pytestmark = pytest.mark.model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "rag"
KINDS = [
    "answer_relevancy",
    "faithfulness",
    "hallucination",
    "contextual_precision",
    "contextual_recall",
    "contextual_relevancy",
]
TIGHT: dict[str, dict[str, Any]] = {
    "faithfulness": {"claims": "extracted", "truths_extraction_limit": 4, "max_claims": 4},
    "contextual_relevancy": {"max_statements_per_node": 3},
}


def test_the_six_metrics_score_every_example_without_an_error(llama_backend: Any) -> None:
    config = RunConfig.load(EXAMPLES / "eval.toml")
    metrics = [m.model_copy(update={"include_reason": False, **TIGHT.get(m.kind, {})}) for m in config.build_metrics()]
    assert [m.kind for m in metrics] == KINDS
    dataset = Dataset.load(EXAMPLES / "rag.jsonl")
    assert 8 <= len(dataset.cases) <= 10

    report = evaluate(dataset, metrics, llama_backend)

    errors = [f"{c.name} {r.metric}: {r.error}" for c in report.cases for r in c.results if r.error]
    assert errors == []
    for case, case_result in zip(dataset.cases, report.cases):
        for result in case_result.results:
            assert result.score is not None and 0.0 <= result.score <= 1.0
            assert not math.isnan(result.score)
            assert result.score == result.raw_score
            verdicts = result.details["verdicts"]
            assert sum(result.details["counts"].values()) == len(verdicts) >= 1
            if result.kind == "hallucination":
                assert len(verdicts) == len(case.context or [])
                assert result.passed is (result.score <= 0.5)
            else:
                assert result.passed is (result.score >= 0.5)
            if result.kind == "contextual_precision":
                assert len(verdicts) == len(case.retrieval_context or [])
            if result.kind == "contextual_recall":
                assert len(verdicts) == len(split_sentences(case.expected_output or ""))
            if result.kind == "answer_relevancy":
                assert result.details["statements"] == list(dict.fromkeys(split_sentences(case.actual_output or "")))
                assert len(verdicts) == len(result.details["statements"])
            if result.kind == "faithfulness":
                assert len(verdicts) == len(result.details["claims"]) <= 4
                assert 1 <= len(result.details["truths"]) <= 4
            if result.kind == "contextual_relevancy":
                per_node = result.details["statements"]
                assert len(per_node) == len(case.retrieval_context or [])
                assert all(1 <= len(s) <= 3 for s in per_node)
                assert len(verdicts) == sum(len(s) for s in per_node)
    assert [s.errored for s in report.summary] == [0] * 6


def test_the_reason_comes_after_the_score_and_leaves_it_alone(llama_backend: Any) -> None:
    case = Dataset.load(EXAMPLES / "rag.jsonl").cases[0]
    metrics = RunConfig.load(EXAMPLES / "eval.toml").build_metrics()
    recall = next(m for m in metrics if m.kind == "contextual_recall")
    with_reason = recall.measure(case, llama_backend)
    without = recall.model_copy(update={"include_reason": False}).measure(case, llama_backend)
    assert (with_reason.error, without.error) == (None, None)
    assert with_reason.score == without.score  # greedy decoding: the same verdicts
    assert with_reason.details["verdicts"] == without.details["verdicts"]
    # The judge wrote a reason, or the result says why not; either way the score stands.
    assert with_reason.reason != without.reason or "reason_error" in with_reason.details
