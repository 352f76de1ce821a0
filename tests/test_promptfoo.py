"""The promptfoo assertion (localeval/integrations/promptfoo.py): promptfoo's inputs → a GradingResult.

promptfoo calls ``get_assert(output, context)`` with ``context`` = {prompt, vars, test, config, provider,
providerResponse, ...} (https://www.promptfoo.dev/docs/configuration/expected-outputs/python/); the
contexts here are built that way. The arithmetic and the shape run on a scripted judge through ``grade``;
one test loads the real default model through ``get_assert``'s own loading path and its cache.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from scripted import ScriptedBackend

from localeval.backends.base import Backend, DistributionRequest
from localeval.backends.options import BackendOptions
from localeval.config import CacheConfig
from localeval.data.case import TestCase
from localeval.integrations import promptfoo
from localeval.integrations.promptfoo import LOWER_IS_BETTER, close_judges, get_assert, grade
from localeval.integrations.promptfoo_inputs import case_of, read_assertion

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "promptfoo"
#: p = .1 .2 .3 .2 .2 on 1..5: G-Eval's expected score 3.2, 0.55 on [0, 1].
LOGPROBS = {str(s): math.log(p) for s, p in zip(range(1, 6), (0.1, 0.2, 0.3, 0.2, 0.2))}
STEPS = ["Check that the answer is correct."]
VARS = {"question": "What is 2+2?", "expected_output": 4}


def context(config: Any, variables: dict[str, Any] | None = None, prompt: str = "Answer: What is 2+2?") -> dict[str, Any]:
    """What promptfoo passes a Python assertion as ``context`` (the keys its docs list)."""
    test_vars = VARS if variables is None else variables
    return {"prompt": prompt, "vars": test_vars, "test": {"vars": test_vars, "assert": [{"type": "python"}]},
            "config": config, "logProbs": None, "provider": {"id": "echo"}, "providerResponse": {"output": "4"}}


#: A G-Eval that asks the judge once: its steps given, no reason.
GEVAL = {"metric": "geval", "name": "correctness", "evaluation_steps": STEPS, "include_reason": False}


def geval(**options: Any) -> dict[str, Any]:
    """An assertion's config: :data:`GEVAL`, its input from the var ``question``."""
    return {**GEVAL, "fields": {"question": "input"}, **options}


class Loader:
    """A judge loader for ``grade``: gives ``judge`` and records what it was asked to load."""

    def __init__(self, judge: Backend | None = None) -> None:
        self.judge = judge
        self.asked: list[tuple[BackendOptions, CacheConfig, str]] = []

    def __call__(self, options: BackendOptions, cache: CacheConfig, where: str) -> Backend:
        if self.judge is None:
            raise AssertionError("no judge should be loaded here")
        self.asked.append((options, cache, where))
        return self.judge


# -- one metric ----------------------------------------------------------------------------


def test_a_metric_gives_its_score_its_verdict_and_its_line() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    result = grade("4", context(geval(threshold=0.5)), Loader(judge))
    assert {k: result[k] for k in ("pass", "score", "reason", "namedScores", "tokensUsed")} == {
        "pass": True,
        "score": 0.55,
        "reason": "correctness: score 0.55 > threshold 0.50 (passed; passes when score >= threshold) — reason: "
                  "Expected score 3.20 on 1-5 (the valid scores covered 100% of the judge's probability).",
        "namedScores": {"correctness": 0.55},
        "tokensUsed": {"total": 0, "prompt": 0, "completion": 0},
    }
    assert "componentResults" not in result
    [recorded] = result["metadata"]["localeval"]["results"]
    assert (recorded["metric"], recorded["raw_score"], recorded["usage"]["model_calls"]) == ("correctness", 3.2, 1)
    # the input is the var config.fields maps to it, not the prompt promptfoo sent
    [request] = judge.requests
    assert isinstance(request, DistributionRequest)
    prompt = "\n".join(m.content for m in request.messages)
    assert "What is 2+2?" in prompt and "Answer: What is" not in prompt


def test_a_score_under_the_threshold_fails() -> None:
    result = grade("4", context(geval(threshold=0.7)), Loader(ScriptedBackend(logprobs=[LOGPROBS])))
    assert (result["pass"], result["score"]) == (False, 0.55)
    assert result["reason"].startswith("correctness: score 0.55 < threshold 0.70 (failed; passes when score >= threshold)")


def test_a_lower_is_better_metric_says_how_to_read_its_score() -> None:
    judge = ScriptedBackend(json_values=[{"verdicts": ["agrees", "contradicts"]}])
    config = {"metric": "hallucination", "threshold": 0.3, "include_reason": False}
    variables = {"input": "Capital of France?", "context": "Paris is the capital. | It is in France."}
    result = grade("Lyon.", context({**config, "list_delimiter": "|"}, variables), Loader(judge))
    assert (result["pass"], result["score"], result["namedScores"]) == (False, 0.5, {"hallucination": 0.5})
    assert result["reason"] == (
        "hallucination: score 0.50 > threshold 0.30 (failed; passes when score <= threshold) — reason: "
        f"The output contradicts 1 of 2 context items. ({LOWER_IS_BETTER})"
    )


def test_a_metric_that_cannot_score_fails_with_its_error_and_no_named_score() -> None:
    judge = ScriptedBackend(logprobs=[RuntimeError("the judge fell over")])  # not a BackendError: a bug
    result = grade("4", context(geval()), Loader(judge))
    assert (result["pass"], result["score"], result["namedScores"]) == (False, 0.0, {})
    assert result["reason"] == ("correctness: error, no score (threshold 0.50; passes when score >= threshold) — "
                                "error: unexpected RuntimeError: the judge fell over")


def test_a_metric_without_a_judge_asks_for_none() -> None:
    result = grade("4", context({"metric": "exact_match"}, {"input": "2+2?", "expected_output": "4"}), Loader())
    assert (result["pass"], result["score"]) == (True, 1.0)


# -- several metrics -----------------------------------------------------------------------


def test_several_metrics_are_component_results_and_named_scores() -> None:
    config = {"metrics": [{"metric": "exact_match"}, {**GEVAL, "threshold": 0.7}], "fields": {"question": "input"}}
    result = grade("4", context(config), Loader(ScriptedBackend(logprobs=[LOGPROBS])))
    assert (result["pass"], result["score"]) == (False, 0.5)
    assert result["namedScores"] == {"exact_match": 1.0, "correctness": 0.55}
    assert [(c["pass"], c["score"]) for c in result["componentResults"]] == [(True, 1.0), (False, 0.55)]
    assert result["reason"].splitlines() == [
        "1 of 2 localeval metrics passed (score: the share that passed)",
        *(c["reason"] for c in result["componentResults"]),
    ]


def test_the_result_is_json_that_javascript_reads() -> None:
    """promptfoo reads the result with JSON.parse: no NaN or Infinity anywhere (a log-probability of 0)."""
    judge = ScriptedBackend(logprobs=[{**LOGPROBS, "5": -math.inf}])
    result = grade("4", context(geval()), Loader(judge))
    json.dumps(result, allow_nan=False)


# -- promptfoo's vars → a test case ------------------------------------------------------------


def test_vars_fill_the_fields_of_their_name_or_the_ones_fields_maps_them_to() -> None:
    assertion = read_assertion({"metric": "exact_match", "fields": {"question": "input", "docs": "retrieval_context"},
                                "list_delimiter": ";"})
    variables = {"question": "Capital?", "docs": "Paris is the capital. ; It is big. ;", "context": "Paris.",
                 "expected_output": 4.5, "name": "not a case name", "topic": "geography"}
    assert case_of({"answer": "Paris"}, context(None, variables), assertion) == TestCase(
        input="Capital?", actual_output='{"answer": "Paris"}', expected_output="4.5", context=["Paris."],
        retrieval_context=["Paris is the capital.", "It is big."],
    )


def test_without_an_input_var_the_input_is_the_prompt_promptfoo_sent() -> None:
    assertion = read_assertion({"metric": "exact_match"})
    case = case_of("4", context(None, {"topic": "sums"}, prompt="What is 2+2?"), assertion)
    assert (case.input, case.actual_output) == ("What is 2+2?", "4")


def test_a_list_var_of_objects_stays_a_list() -> None:
    assertion = read_assertion({"metric": "tool_correctness"})
    variables = {"input": "Weather?", "tools_called": [{"name": "weather"}], "expected_tools": "weather"}
    case = case_of("Sunny.", context(None, variables), assertion)
    assert [t.name for t in case.tools_called or ()] == ["weather"]
    assert [t.name for t in case.expected_tools or ()] == ["weather"]


# -- bad input: a failing result with one line, and no judge loaded ------------------------------


@pytest.mark.parametrize(("config", "variables", "reason"), [
    (None, VARS, "config: none given; name a localeval metric in the assertion's config (metric: geval)"),
    ("geval", VARS, "config: expected a mapping of options, got str"),
    ({"criteria": "Correct."}, VARS, "config.metric: required; name a localeval metric (geval, faithfulness, ...) "
                                     "or several as config.metrics"),
    ({"metric": "geval", "metrics": []}, VARS, "config: give metric or metrics, not both"),
    ({"metrics": [{"metric": "exact_match"}], "threshold": 1}, VARS,
     "config.threshold: with metrics, each metric's options go in its entry"),
    ({"metrics": [{"threshold": 1}]}, VARS,
     "config.metrics[1].metric: required: the metric's kind or preset (geval, faithfulness, ...)"),
    ({"metrics": [{"metric": "exact_match"}, {"metric": "exact_match"}]}, VARS,
     "config.metrics: two metrics are named 'exact_match'; give each its own name"),
    ({"metric": "geval", "criteria": "Correct.", "threshold": 2}, VARS,
     "config: geval.threshold: Input should be less than or equal to 1"),
    ({"metric": "geval", "criterion": "Correct."}, VARS, "config: geval: unknown option 'criterion'"),
    ({"metric": "exact_match", "fields": {"question": "answer"}}, VARS,
     "config.fields.question: 'answer' is not a test case field"),
    ({"metric": "exact_match", "fields": {"answer": "actual_output"}}, VARS,
     "config.fields.answer: actual_output is promptfoo's output, not a var"),
    ({"metric": "exact_match", "fields": {"query": "input"}}, VARS,
     "vars.query: not given, and config.fields maps it to input"),
    ({"metric": "exact_match", "list_delimiter": ""}, VARS,
     "config.list_delimiter: String should have at least 1 character"),
    ({"metric": "exact_match"}, {"input": ["a", {"b": 1}]}, "vars.input (input): Input should be a valid string"),
    ({"metric": "geval", "criteria": "Correct.", "judge": {"kind": "llama.cp"}}, VARS, "config.judge.kind: "),
    ({"metric": "geval", "criteria": "Correct.", "judge": {"model": "x", "n_thread": 2}}, VARS,
     "config.judge: option 'n_thread' does not apply to the llama.cpp backend"),
    ({"metric": "geval", "criteria": "Correct.", "judge": "strict"}, VARS,
     "judge 'strict' of metric 'geval': no [judges.strict] table in config_file (judges: none)"),
])
def test_bad_input_is_a_failing_result_naming_it_in_one_line(config: Any, variables: dict[str, Any],
                                                              reason: str) -> None:
    result = grade("4", context(config, variables), Loader())
    assert set(result) == {"pass", "score", "reason"}
    assert (result["pass"], result["score"]) == (False, 0.0)
    assert result["reason"].startswith("localeval: " + reason)
    assert "\n" not in result["reason"]


def test_an_unknown_metric_is_named_with_the_known_ones() -> None:
    result = get_assert("4", context({"metric": "gevl"}))
    assert result["reason"].startswith("localeval: config: unknown metric 'gevl' (")
    assert "geval:coherence" in result["reason"] and "\n" not in result["reason"]


def test_a_context_that_is_not_a_mapping_is_a_failing_result() -> None:
    assert get_assert("4", None) == {  # type: ignore[arg-type]
        "pass": False, "score": 0.0, "reason": "localeval: context: expected promptfoo's mapping, got NoneType"}


def test_a_judge_model_not_pulled_says_how_to_pull_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALEVAL_HOME", str(tmp_path / "home"))  # no model there
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    judge = {"model": "smollm2-135m-instruct", "n_threads": 1}
    result = get_assert("4", context(geval(judge=judge)))
    assert (result["pass"], result["score"]) == (False, 0.0)
    assert "run `localeval models pull smollm2-135m-instruct`" in result["reason"]
    assert "\n" not in result["reason"]
    assert promptfoo._JUDGES == {}  # not kept: the next call tries again


# -- a localeval config file -----------------------------------------------------------------


def test_a_config_file_gives_its_judges_cache_and_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "eval.toml").write_text(
        '[backend]\nmodel = "smollm2-135m-instruct"\nn_threads = 1\n\n'
        '[judges.strict]\nkind = "ollama"\nmodel = "qwen2.5:1.5b"\n\n'
        '[cache]\ndir = "judge-cache"\n\n'
        f'[[metrics]]\nmetric = "geval"\nname = "correctness"\nevaluation_steps = {json.dumps(STEPS)}\n'
        'include_reason = false\n'
    )
    monkeypatch.chdir(tmp_path)  # config_file is relative to the working directory, as promptfoo runs
    loader = Loader(ScriptedBackend(logprobs=[LOGPROBS, LOGPROBS]))
    by_file = grade("4", context({"config_file": "eval.toml", "fields": {"question": "input"}}), loader)
    named = grade("4", context({**geval(), "config_file": "eval.toml", "judge": "strict"}), loader)
    assert (by_file["score"], named["score"]) == (0.55, 0.55)
    [(default, cache, where), (strict, _, where_strict)] = loader.asked
    assert (default.kind, default.model, where) == ("llama.cpp", "smollm2-135m-instruct", "backend")
    assert (strict.kind, where_strict) == ("ollama", "judges.strict")
    assert cache == CacheConfig(enabled=True, dir=tmp_path / "judge-cache")


# -- the documented example ------------------------------------------------------------------


def python_assertions(config: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (test's vars, python assertion) of a promptfoo config, defaultTest's included."""
    default = config.get("defaultTest", {}).get("assert", [])
    return [(test["vars"], assertion) for test in config["tests"]
            for assertion in [*default, *test.get("assert", [])] if assertion["type"] == "python"]


def test_the_example_config_reads_and_each_test_makes_a_case() -> None:
    config = yaml.safe_load((EXAMPLE / "promptfooconfig.yaml").read_text())
    checked = python_assertions(config)
    assert len(checked) == 5
    for variables, assertion in checked:
        assert assertion["value"] == "file://localeval_assert.py"
        prompt = config["prompts"][0].replace("{{question}}", variables["question"])
        read = read_assertion(assertion["config"])
        case = case_of("An answer.", context(None, variables, prompt), read)
        assert case.input == variables["question"]
        assert all(options.model == "qwen2.5-coder-1.5b-instruct" for options in read.judges.values())


def test_the_docs_show_the_example_files_as_they_are() -> None:
    page = (ROOT / "docs" / "promptfoo.md").read_text()
    blocks = re.findall(r"```(?:yaml|python)\n(.*?)```", page, flags=re.S)
    assert (EXAMPLE / "promptfooconfig.yaml").read_text() in blocks
    assert (EXAMPLE / "localeval_assert.py").read_text() in blocks


def test_the_example_assertion_file_is_the_entry_point() -> None:
    namespace: dict[str, Any] = {}
    exec((EXAMPLE / "localeval_assert.py").read_text(), namespace)  # as promptfoo's wrapper loads it
    assert namespace["get_assert"] is get_assert


# -- the real judge, loaded once per process, behind the cache -----------------------------------


@pytest.mark.model
def test_the_judge_loads_once_and_a_rerun_makes_no_model_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    loads: list[str] = []
    real_load = promptfoo.load_judge

    def counted(*args: Any, **kwargs: Any) -> Backend:
        loads.append(kwargs["where"])
        return real_load(*args, **kwargs)

    monkeypatch.setattr(promptfoo, "load_judge", counted)
    config = geval(judge={"model": "smollm2-135m-instruct", "n_threads": 1})
    try:
        first = get_assert("4", context(config))
        again = get_assert("4", context(config))  # the same process: the same judge
        close_judges()
        rerun = get_assert("4", context(config))  # as a new promptfoo process: loaded again, answered from disk
    finally:
        close_judges()
    usage = [r["metadata"]["localeval"]["judge_usage"] for r in (first, again, rerun)]
    assert loads == ["config.judge", "config.judge"]
    assert usage[0]["model_calls"] == 1 and usage[0]["prompt_tokens"] > 0
    assert [(u["model_calls"], u["cache_hits"]) for u in usage[1:]] == [(0, 1), (0, 1)]
    assert first["score"] == again["score"] == rerun["score"]
    assert 0.0 <= first["score"] <= 1.0 and first["namedScores"] == {"correctness": first["score"]}
