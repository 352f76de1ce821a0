"""``batch_continuations``: a whole-answer score's reply prefixes read a depth at a time as branches of one
batch (localeval/backends/branches.py), against the one-token-at-a-time reading, on both shipped models.

The batched numbers are not bit-identical to one token at a time (llama.cpp's batched kernels sum in
another order; docs/measurements/score-cost.md): the option is off by default, and these tests pin what it
promises instead: the same prefixes read, scores near, the same numbers every time, the prompt's sequence
left as it was for the next score.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import llama_cpp
import pytest

from localeval.backends.base import DistributionRequest, Message
from localeval.backends.catalog import ModelCatalog
from localeval.backends.llamacpp import LlamaCppBackend, LlamaCppOptions
from localeval.distribution import CandidateDistribution
from localeval.paths import Paths

QUESTION = (
    Message(role="system", content="You are a strict grader."),
    Message(role="user", content="Question: What is the capital of France?\nAnswer: Paris.\nRate the answer."),
)
RANGES = {"1-5": range(1, 6), "0-10": range(11), "0-100": range(101)}
#: How far the two readings' scores may be, as a fraction of the range: measured up to 0.020 (SmolLM2, 1-5,
#: on QUESTION; 5e-3 on four G-Eval cases; Gemma 0.016 on them), with room. A reading that lost its prompt's
#: or its parent's cells scores nothing like it.
NEAR = 0.05


def request(score_range: str) -> DistributionRequest:
    return DistributionRequest(messages=QUESTION, prefill="Score: ",
                               candidates=tuple(str(s) for s in RANGES[score_range]))


def unit_score(dist: CandidateDistribution, score_range: str) -> float:
    values = {str(s): float(s) for s in RANGES[score_range]}
    low, high = min(values.values()), max(values.values())
    return (dist.expected_value(values) - low) / (high - low)


@pytest.fixture(scope="module", params=["smollm2-135m-instruct", "gemma-3-270m"])
def backends(request: pytest.FixtureRequest) -> Iterator[tuple[LlamaCppBackend, LlamaCppBackend]]:
    """One model loaded twice: one token at a time (the default), and batched."""
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve(request.param)
    one = LlamaCppBackend(path, spec)
    batched = LlamaCppBackend(path, spec, LlamaCppOptions(batch_continuations=True))
    yield one, batched
    one.close()
    batched.close()


@pytest.mark.model
def test_the_default_opens_one_sequence_and_keeps_the_fingerprint(backends):
    one, batched = backends
    assert llama_cpp.llama_n_seq_max(one._llm.ctx) == 1
    assert "continuations" not in one.fingerprint.settings  # caches filled before keep their keys
    assert llama_cpp.llama_n_seq_max(batched._llm.ctx) == 64  # n_batch
    assert batched.fingerprint.settings["continuations"] == "batched"


@pytest.mark.model
@pytest.mark.parametrize("score_range", list(RANGES))
def test_batched_reads_the_same_prefixes_and_scores_near_one_token_at_a_time(backends, score_range):
    one, batched = backends
    slow = one.candidate_distribution(request(score_range))
    fast = batched.candidate_distribution(request(score_range))
    assert fast.usage == slow.usage  # the same positions read
    assert fast.distribution.whole_answers and fast.distribution.unlisted_mass == 0.0
    assert abs(unit_score(fast.distribution, score_range) - unit_score(slow.distribution, score_range)) < NEAR
    assert fast.distribution.covered_mass == pytest.approx(slow.distribution.covered_mass, rel=0.05)


@pytest.mark.model
def test_batched_gives_the_same_numbers_every_time_and_leaves_the_prompt_for_the_next_score(backends):
    _, batched = backends
    first = batched.candidate_distribution(request("0-10")).distribution
    assert batched.candidate_distribution(request("0-10")).distribution == first
    # The branches are gone: only the prompt's sequence holds cells, as many as the prompt's tokens.
    memory = llama_cpp.llama_get_memory(batched._llm.ctx)
    assert [llama_cpp.llama_memory_seq_pos_max(memory, s) for s in range(1, 64)] == [-1] * 63
    assert llama_cpp.llama_memory_seq_pos_max(memory, 0) == batched._llm.n_tokens - 1
    # A score after another prompt reuses the shared prefix and equals a cold read of it.
    other = request("0-10").model_copy(update={"messages": (*QUESTION[:1], Message(role="user", content="2+2=5?"))})
    batched.candidate_distribution(other)
    assert batched.candidate_distribution(request("0-10")).distribution == first
