"""Targets with real models: the default model writing outputs in process, through the Ollama
stand-in and llama-cpp-python's server, and `localeval run` / `generate` in a subprocess."""

from __future__ import annotations

import json
import os

import pytest
from command_line import Project, exit_code_of

from localeval.backends.base import Message, TextRequest
from localeval.backends.catalog import ModelCatalog
from localeval.backends.llamacpp import LlamaCppBackend
from localeval.cli.exits import EXIT_ERRORED
from localeval.paths import Paths

QUESTION = TextRequest(messages=(Message(role="system", content="Answer in one short sentence."),
                                 Message(role="user", content="What is the capital of France?")), max_tokens=24)
GOLDENS = [
    {"name": "france", "input": "What is the capital of France?", "expected_output": "Paris"},
    {"name": "water", "input": "At what temperature does water boil, in Celsius?", "expected_output": "100"},
]
CONFIG = """
[dataset]
path = "goldens.jsonl"

[target]
name = "smollm2"
system = "Answer in one short sentence."
user = "{{ input }}"
max_tokens = 24
stop = ["\\n"]

[target.backend]
n_threads = 1

[backend]
n_threads = 1

[[metrics]]
metric = "geval"
name = "correctness"
evaluation_params = ["input", "actual_output", "expected_output"]
evaluation_steps = ["Check whether the actual output states the expected output."]
"""

@pytest.mark.model
@pytest.mark.server
def test_greedy_text_is_the_same_in_process_through_the_standin_and_the_server(
        llama_backend, ollama_backend, openai_backend):
    local = llama_backend.generate_text(QUESTION)
    assert "Paris" in local.text and local.finish_reason in ("stop", "length")
    assert llama_backend.capabilities.text and ollama_backend.capabilities.text and openai_backend.capabilities.text
    assert ollama_backend.generate_text(QUESTION).text == local.text
    assert openai_backend.generate_text(QUESTION).text == local.text


@pytest.mark.model
def test_stop_strings_end_the_output_in_process(llama_backend):
    whole = llama_backend.generate_text(QUESTION).text
    cut = llama_backend.generate_text(QUESTION.model_copy(update={"stop": ("capital",)}))
    assert cut.text == whole[: whole.index("capital")] and cut.finish_reason == "stop"


@pytest.mark.model
def test_a_base_model_reads_exactly_the_template_it_was_given():
    """Plain format: the answer starts where the user's template ends, as llama.cpp reads that text
    (the format once added a blank line, and Gemma wrote "Answer:" again for every golden)."""
    spec, path = ModelCatalog(Paths.from_environ(os.environ).home).resolve("gemma-3-270m")
    gemma = LlamaCppBackend(path, spec)
    question = Message(role="user", content="Question: What is the capital of Norway?\nAnswer:")
    ours = gemma.generate_text(TextRequest(messages=(question,), max_tokens=6))
    theirs = gemma._llm.create_completion(  # llama.cpp on the exact text, greedy
        prompt=question.content, max_tokens=6, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0)
    gemma.close()
    assert ours.text == theirs["choices"][0]["text"]
    assert ours.text.startswith(" Oslo")


@pytest.fixture
def project(project: Project) -> Project:
    project.write_cases(GOLDENS, "goldens.jsonl")
    project.write("eval.toml", CONFIG)
    return project


@pytest.mark.model
def test_run_generates_then_judges_and_a_second_run_makes_no_model_call(project: Project) -> None:
    first = project.localeval("run", "-c", "eval.toml", "--run-dir", "a")
    assert "Target smollm2: 2 outputs generated, 0 from the journal, 0 failed" in first.stderr, first.stderr
    second = project.localeval("run", "-c", "eval.toml", "--run-dir", "b")
    a, b = (json.loads((project / run / "report.json").read_text()) for run in ("a", "b"))
    assert first.returncode == exit_code_of(a) != EXIT_ERRORED, first.stderr
    assert second.returncode == first.returncode, second.stderr
    assert a["targets"][0]["usage"]["model_calls"] == 2 and a["stats"]["model_calls"] == 4  # score + reason per case
    assert b["targets"][0]["usage"] == {"model_calls": 0, "cache_hits": 2, "prompt_tokens": 0, "completion_tokens": 0}
    assert (b["stats"]["model_calls"], b["stats"]["cache_hits"]) == (0, 4)
    outputs = [c["inputs"]["actual_output"] for c in a["cases"]]
    assert outputs == [c["inputs"]["actual_output"] for c in b["cases"]] and "Paris" in outputs[0]
    assert a["targets"][0]["fingerprint"]["kind"] == "llama.cpp" and a["targets"][0]["fingerprint"]["model_sha256"]
    assert a["targets"][0]["template_sha256"] == b["targets"][0]["template_sha256"]

    written = project.localeval("generate", "goldens.jsonl", "-c", "eval.toml", "--out", "cases.jsonl")
    assert written.returncode == 0, written.stderr
    assert "0 model calls, 2 from cache" in written.stderr
    cases = [json.loads(line) for line in (project / "cases.jsonl").read_text().splitlines()]
    assert [c["actual_output"] for c in cases] == outputs


def test_a_template_field_a_golden_lacks_exits_2_before_any_model_loads(project: Project) -> None:
    project.write("eval.toml", CONFIG.replace('user = "{{ input }}"', 'user = "{{ input }} {{ context[0] }}"'))
    for args in (("run", "-c", "eval.toml"), ("generate", "goldens.jsonl", "-c", "eval.toml", "--out", "x.jsonl")):
        # no model there: a model load would fail otherwise
        result = project.localeval(*args, LOCALEVAL_HOME=str(project / "no-models"))
        assert result.returncode == 2
        assert result.stderr.strip().endswith(
            "goldens.jsonl:1: field 'context': the target's template eval.toml: target.user uses it, "
            "and this golden has none")
        assert not (project / "x.jsonl").exists()
