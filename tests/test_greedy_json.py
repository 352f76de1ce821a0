"""Greedy JSON writing (localeval/backends/greedy.py) against llama-cpp-python's create_completion with
the same grammar, on both shipped models (49k and 262k tokens): the same tokens, the same finish and
count, the same context left for the next request's prefix reuse, the same seed."""

from __future__ import annotations

import functools
import math

import pytest
from scripted import ScriptedBackend

from localeval.backends.base import JsonRequest, Message
from localeval.backends.greedy import Written
from localeval.backends.schema import bound_arrays
from localeval.data.case import TestCase
from localeval.metrics import Faithfulness, GEval

ANSWER = TestCase(input="What is the capital of Australia?", actual_output="Sydney is the capital of Australia.",
                  expected_output="Canberra is the capital of Australia.")
RAG_ANSWER = TestCase(input="What if these shoes don't fit?",
                      actual_output="You can return them within 30 days. Shipping is free.",
                      retrieval_context=["All customers can return items within 30 days.",
                                         "Shipping is free over 50 dollars."])


@functools.cache
def metric_requests() -> dict[str, JsonRequest]:
    """The JSON requests the metrics send (their prompts, schemas, max_tokens), as a scripted judge records them."""
    geval = ScriptedBackend(json_values=[{"steps": ["Check the city."]}, {"reason": "It names the wrong city."}],
                            logprobs=[{str(s): math.log(p) for s, p in zip(range(1, 6), (.6, .2, .1, .05, .05))}])
    GEval(name="correctness", criteria="The answer states the same fact as the expected output.",
          evaluation_params=["input", "actual_output", "expected_output"]).measure(ANSWER, geval)
    faithfulness = ScriptedBackend(json_values=[{"verdicts": ["yes", "no"]}, {"reason": "One claim is contradicted."}])
    Faithfulness().measure(RAG_ANSWER, faithfulness)
    steps, reason = [r for r in geval.requests if isinstance(r, JsonRequest)]
    verdicts, verdicts_reason = faithfulness.requests
    assert isinstance(verdicts, JsonRequest) and isinstance(verdicts_reason, JsonRequest)
    assert "verdicts" in verdicts.json_schema["properties"] and "steps" in steps.json_schema["properties"]
    return {"G-Eval steps": steps, "G-Eval reason": reason, "verdict list": verdicts,
            "faithfulness reason": verdicts_reason}


def written_both_ways(backend, request: JsonRequest) -> tuple[tuple[Written, tuple], tuple[Written, tuple]]:
    """The reply as generate_json writes it, and as create_completion does, each after the same aligned
    prompt read; with the context (and seed) each leaves behind."""
    schema = bound_arrays(request.json_schema, backend.options.max_items)
    tokens = backend._prompt_tokens(backend._format.render(request.messages), request.max_tokens)
    grammar = backend._grammar(schema)
    llm = backend._llm
    seed = llm._seed  # where a request without a seed draws its seed from
    found = []
    for write in (backend._write_json, backend._completion):
        llm.set_seed(seed)
        backend._read_prompt(tokens)
        written = write(tokens, grammar, request)
        found.append((written, (llm.n_tokens, llm.input_ids[: llm.n_tokens].tolist(), llm._seed)))
    return found[0], found[1]


def assert_same(greedy: tuple[Written, tuple], completion: tuple[Written, tuple]) -> None:
    (ours, our_context), (theirs, their_context) = greedy, completion
    assert (ours.text, ours.finish_reason, ours.completion_tokens) == (
        theirs.text, theirs.finish_reason, theirs.completion_tokens)
    assert our_context == their_context


@pytest.mark.model
@pytest.mark.parametrize("name", ["G-Eval steps", "G-Eval reason", "verdict list", "faithfulness reason"])
def test_greedy_writes_what_create_completion_writes(shipped_backend, name):
    greedy, completion = written_both_ways(shipped_backend, metric_requests()[name])
    assert_same(greedy, completion)
    assert greedy[0].finish_reason == "stop" and greedy[0].completion_tokens > 5


@pytest.mark.model
def test_a_token_the_grammar_refuses_is_chosen_from_the_whole_vocabulary(shipped_backend):
    """Asked to say hello, the model's first choice is not JSON: the grammar refuses it, and the
    whole vocabulary answers. No seed: create_completion then draws the next one from the last."""
    request = JsonRequest(messages=[Message(role="user", content="Say hello to me.")],
                          json_schema=metric_requests()["G-Eval reason"].json_schema, max_tokens=60, seed=None)
    greedy, completion = written_both_ways(shipped_backend, request)
    assert greedy[0].refusals >= 2
    assert_same(greedy, completion)


@pytest.mark.model
@pytest.mark.parametrize("max_tokens", [1, 3, 5])
def test_a_reply_cut_off_by_max_tokens(shipped_backend, max_tokens):
    request = metric_requests()["G-Eval reason"].model_copy(update={"max_tokens": max_tokens})
    greedy, completion = written_both_ways(shipped_backend, request)
    assert (greedy[0].finish_reason, greedy[0].completion_tokens) == ("length", max_tokens)
    assert_same(greedy, completion)


@pytest.mark.model
def test_an_unfinished_character_is_written_to_its_end_past_max_tokens(llama_backend):
    """SmolLM2 writes Japanese a byte at a time: create_completion writes on past max_tokens until
    the character is whole (8 tokens asked, 9 written), and so does greedy."""
    request = JsonRequest(
        messages=[Message(role="user", content="Translate 'good morning, how are you' into Japanese. Reply in JSON.")],
        json_schema=metric_requests()["G-Eval reason"].json_schema, max_tokens=8)
    greedy, completion = written_both_ways(llama_backend, request)
    assert (greedy[0].finish_reason, greedy[0].completion_tokens) == ("length", 9)
    assert_same(greedy, completion)


@pytest.mark.model
def test_generate_json_replies_as_create_completion_did(llama_backend):
    request = metric_requests()["verdict list"]
    reply = llama_backend.generate_json(request)
    _greedy, (theirs, _context) = written_both_ways(llama_backend, request)
    assert (reply.text, reply.finish_reason, reply.usage.completion_tokens) == (
        theirs.text, theirs.finish_reason, theirs.completion_tokens)
    assert reply.value["verdicts"] and reply.usage.prompt_tokens > 0


@pytest.mark.model
def test_sampling_keeps_create_completion(llama_backend, monkeypatch):
    from localeval.backends import greedy

    def refused(*args, **kwargs):
        raise AssertionError("greedy writing for a sampled request")

    monkeypatch.setattr(greedy, "write_greedy", refused)
    request = metric_requests()["G-Eval reason"].model_copy(update={"temperature": 0.8, "seed": 7})
    sampled, completion = written_both_ways(llama_backend, request)
    assert_same(sampled, completion)
