"""localeval's judge as a deepeval model (localeval/integrations/deepeval.py, deepeval_replies.py).

The first part needs no deepeval: deepeval's calls (a pydantic schema, G-Eval's raw response with
log-probabilities) answered by a scripted judge through ``DeepevalBridge``, which is ``LocalevalModel``
without deepeval's base class. The second part runs deepeval 4's own metrics on ``LocalevalModel``; it is
skipped, with the reason, where deepeval is not installed (the test environment has no deepeval) or where
its telemetry is not turned off. To run it, in an environment with deepeval (docs/deepeval.md)::

    DEEPEVAL_TELEMETRY_OPT_OUT=1 DEEPEVAL_DISABLE_DOTENV=1 benchmarks/.venv-deepeval/bin/python -m pytest \\
        -p no:deepeval tests/test_deepeval_bridge.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import os
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from scripted import FULL_CAPABILITIES, ScriptedBackend

from localeval.backends.base import DistributionRequest, JsonRequest, Message, TextRequest, Usage
from localeval.errors import ConfigError, SchemaViolation
from localeval.integrations.deepeval import DeepevalBridge, no_logprobs_message
from localeval.integrations.deepeval_replies import SCORES, bounded_strings, json_request
from localeval.integrations.promptfoo import close_judges

PROMPT = "Evaluate the answer. Return JSON."
#: The judge's raw log-probabilities at the score: 7 and 8 above deepeval's 1% cut, 3 below it, 2 outside the
#: top-k a server lists (-inf); the rest far in the tail.
LOGPROBS = {**{s: -12.0 for s in SCORES}, "7": math.log(0.6), "8": math.log(0.3), "3": math.log(0.005),
            "2": -math.inf}
#: deepeval's G-Eval weighting of LOGPROBS: the decimal alternatives of at least 1%, renormalized: (7·.6 + 8·.3)/.9.
WEIGHTED = (7 * 0.6 + 8 * 0.3) / 0.9
NO_LOGPROBS = FULL_CAPABILITIES.model_copy(update={"distribution": False,
                                                   "notes": {"distribution": "the server lists none"}})


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str | None = None


class Verdicts(BaseModel):
    verdicts: list[Verdict]
    summary: str


def bridge(judge: ScriptedBackend, **options: Any) -> DeepevalBridge:
    return DeepevalBridge(judge=judge, **options)


# -- deepeval's schema → a constrained request ----------------------------------------------------------


def test_a_pydantic_schema_becomes_its_json_schema_with_every_open_string_bounded() -> None:
    request = json_request(PROMPT, Verdicts, max_tokens=300, max_chars=50)

    assert request.messages == (Message(role="user", content=PROMPT),)
    assert request.max_tokens == 300
    expected = Verdicts.model_json_schema()
    expected["properties"]["summary"]["maxLength"] = 50
    expected["$defs"]["Verdict"]["properties"]["reason"]["anyOf"][0]["maxLength"] = 50
    expected["$defs"]["Verdict"]["properties"]["verdict"]["maxLength"] = 50  # a string enum too: harmless
    assert request.json_schema == expected


def test_bounds_keep_a_given_length_and_leave_data_and_the_original_alone() -> None:
    schema = {"type": "object", "properties": {
        "short": {"type": "string", "maxLength": 5},
        "long": {"type": "string", "minLength": 80},
        "either": {"type": ["string", "null"]},
        "number": {"type": "integer", "default": {"type": "string"}},
        "type": {"const": {"type": "string"}, "enum": [{"type": "string"}]},
    }}
    original = json.loads(json.dumps(schema))

    bounded = bounded_strings(schema, 20)

    assert schema == original
    properties = bounded["properties"]
    assert properties["short"]["maxLength"] == 5
    assert properties["long"]["maxLength"] == 80  # never below its own minimum
    assert properties["either"]["maxLength"] == 20
    assert properties["number"] == original["properties"]["number"]
    assert properties["type"] == original["properties"]["type"]
    assert bounded_strings(schema, None) == original


def test_generate_gives_the_schemas_instance_from_the_judges_validated_json() -> None:
    reply = {"verdicts": [{"verdict": "yes"}, {"verdict": "no", "reason": "not said"}], "summary": "half"}
    judge = ScriptedBackend(json_values=[reply])

    made = bridge(judge, max_tokens=200, max_chars=60).generate(PROMPT, schema=Verdicts)

    assert made == Verdicts.model_validate(reply)
    assert judge.requests == [json_request(PROMPT, Verdicts, max_tokens=200, max_chars=60)]


def test_a_reply_the_schema_refuses_is_localevals_error_and_never_a_type_error() -> None:
    """deepeval takes a TypeError from generate(schema=...) for "no schema here" and asks again without one."""
    judge = ScriptedBackend(json_values=[{"verdicts": "yes", "summary": "x"}])
    with pytest.raises(SchemaViolation, match="verdicts"):
        bridge(judge).generate(PROMPT, schema=Verdicts)
    with pytest.raises(ValueError, match="text prompt, got list"):
        bridge(judge).generate([PROMPT], schema=Verdicts)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pydantic model as schema"):
        bridge(judge).generate(PROMPT, schema=dict)  # type: ignore[arg-type]


def test_generate_without_a_schema_writes_free_text() -> None:
    judge = ScriptedBackend(texts=["a plain answer"])

    assert bridge(judge, max_tokens=90).generate(PROMPT) == "a plain answer"
    assert judge.requests == [TextRequest(messages=(Message(role="user", content=PROMPT),), max_tokens=90)]


def test_a_table_or_its_cache_table_that_is_wrong_is_one_line_before_any_model_loads() -> None:
    with pytest.raises(ConfigError, match=r"^backend: option 'n_thread' .*did you mean 'n_threads'"):
        DeepevalBridge({"model": "smollm2-135m-instruct", "n_thread": 1})
    with pytest.raises(ConfigError, match=r"^cache\.folder: "):
        DeepevalBridge("smollm2-135m-instruct", cache={"folder": "x"})
    with pytest.raises(ValueError, match="not both"):
        DeepevalBridge("smollm2-135m-instruct", judge=ScriptedBackend())


# -- G-Eval's raw response ------------------------------------------------------------------------------


def test_the_raw_response_holds_the_reply_and_the_judges_logprobs_at_the_score() -> None:
    usage = Usage(prompt_tokens=40, completion_tokens=9)
    judge = ScriptedBackend(json_values=[{"reason": "mostly right", "score": 7}], logprobs=[LOGPROBS], usage=usage)

    response, cost = bridge(judge, max_tokens=120, max_chars=30).generate_raw_response(PROMPT, top_logprobs=3)

    text = json.dumps({"reason": "mostly right", "score": 7})
    score_request, read = judge.requests
    assert isinstance(score_request, JsonRequest) and score_request.max_tokens == 120
    assert score_request.json_schema["properties"]["reason"] == {"type": "string", "maxLength": 30}
    assert score_request.json_schema["properties"]["score"] == {"enum": list(range(11))}
    assert read == DistributionRequest(messages=score_request.messages, prefill='{"reason": "mostly right", "score": ',
                                       candidates=SCORES)
    assert cost == 0.0
    choice = response.choices[0]
    assert choice.message.content == text and choice.finish_reason == "stop"
    [position] = choice.logprobs.content
    assert (position.token, position.logprob, position.bytes) == ("7", math.log(0.6), [55])
    assert [(t.token, t.logprob) for t in position.top_logprobs] == [
        ("7", math.log(0.6)), ("8", math.log(0.3)), ("3", math.log(0.005))]
    assert response.usage.model_dump() == {"prompt_tokens": 80, "completion_tokens": 18, "total_tokens": 98}


def test_a_server_that_lists_every_score_gives_all_of_them_but_the_ones_outside_its_top_k() -> None:
    judge = ScriptedBackend(json_values=[{"reason": "r", "score": 8}], logprobs=[LOGPROBS])

    response, _ = bridge(judge).generate_raw_response(PROMPT, top_logprobs=20)

    [position] = response.choices[0].logprobs.content
    assert position.token == "8"
    assert {t.token for t in position.top_logprobs} == set(SCORES) - {"2"}
    assert [t.logprob for t in position.top_logprobs] == sorted((t.logprob for t in position.top_logprobs),
                                                                reverse=True)


def test_a_judge_reading_one_position_offers_0_to_9_and_leaves_a_10_to_deepevals_raw_score() -> None:
    single = FULL_CAPABILITIES.model_copy(update={"multi_token_candidates": False})
    one_digit = {s: LOGPROBS[s] for s in SCORES[:10]}
    judge = ScriptedBackend(json_values=[{"reason": "r", "score": 10}], logprobs=[one_digit], capabilities=single)

    response, _ = bridge(judge).generate_raw_response(PROMPT)

    assert judge.requests[1].candidates == SCORES[:10]  # type: ignore[union-attr]
    assert response.choices[0].logprobs.content == []


def test_without_logprobs_it_raises_what_deepeval_falls_back_on_and_says_so_in_one_line() -> None:
    judge = ScriptedBackend(json_values=[{"reason": "r", "score": 3}], capabilities=NO_LOGPROBS)
    message = ("deepeval's G-Eval: scripted-model (localeval scripted) gives no token log-probabilities "
               "(the server lists none); G-Eval keeps the raw score it wrote")
    assert no_logprobs_message("scripted-model (localeval scripted)", NO_LOGPROBS) == message

    with pytest.warns(RuntimeWarning) as warned, pytest.raises(AttributeError) as raised:
        bridge(judge).generate_raw_response(PROMPT)

    assert [str(w.message) for w in warned] == [message] and str(raised.value) == message
    assert judge.requests == []
    assert bridge(judge).supports_log_probs() is False


def test_the_async_twins_give_what_the_calls_give() -> None:
    replies = [{"reason": "r", "score": 7}] * 2
    sync_judge = ScriptedBackend(json_values=replies[:1], logprobs=[LOGPROBS], texts=["t"])
    async_judge = ScriptedBackend(json_values=replies[1:], logprobs=[LOGPROBS], texts=["t"])

    async def both() -> tuple[Any, Any]:
        model = bridge(async_judge)
        return await model.a_generate_raw_response(PROMPT, 5), await model.a_generate(PROMPT)

    model = bridge(sync_judge)
    assert asyncio.run(both()) == (model.generate_raw_response(PROMPT, 5), model.generate(PROMPT))
    assert async_judge.requests == sync_judge.requests


@pytest.mark.skipif(importlib.util.find_spec("deepeval") is not None, reason="deepeval is installed here")
def test_without_deepeval_the_model_class_says_how_to_install_it() -> None:
    with pytest.raises(ImportError, match=r"pip install 'localeval\[deepeval\]'"):
        from localeval.integrations.deepeval import LocalevalModel  # noqa: F401


# -- deepeval 4's own metrics on LocalevalModel -------------------------------------------------------

HAS_DEEPEVAL = importlib.util.find_spec("deepeval") is not None
TELEMETRY_OFF = os.environ.get("DEEPEVAL_TELEMETRY_OPT_OUT", "").lower() in ("1", "true", "yes")
needs_deepeval = pytest.mark.skipif(
    not (HAS_DEEPEVAL and TELEMETRY_OFF),
    reason="deepeval is not installed here (pip install 'localeval[deepeval]')" if not HAS_DEEPEVAL else
    "DEEPEVAL_TELEMETRY_OPT_OUT=1 is not set: deepeval would send telemetry",
)


def geval(model: Any) -> Any:
    from deepeval.metrics import GEval  # type: ignore[import-not-found]
    from deepeval.test_case import SingleTurnParams  # type: ignore[import-not-found]

    return GEval(name="correctness", evaluation_steps=["Check that the answer states the capital correctly."],
                 evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT], model=model)


def case(**fields: Any) -> Any:
    from deepeval.test_case import LLMTestCase

    return LLMTestCase(input="What is the capital of France?", actual_output="Paris is the capital of France.",
                       **fields)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """deepeval's files (./.deepeval, its home) go to a folder of the test's own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEPEVAL_HOME", str(tmp_path / "deepeval-home"))
    return tmp_path


@needs_deepeval
def test_deepevals_geval_weighs_the_scores_by_the_judges_logprobs(scratch: Path) -> None:
    from deepeval.models import DeepEvalBaseLLM  # type: ignore[import-not-found]

    from localeval.integrations.deepeval import LocalevalModel

    judge = ScriptedBackend(json_values=[{"reason": "right", "score": 7}], logprobs=[LOGPROBS])
    model = LocalevalModel(judge=judge)
    metric = geval(model)

    metric.measure(case())  # deepeval's default: async_mode, so a_generate_raw_response

    assert isinstance(model, DeepEvalBaseLLM) and model.get_model_name() == "scripted-model (localeval scripted)"
    assert metric.score == pytest.approx(WEIGHTED / 10) and metric.reason == "right"
    assert len(judge.requests) == 2


@needs_deepeval
def test_deepevals_geval_keeps_the_raw_score_from_a_judge_without_logprobs(scratch: Path) -> None:
    from localeval.integrations.deepeval import LocalevalModel

    judge = ScriptedBackend(json_values=[{"reason": "close", "score": 6}], capabilities=NO_LOGPROBS)
    metric = geval(LocalevalModel(judge=judge))

    with pytest.warns(RuntimeWarning, match="gives no token log-probabilities"):
        metric.measure(case())

    assert metric.score == pytest.approx(0.6) and metric.reason == "close"
    [request] = judge.requests  # deepeval's fallback: its ReasonScore schema, constrained
    assert isinstance(request, JsonRequest) and set(request.json_schema["properties"]) == {"reason", "score"}


@needs_deepeval
def test_deepevals_faithfulness_reads_the_judges_validated_replies(scratch: Path) -> None:
    from deepeval.metrics import FaithfulnessMetric

    from localeval.integrations.deepeval import LocalevalModel

    judge = ScriptedBackend(json_values=[
        {"truths": ["Paris is the capital of France."]},
        {"claims": ["Paris is the capital of France.", "Paris has 90 million people."]},
        {"verdicts": [{"verdict": "yes"}, {"verdict": "no", "reason": "not in the context"}]},
        {"reason": "one claim is unsupported"},
    ])
    metric = FaithfulnessMetric(model=LocalevalModel(judge=judge), async_mode=False)  # replies in a fixed order

    metric.measure(case(retrieval_context=["Paris is the capital of France."]))

    assert metric.score == 0.5 and metric.reason == "one claim is unsupported"
    assert all(isinstance(r, JsonRequest) for r in judge.requests) and len(judge.requests) == 4


@needs_deepeval
@pytest.mark.model
def test_deepevals_metrics_score_on_the_real_default_model_and_a_rerun_is_cached(scratch: Path) -> None:
    from deepeval.metrics import AnswerRelevancyMetric

    from localeval.integrations.deepeval import LocalevalModel

    table, cache = {"model": "smollm2-135m-instruct", "n_threads": 1}, {"dir": str(scratch / "cache")}
    responses: list[Any] = []

    def scored(model: Any) -> list[Any]:
        metrics = [geval(model), AnswerRelevancyMetric(model=model)]
        for metric in metrics:
            metric.measure(case())
        return metrics

    try:
        model = LocalevalModel(table, cache=cache)
        inner = model.generate_raw_response

        def recorded(*args: Any, **kwargs: Any) -> Any:
            responses.append(inner(*args, **kwargs))
            return responses[-1]

        model.generate_raw_response = recorded  # type: ignore[method-assign]
        first = scored(model)
        calls = model.judge.stats.usage()  # type: ignore[attr-defined]
        close_judges()  # as a new process: the judge loaded again, its replies read from the cache
        model = LocalevalModel(table, cache=cache)
        again = scored(model)
        rerun = model.judge.stats.usage()  # type: ignore[attr-defined]
    finally:
        close_judges()

    assert all(m.error is None and 0.0 <= m.score <= 1.0 for m in first)
    [(response, _)] = responses
    [position] = response.choices[0].logprobs.content  # G-Eval got the judge's log-probabilities
    assert json.loads(response.choices[0].message.content)["score"] == int(position.token)
    assert position.top_logprobs and all(t.token in SCORES and t.logprob <= 0 for t in position.top_logprobs)
    assert calls.model_calls >= 3 and calls.cache_hits == 0
    assert (rerun.model_calls, rerun.cache_hits) == (0, calls.model_calls)
    assert [m.score for m in again] == [m.score for m in first]
