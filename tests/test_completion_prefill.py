"""The ``completion`` prefill: request shapes and reply parsing, against fakes (no model).

The real-server agreement with in-process scores is in test_http_backends.py.
"""

from __future__ import annotations

import math

import httpx
import pytest
from servers import PROBE_OK, FakeServer, completion, fake_backend, legacy_completion, token

from localeval.backends import make_backend
from localeval.backends.base import DistributionRequest, Message
from localeval.backends.chat import CHATML, JinjaChatFormat
from localeval.backends.openai_shapes import completion_tokens
from localeval.errors import BackendError, ConfigError

GRADE = (Message(role="system", content="Grade."), Message(role="user", content="2+2=4. Score 1-5."))
SCORE = DistributionRequest(messages=GRADE, prefill="Score: ", candidates=tuple("12345"))
CHATML_PROMPT = "<|im_start|>system\nGrade.<|im_end|>\n<|im_start|>user\n2+2=4. Score 1-5.<|im_end|>\n" \
                "<|im_start|>assistant\nScore: "
TOP = {"4": -0.9, "5": -1.5, " 3": -2.0, "\n": -3.0}
LEGACY_PROBE = legacy_completion("OK", {"OK": -0.1})


#: After a score: the answer ends ("\n") with e^-0.1, goes on ("0") with e^-3.
ENDS = legacy_completion("\n", {"\n": -0.1, "0": -3.0})
#: What a server's list says of the end there: all but what goes on, the unlisted rest included (issue 28).
END = math.log1p(-math.exp(-3.0))


def test_the_client_renders_the_prompt_and_reads_whole_answers_after_it():
    server = FakeServer([LEGACY_PROBE, legacy_completion("4", TOP), ENDS, ENDS, ENDS])
    backend = fake_backend(server, prefill="completion", chat_template="chatml", extra_body={"cache_prompt": False})
    assert backend.capabilities.distribution is True and backend.capabilities.multi_token_candidates is True
    reply = backend.candidate_distribution(SCORE)
    assert server.paths == ["/v1/completions"] * 5  # the probe too: the route scores use
    assert server.bodies[1] == {"cache_prompt": False, "model": "judge-7b", "prompt": CHATML_PROMPT,
                                "max_tokens": 1, "temperature": 100.0, "seed": 0, "logprobs": 20}
    # Then after each candidate the server listed, appended to the prefill (" 3" is "3" too).
    assert [body["prompt"].removeprefix(CHATML_PROMPT) for body in server.bodies[2:]] == [" 3", "4", "5"]
    dist = reply.distribution
    assert dist.logprobs == {"1": -math.inf, "2": -math.inf, "3": pytest.approx(-2.0 + END),
                             "4": pytest.approx(-0.9 + END), "5": pytest.approx(-1.5 + END)}
    assert dist.covered_mass == pytest.approx((math.exp(-0.9) + math.exp(-1.5) + math.exp(-2.0)) * math.exp(END),
                                              rel=1e-12)
    assert dist.whole_answers is True
    assert reply.usage.prompt_tokens == 9 * 4
    assert backend.fingerprint.settings["chat_template"] == JinjaChatFormat(CHATML).identity
    assert backend.fingerprint.settings["candidates"] == "whole answer"


def test_zero_to_ten_reads_ten_after_one():
    top = {"1": -0.5, "7": -1.0}
    server = FakeServer([LEGACY_PROBE, legacy_completion("1", top), legacy_completion("0", {"0": -0.7, "\n": -1.2}),
                         ENDS, ENDS])
    backend = fake_backend(server, prefill="completion", chat_template="chatml")
    request = SCORE.model_copy(update={"candidates": tuple(str(s) for s in range(11))})
    dist = backend.candidate_distribution(request).distribution
    assert [body["prompt"].removeprefix(CHATML_PROMPT) for body in server.bodies[2:]] == ["1", "10", "7"]
    assert dist.logprobs["1"] == pytest.approx(-0.5 + math.log1p(-math.exp(-0.7)))  # "1" then the end: not "10"
    assert dist.logprobs["10"] == pytest.approx(-0.5 - 0.7 + END)
    assert dist.logprobs["7"] == pytest.approx(-1.0 + END)


def test_a_server_that_stops_at_once_is_asked_with_the_next_seed():
    stopped = legacy_completion("", None, finish="stop")
    server = FakeServer([LEGACY_PROBE, stopped, legacy_completion("4", {"4": -0.2}), ENDS])
    backend = fake_backend(server, prefill="completion", chat_template="chatml")
    dist = backend.candidate_distribution(SCORE).distribution
    assert [body["seed"] for body in server.bodies[1:]] == [0, 1, 0]
    assert dist.logprobs["4"] == pytest.approx(-0.2 + END) and backend.capabilities.distribution is True


def test_llama_server_shape_and_its_own_template_from_props():
    template = "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}\n{% endfor %}" \
               "{% if add_generation_prompt %}[assistant] {% endif %}"
    props = {"chat_template": template, "bos_token": "<s>", "eos_token": "</s>", "build_info": "b6000"}
    reply = httpx.Response(200, json={"choices": [{"text": "4", "index": 0, "finish_reason": "length",
                                                   "logprobs": {"content": [token("4", TOP)]}}]})
    server = FakeServer([PROBE_OK, reply, ENDS, ENDS, ENDS], props=props)
    backend = fake_backend(server, prefill="completion")
    assert backend.capabilities.distribution is True
    dist = backend.candidate_distribution(SCORE).distribution
    # no "<s>": the server adds the BOS token itself when the model's vocabulary asks for it
    assert server.bodies[1]["prompt"] == "[system] Grade.</s>\n[user] 2+2=4. Score 1-5.</s>\n[assistant] Score: "
    assert dist.logprobs["4"] == pytest.approx(-0.9 + END) and dist.logprobs["3"] == pytest.approx(-2.0 + END)


def test_a_template_file(tmp_path):
    path = tmp_path / "template.jinja"
    path.write_text("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>")
    server = FakeServer([LEGACY_PROBE, legacy_completion("4", TOP), ENDS, ENDS, ENDS])
    backend = fake_backend(server, prefill="completion", chat_template=str(path))
    backend.candidate_distribution(SCORE)
    assert server.bodies[1]["prompt"] == "<system>Grade.<user>2+2=4. Score 1-5.<assistant>Score: "
    assert backend.fingerprint.settings["chat_template"] == JinjaChatFormat(path.read_text()).identity


def test_template_problems_are_config_errors_at_construction(tmp_path):
    with pytest.raises(ConfigError, match="the server does not report its template; set chat_template to 'chatml'"):
        fake_backend(FakeServer([]), prefill="completion")
    with pytest.raises(ConfigError, match=r"chat_template: cannot read .*missing.jinja: No such file"):
        fake_backend(FakeServer([]), prefill="completion", chat_template=str(tmp_path / "missing.jinja"))
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}")
    with pytest.raises(ConfigError, match=r"broken.jinja is not a valid template"):
        fake_backend(FakeServer([]), prefill="completion", chat_template=str(broken))


def test_a_template_that_refuses_the_messages_is_a_backend_error(tmp_path):
    path = tmp_path / "strict.jinja"
    path.write_text("{{ raise_exception('roles must alternate user/assistant') }}")
    backend = fake_backend(FakeServer([LEGACY_PROBE]), prefill="completion", chat_template=str(path))
    with pytest.raises(BackendError, match="cannot render these messages: roles must alternate"):
        backend.candidate_distribution(SCORE)


def test_no_logprobs_and_no_candidate_at_the_position():
    null = fake_backend(FakeServer([legacy_completion("OK", None)]), prefill="completion", chat_template="chatml")
    assert null.capabilities.distribution is False
    assert "logprobs is null" in null.capabilities.notes["distribution"]
    server = FakeServer([LEGACY_PROBE, legacy_completion("The", {"The": -0.2, "I": -1.0})])
    backend = fake_backend(server, prefill="completion", chat_template="chatml")
    with pytest.raises(BackendError, match=r"none of the candidates .* at the score position.*\['The', 'I'\]"):
        backend.candidate_distribution(SCORE)


def test_the_llama_cpp_python_preset_uses_it():
    server = FakeServer([])
    backend = make_backend("llama-cpp-python", transport=httpx.MockTransport(server))
    settings = backend.fingerprint.settings
    assert (settings["prefill"], settings["chat_template"]) == ("completion", JinjaChatFormat(CHATML).identity)
    assert settings["base_url"] == "http://localhost:8000/v1"
    other = make_backend("llama-cpp-python", transport=httpx.MockTransport(server), prefill="grammar")
    assert "chat_template" not in other.fingerprint.settings  # only the completion prefill reads it


@pytest.mark.parametrize("prefill", ["completion", "continue"])
def test_reuse_score_prompt_reads_the_prompt_cold_once_then_keeps_it_for_the_continuations(prefill):
    reply = legacy_completion if prefill == "completion" else (
        lambda text, top: completion(text, [token(text, top)]))
    ends = reply("\n", {"\n": -0.1, "0": -3.0})
    server = FakeServer([LEGACY_PROBE if prefill == "completion" else PROBE_OK, reply("4", TOP), ends, ends, ends])
    backend = fake_backend(server, prefill=prefill, chat_template="chatml", extra_body={"cache_prompt": False},
                           reuse_score_prompt=True)
    backend.candidate_distribution(SCORE)
    # The probe and the score's first request as extra_body says; each continuation keeps the prompt.
    assert [body["cache_prompt"] for body in server.bodies] == [False, False, True, True, True]
    assert backend.fingerprint.settings["reuse_score_prompt"] is True
    plain = fake_backend(FakeServer([]), prefill=prefill, chat_template="chatml")
    assert "reuse_score_prompt" not in plain.fingerprint.settings  # the keys of older caches stay valid


def test_the_llama_server_preset_reuses_a_scores_prompt_and_nothing_else():
    settings = make_backend("llama-server", transport=httpx.MockTransport(FakeServer([]))).fingerprint.settings
    assert (settings["prefill"], settings["extra_body"]) == ("continue", {"cache_prompt": False})
    assert settings["reuse_score_prompt"] is True


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        (None, None),
        ({"tokens": [], "token_logprobs": [], "top_logprobs": []}, None),
        ({"tokens": ["4"], "token_logprobs": [-0.3], "top_logprobs": [{"4": -0.3, "5": None}]},
         [("4", -0.3, (("4", -0.3), ("5", -math.inf)))]),
        ({"tokens": ["4"], "token_logprobs": [1e-7], "top_logprobs": [None]}, [("4", 0.0, ())]),
        ({"content": [{"token": "4", "logprob": -0.3, "top_logprobs": [{"token": "4", "logprob": -0.3}]}]},
         [("4", -0.3, (("4", -0.3),))]),
    ],
)
def test_completion_tokens_reads_both_shapes(logprobs, expected):
    tokens = completion_tokens({"text": "4", "logprobs": logprobs})
    assert (None if tokens is None else [(t.text, t.logprob, t.top) for t in tokens]) == expected


@pytest.mark.model
def test_a_gguf_files_template_renders_the_score_prompt_as_a_server_running_it_does(default_model):
    """llama-cpp-python's server renders a chat with the template the GGUF carries (SmolLM2's and Qwen's add a
    system line to a chat that has none, which plain ChatML lacks): chat_template = the .gguf reads the same."""
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from localeval.backends.completions import completion_chat_format

    _, path = default_model
    model = Llama(str(path), vocab_only=True, verbose=False)
    eos = model.detokenize([model.token_eos()], special=True).decode()
    served = Jinja2ChatFormatter(model.metadata["tokenizer.chat_template"], eos_token=eos, bos_token="")
    messages = (Message(role="user", content="Rate the answer."),)
    server_prompt = served(messages=[{"role": "user", "content": "Rate the answer."}]).prompt
    ours = completion_chat_format(str(path), None, "llama-cpp-python").render(messages, "Score: ")
    assert str(ours) == server_prompt + "Score: "
    assert "SmolLM" in server_prompt and str(JinjaChatFormat(CHATML).render(messages, "Score: ")) != str(ours)


@pytest.mark.parametrize(("name", "message"), [("missing.gguf", "no such model file"),
                                               ("not-a-model.gguf", ".*is not a GGUF model file")])
def test_a_chat_template_gguf_that_cannot_be_read_is_one_line(tmp_path, name, message):
    from localeval.backends.completions import completion_chat_format

    (tmp_path / "not-a-model.gguf").write_bytes(b"not a gguf")
    with pytest.raises(ConfigError, match=f"chat_template: {message}"):
        completion_chat_format(str(tmp_path / name), None, "llama-cpp-python")
