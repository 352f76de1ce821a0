"""The in-process llama.cpp backend with the real default model (SmolLM2-135M-Instruct); and the
vocabulary it uses, without a model (the fast tier). Chat formats: test_chat.py; what the prompts
are read as: test_llamacpp_prompts.py."""

from __future__ import annotations

import json
import math
import re

import llama_cpp
import numpy as np
import pytest

from localeval.backends.base import DistributionRequest, JsonRequest, Message
from localeval.backends.llamacpp import LlamaCppBackend, LlamaCppOptions, Vocabulary, json_grammar
from localeval.errors import BackendError, TruncatedOutput

QUESTION = (
    Message(role="system", content="You are a strict grader."),
    Message(role="user", content="Question: What is 2+2?\nAnswer: 4\nRate the answer from 1 to 5."),
)
DIGITS = tuple("12345")


def score_request(messages=QUESTION, prefill="Score: ", candidates=DIGITS) -> DistributionRequest:
    return DistributionRequest(messages=messages, prefill=prefill, candidates=candidates)


@pytest.mark.model
def test_fingerprint_names_the_model_file_and_runtime(llama_backend, default_model):
    spec, _ = default_model
    fp = llama_backend.fingerprint
    assert fp.kind == "llama.cpp"
    assert fp.model == "smollm2-135m-instruct"
    assert fp.model_sha256 == spec.sha256
    assert fp.runtime == f"llama-cpp-python {llama_cpp.__version__}"
    assert fp.settings["chat_format"].startswith("jinja:")


@pytest.mark.model
def test_capabilities_are_data(llama_backend):
    caps = llama_backend.capabilities
    assert (caps.json_schema, caps.distribution, caps.multi_token_candidates) == (True, True, True)


@pytest.mark.model
def test_distribution_is_renormalized_with_its_covered_mass(llama_backend):
    dist = llama_backend.candidate_distribution(score_request()).distribution
    assert set(dist.probabilities) == set(DIGITS)
    assert sum(dist.probabilities.values()) == pytest.approx(1.0, abs=1e-12)
    covered = sum(math.exp(lp) for lp in dist.logprobs.values())
    assert dist.covered_mass == pytest.approx(covered, rel=1e-12)
    assert 0.3 < dist.covered_mass <= 1.0  # FACTS.md: digits carry 60-80% after "Score: "
    for c in DIGITS:
        assert dist.probabilities[c] == pytest.approx(math.exp(dist.logprobs[c]) / covered, rel=1e-12)


def reference_whole_answers(backend, path, request) -> dict[str, float]:
    """An independent read: llama-cpp-python's logits_all scores, log-softmaxed by numpy.

    log P(c) from the positions of c's tokens, plus log P(the answer ends | c): the mass after c
    of the tokens that begin neither with a digit nor with "." and a digit, and of a bare "."
    times the mass after it of tokens that do not begin with a digit. The prompt is read cold
    in n_batch batches, then a continuation's tokens one at a time, as the model reads them when
    it generates (a one-token batch gives other logits than a longer one: up to 0.1).
    """
    reference = llama_cpp.Llama(model_path=str(path), n_ctx=1024, n_batch=64, logits_all=True, verbose=False)
    texts = [reference.detokenize([t]) for t in range(reference.n_vocab())]
    digit = np.array([re.match(rb"[0-9]", t) is not None for t in texts])
    goes_on = np.array([re.match(rb"[0-9]|\.[0-9]", t) is not None or t == b"." for t in texts])
    points = [t for t, text in enumerate(texts) if text == b"."]  # gemma has two
    prompt = backend._prompt_tokens(backend._format.render(request.messages, request.prefill), 0)
    reference.eval(prompt)

    def after(prefix: list[int]) -> np.ndarray:
        reference.n_tokens = len(prompt)
        for token in prefix:
            reference.eval([token])
        logits = reference.scores[len(prompt) + len(prefix) - 1].astype(np.float64)
        return logits - (logits.max() + np.log(np.exp(logits - logits.max()).sum()))

    result = {}
    for c in request.candidates:
        toks = reference.tokenize(c.encode(), add_bos=False)
        start = sum(float(after(toks[:i])[toks[i]]) for i in range(len(toks)))
        nxt = after(toks)
        full_stop = sum(np.exp(nxt[p]) * np.exp(after([*toks, p])[~digit]).sum() for p in points)
        result[c] = start + float(np.log(np.exp(nxt[~goes_on]).sum() + full_stop))
    reference.close()
    return result


@pytest.mark.model
def test_distribution_matches_llamas_own_full_logits(llama_backend, default_model):
    _, path = default_model
    request = score_request()
    ours = llama_backend.candidate_distribution(request).distribution
    assert ours.whole_answers is True
    reference = reference_whole_answers(llama_backend, path, request)
    for c in DIGITS:
        assert ours.logprobs[c] == pytest.approx(reference[c], abs=1e-5)


@pytest.mark.model
def test_zero_to_ten_whole_answers_match_an_independent_read_on_both_models(shipped_backend):
    """Issue 13: P(score 1) = P("1") · P(the number ends | "1"), which excludes "10" and "15" alike."""
    request = score_request(candidates=tuple(str(s) for s in range(11)))
    ours = shipped_backend.candidate_distribution(request).distribution
    reference = reference_whole_answers(shipped_backend, shipped_backend._llm.model_path, request)
    for c in request.candidates:
        assert ours.logprobs[c] == pytest.approx(reference[c], abs=1e-5)
    assert ours.covered_mass == pytest.approx(math.fsum(math.exp(v) for v in reference.values()), rel=1e-4)


@pytest.mark.model
def test_the_vocabulary_sorts_tokens_by_what_they_do_to_a_number(shipped_backend):
    vocabulary = shipped_backend._vocabulary()
    for piece, ends in (("0", 0.0), ("7", 0.0), (".", 0.0), (" ", 1.0), ("/", 1.0), ("\n", 1.0)):
        (token,) = shipped_backend._llm.tokenize(piece.encode(), add_bos=False, special=False)
        assert vocabulary.classes["ends"][token] == ends, piece
    assert all(shipped_backend._llm.detokenize([int(p)]) == b"." for p in vocabulary.ids["."])
    assert all(len(vocabulary.ids[d]) >= 1 for d in "0123456789")  # gemma has two of each


def test_a_vocabulary_from_plain_texts():
    vocabulary = Vocabulary.from_texts(["0", "05", " 3", "3", "3 ", ".", "", ""])
    assert vocabulary.ids[""].tolist() == [6, 7] and vocabulary.ids["3"].tolist() == [3]
    assert vocabulary.by_core["3"] == (" 3", "3", "3 ")
    assert vocabulary.classes["ends"].tolist() == [0, 0, 1, 0, 0, 0, 1, 1]
    assert vocabulary.classes["point"].tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
    assert vocabulary.classes["no_digit"].tolist() == [0, 0, 1, 0, 0, 1, 1, 1]


@pytest.mark.model
def test_a_top_k_view_reads_what_a_server_capped_at_k_would(llama_backend, default_model):
    """top_logprobs = k counts only the k most likely tokens at each position; what they leave out after a
    score counts as its end (issue 28): the listed part is below the whole vocabulary's mass, and the score
    within the stated bound of the whole vocabulary's."""
    spec, path = default_model
    capped = LlamaCppBackend(path, spec, LlamaCppOptions(top_logprobs=20))
    assert capped.capabilities.max_top_logprobs == 20 and capped.fingerprint.settings["top_logprobs"] == 20
    request = score_request(candidates=tuple(str(s) for s in range(11)))
    few = capped.candidate_distribution(request).distribution
    capped.close()
    full = llama_backend.candidate_distribution(request).distribution
    assert 0.0 < few.unlisted_mass and few.covered_mass - few.unlisted_mass < full.covered_mass
    values = {c: float(c) for c in request.candidates}
    bound = few.unlisted_mass / (few.covered_mass - few.unlisted_mass)
    assert abs(few.expected_value(values) - full.expected_value(values)) / 10 <= bound


@pytest.mark.model
def test_the_score_position_follows_the_prefill_space(llama_backend):
    # FACTS.md: after "Score:" the next token is mostly a space; after "Score: " it is the digit.
    without_space = llama_backend.candidate_distribution(score_request(prefill="Score:"))
    with_space = llama_backend.candidate_distribution(score_request())
    assert with_space.distribution.covered_mass > 10 * without_space.distribution.covered_mass


@pytest.mark.model
def test_same_request_gives_bit_identical_numbers(llama_backend):
    first = llama_backend.candidate_distribution(score_request())
    second = llama_backend.candidate_distribution(score_request())
    assert first.distribution == second.distribution


@pytest.mark.model
def test_a_warm_read_equals_a_cold_read(llama_backend, default_model):
    """Reusing a shared prefix must not change a score: batches are aligned to n_batch."""
    spec, path = default_model
    long_prefix = "Background:\n" + "The committee met on Tuesday and reviewed the budget. " * 20
    a = (Message(role="user", content=long_prefix + "\nIs 2+2=4? Rate 1-5."),)
    b = (Message(role="user", content=long_prefix + "\nIs 3+3=7? Rate 1-5."),)
    llama_backend.candidate_distribution(score_request(a))  # leaves a's prefix in the KV cache
    warm = llama_backend.candidate_distribution(score_request(b)).distribution
    cold_backend = LlamaCppBackend(path, spec)
    cold = cold_backend.candidate_distribution(score_request(b)).distribution
    cold_backend.close()
    assert warm == cold


@pytest.mark.model
def test_multi_token_candidates_get_their_exact_joint_probability(llama_backend, default_model):
    (ten,) = [c for c in ("10",) if len(llama_backend._candidate_tokens(c)) == 2]
    request = score_request(candidates=(ten, "2", "3"))
    joint = llama_backend.candidate_distribution(request)
    reference = reference_whole_answers(llama_backend, default_model[1], request)
    assert joint.distribution.logprobs["10"] == pytest.approx(reference["10"], abs=1e-5)
    # After "1", "10", "2", "3", and after each of "10", "2", "3" then ".".
    assert joint.usage.completion_tokens == 7


@pytest.mark.model
def test_a_candidates_probability_does_not_depend_on_the_other_candidates(llama_backend):
    """P(score 1) must not include P(score 10), whether "10" is a candidate or not."""
    nested = llama_backend.candidate_distribution(score_request(candidates=("1", "10", "2")))
    alone = llama_backend.candidate_distribution(score_request(candidates=("1", "2")))
    assert nested.distribution.logprobs["1"] == alone.distribution.logprobs["1"]
    assert nested.distribution.logprobs["2"] == alone.distribution.logprobs["2"]
    assert nested.distribution.covered_mass > alone.distribution.covered_mass  # "10" adds its own


VERDICTS_SCHEMA = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {"type": "string", "enum": ["yes", "no", "idk"]},
            "minItems": 3,
            "maxItems": 3,
        },
        "reason": {"type": "string", "maxLength": 80},
    },
    "required": ["verdicts", "reason"],
    "additionalProperties": False,
}
STATEMENTS = (
    Message(
        role="user",
        content="For each statement say yes, no or idk: is it true?\n1. Paris is in France.\n"
        "2. The sun is cold.\n3. Cats can fly.\nAnswer in JSON.",
    ),
)


@pytest.mark.model
def test_generate_json_conforms_to_the_schema(llama_backend):
    reply = llama_backend.generate_json(JsonRequest(messages=STATEMENTS, json_schema=VERDICTS_SCHEMA))
    assert reply.finish_reason == "stop"
    assert len(reply.value["verdicts"]) == 3
    assert set(reply.value["verdicts"]) <= {"yes", "no", "idk"}
    assert json.loads(reply.text) == reply.value
    assert reply.usage.completion_tokens > 0


@pytest.mark.model
def test_generate_json_is_deterministic_at_temperature_zero(llama_backend):
    request = JsonRequest(messages=STATEMENTS, json_schema=VERDICTS_SCHEMA)
    assert llama_backend.generate_json(request).text == llama_backend.generate_json(request).text


@pytest.mark.model
def test_unbounded_arrays_are_bounded_inside_the_grammar(default_model):
    spec, path = default_model
    schema = {"type": "object", "properties": {"n": {"type": "array", "items": {"type": "integer"}}},
              "required": ["n"]}
    prompt = (Message(role="user", content="List the integers from 1 to 30 as JSON: {\"n\": [1, 2, ...]}"),)
    backend = LlamaCppBackend(path, spec, LlamaCppOptions(max_items=4))
    reply = backend.generate_json(JsonRequest(messages=prompt, json_schema=schema, max_tokens=400))
    backend.close()
    assert reply.finish_reason == "stop"
    assert 1 <= len(reply.value["n"]) <= 4


# A meeting summary whose headings the default model copies with their line breaks: with
# llama-cpp-python's own JSON grammar its reply held a raw newline inside a string
# ("Invalid control character at char 150"); JSON's string rule keeps it valid.
SUMMARY = (
    "## Intro\nFay ran the launch check.\n## Body\nThe website and press release are ready; support knows "
    "the new prices.\n## Conclusion\nLaunch is on Monday."
)


@pytest.mark.model
def test_a_string_never_holds_a_raw_control_character(llama_backend):
    schema = {"type": "object", "properties": {"output": {"type": "string", "minLength": 1, "maxLength": 400}},
              "required": ["output"], "additionalProperties": False}
    prompt = ("Task: Extract all headings in the summary, in order.\n\nSummary:\n" + SUMMARY +
              '\n\nWrite only the result of the task. Answer in JSON: {"output": "..."}')
    request = JsonRequest(
        messages=[Message(role="system", content="You do one small task on a text and write only the result."),
                  Message(role="user", content=prompt)],
        json_schema=schema, max_tokens=300,
    )
    reply = llama_backend.generate_json(request)
    assert not any(ord(c) < 0x20 for c in reply.value["output"])
    assert json.loads(reply.text) == reply.value


@pytest.mark.model  # no model, but llama.cpp's own grammar parser: llama_cpp is the model tier's import
def test_the_grammar_keeps_json_string_characters():
    grammar = json_grammar({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    assert r'''char ::= [^"\\\x00-\x1F] | "\\" ''' in grammar
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # llama.cpp accepts it


@pytest.mark.model
def test_a_cut_off_reply_is_an_error(llama_backend):
    request = JsonRequest(messages=STATEMENTS, json_schema=VERDICTS_SCHEMA, max_tokens=4)
    with pytest.raises(TruncatedOutput, match="max_tokens=4"):
        llama_backend.generate_json(request)


@pytest.mark.model
def test_a_prompt_longer_than_the_context_is_an_error(llama_backend):
    long = (Message(role="user", content="word " * 5000),)
    with pytest.raises(BackendError, match="n_ctx"):
        llama_backend.candidate_distribution(score_request(long))


@pytest.mark.model
def test_threads_are_configurable(default_model):
    spec, path = default_model
    backend = LlamaCppBackend(path, spec, LlamaCppOptions(n_threads=2))
    assert (backend._llm.n_threads, backend._llm.n_threads_batch) == (2, 2)
    backend.close()
