"""``prune_below``: a whole-answer score leaves out the reply prefixes less likely than it, and says how
much probability it left unread (localeval/distribution.py's read_whole_answers; the metric option and
[metrics_defaults] in localeval/metrics/criteria.py and localeval/config.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from localeval.backends.base import DistributionRequest, Message
from localeval.backends.cache import cache_key
from localeval.backends.catalog import ModelCatalog
from localeval.backends.llamacpp import LlamaCppBackend
from localeval.data.case import TestCase
from localeval.distribution import PRUNE_BELOW, CandidateDistribution
from localeval.metrics import build_metric
from localeval.paths import Paths
from localeval.testing import ScriptedJudge

QUESTION = (
    Message(role="system", content="You are a strict grader."),
    Message(role="user", content="Question: What is the capital of France?\nAnswer: Paris.\nRate the answer."),
)
CASE = TestCase(input="What is the capital of France?", actual_output="Paris.")


def request(high: int, prune_below: float = PRUNE_BELOW) -> DistributionRequest:
    return DistributionRequest(messages=QUESTION, prefill="Score: ", candidates=tuple(str(s) for s in range(high + 1)),
                               prune_below=prune_below)


def unit_score(dist: CandidateDistribution, high: int) -> float:
    return dist.expected_value({str(s): s / high for s in range(high + 1)})


def test_a_request_at_the_default_threshold_is_keyed_as_before_the_option() -> None:
    """The default leaves the request's JSON as it was: a cache keeps every reply it holds; another
    threshold is another key."""
    default = request(10)
    assert set(default.model_dump(mode="json")) == {"messages", "prefill", "candidates"}
    assert request(10, 1e-4).model_dump(mode="json")["prune_below"] == 1e-4
    fingerprint = ScriptedJudge().fingerprint
    assert cache_key("distribution", fingerprint, default) != cache_key("distribution", fingerprint, request(10, 1e-4))


def test_a_threshold_above_one_percent_is_refused() -> None:
    with pytest.raises(ValueError, match="prune_below"):
        request(10, 0.5)


def test_geval_asks_with_its_threshold_and_reports_the_unread_mass() -> None:
    judge = ScriptedJudge(logprobs=[{"1": -3.0, "2": -2.0, "3": -1.0, "4": -0.5, "5": -2.5}])
    metric = build_metric("geval", {"criteria": "Correct.", "evaluation_steps": ["Check."], "include_reason": False,
                                    "prune_below": 1e-4})
    result = metric.measure(CASE, judge)
    assert judge.requests[-1].prune_below == 1e-4
    assert result.details["unread_mass"] == 0.0  # the scripted judge reads no prefixes


@pytest.fixture(scope="module")
def smollm2() -> Iterator[LlamaCppBackend]:
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve("smollm2-135m-instruct")
    backend = LlamaCppBackend(path, spec)
    yield backend
    backend.close()


@pytest.mark.model
def test_a_coarser_threshold_reads_fewer_prefixes_and_stays_within_its_bound(smollm2: LlamaCppBackend) -> None:
    """0-100 (SmolLM2 spreads its mass over many numbers: 202 continuations read at the default, 76 at 1e-3)."""
    high = 100
    every = smollm2.candidate_distribution(request(high))
    coarse = smollm2.candidate_distribution(request(high, 1e-3))
    assert coarse.usage.completion_tokens < every.usage.completion_tokens  # fewer continuations read
    assert every.distribution.unread_mass < 1e-7 < coarse.distribution.unread_mass
    gap = abs(unit_score(every.distribution, high) - unit_score(coarse.distribution, high))
    bound = (coarse.distribution.unread_mass / coarse.distribution.covered_mass
             + every.distribution.unread_mass / every.distribution.covered_mass)
    assert gap <= bound
