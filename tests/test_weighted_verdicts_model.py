"""Weighted verdicts with the real default model (SmolLM2-135M, in-process llama.cpp, one thread).

Mechanics, not judgement: the verdict request is answered validly, each verdict's distribution is
read after the reply as the model wrote it, and a one-sentence answer, which the written reading
can only score 0 or 1, gets a score strictly between them.
"""

from __future__ import annotations

from typing import Any

import pytest

from localeval.backends.base import DistributionReply, DistributionRequest, JsonReply, JsonRequest
from localeval.data.case import TestCase
from localeval.metrics import build_metric

pytestmark = pytest.mark.model


class Counting:
    """The backend, with each call it answers and each it fails counted."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.answered: list[str] = []
        self.failed: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def generate_json(self, request: JsonRequest) -> JsonReply:
        return self._call("generate_json", self.backend.generate_json, request)

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        return self._call("candidate_distribution", self.backend.candidate_distribution, request)

    def _call(self, name: str, call: Any, request: Any) -> Any:
        try:
            reply = call(request)
        except Exception as err:
            self.failed.append(f"{name}: {type(err).__name__}: {err}")
            raise
        self.answered.append(name)
        return reply


def test_weighted_faithfulness_of_a_one_sentence_answer_is_strictly_between_0_and_1(llama_backend: Any) -> None:
    assert llama_backend.options.n_threads == 1
    case = TestCase(input="What is the capital of Australia?", actual_output="The capital of Australia is Sydney.",
                    retrieval_context=["Canberra is the capital of Australia."])
    judge = Counting(llama_backend)
    metric = build_metric("faithfulness", {"verdict_reading": "weighted", "include_reason": False})

    result = metric.measure(case, judge)

    assert (judge.failed, judge.answered) == ([], ["generate_json", "candidate_distribution"])
    assert result.error is None and result.score is not None
    assert 0.0 < result.score < 1.0
    [distribution] = result.details["distributions"]
    assert result.score == pytest.approx(1 - distribution["probabilities"]["no"], rel=1e-9)
    assert 0.0 < distribution["covered_mass"] <= 1.0
    assert result.details["verdict_reading"] == "weighted"
