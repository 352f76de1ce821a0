"""The five conversational metrics with the real default model on examples/conversation.

Mechanics, not judgement: a 135M judge is near chance here. What must hold is
that every schema-constrained reply is valid (no parse failure, no verdict list
of the wrong length, nothing cut off), that G-Eval's distribution is read from
log-probabilities, and that each score is what its recorded verdicts give.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from localeval.config import RunConfig
from localeval.data.case import ConversationalTestCase
from localeval.data.dataset import Dataset
from localeval.metrics.conversational.turn_relevancy import exchanges
from localeval.run.runner import evaluate

pytestmark = pytest.mark.model

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "conversation"
GOOD = {"knowledge_retention": "kept", "role_adherence": "in_role", "conversation_completeness": "satisfied",
        "turn_relevancy": "relevant"}


def test_the_five_metrics_score_every_example_conversation_from_their_verdicts(llama_backend: Any) -> None:
    config = RunConfig.load(EXAMPLE / "eval.toml")
    metrics = [m.model_copy(update={"include_reason": False}) for m in config.build_metrics()]
    assert [m.kind for m in metrics] == [
        "knowledge_retention", "role_adherence", "conversation_completeness", "turn_relevancy", "conversational_geval"]
    dataset = Dataset.load(EXAMPLE / "conversations.jsonl")

    report = evaluate(dataset, metrics, llama_backend)

    assert [f"{c.name} {r.metric}: {r.error}" for c in report.cases for r in c.results if r.error] == []
    for case, case_result in zip(dataset.cases, report.cases):
        assert isinstance(case, ConversationalTestCase)
        assistant = [i + 1 for i in case.assistant_turns]
        for result in case_result.results:
            assert result.score is not None and 0.0 <= result.score <= 1.0 and not math.isnan(result.score)
            if result.kind == "conversational_geval":
                dist = result.details["distribution"]
                assert result.details["method"] == "logprobs" and math.isclose(sum(dist.values()), 1.0)
                expected = sum(p * int(s) for s, p in dist.items())
                assert math.isclose(result.raw_score or 0.0, expected) and math.isclose(result.score, (expected - 1) / 4)
                continue
            verdicts = [v["verdict"] for v in result.details["verdicts"]]
            counted = [v for v in verdicts if v != "nothing_to_retain"]  # knowledge retention leaves them out
            assert math.isclose(result.score, counted.count(GOOD[result.kind]) / len(counted))
            if result.kind == "role_adherence":
                assert [v["turn"] for v in result.details["verdicts"]] == assistant
            if result.kind == "knowledge_retention":  # the example conversations open with the user
                assert [v["turn"] for v in result.details["verdicts"]] == assistant and case.turns[0].role == "user"
            if result.kind == "turn_relevancy":
                assert [v["turn"] for v in result.details["verdicts"]] == [e.reply[-1] + 1 for e in exchanges(case)]
            if result.kind == "conversation_completeness":
                assert 1 <= len(verdicts) <= 3
