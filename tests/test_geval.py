"""G-Eval's scoring methods, reason, rubric, labels, presets and prepare(), against a scripted judge.

The basics (the distribution request, prompts with labels, generating steps, validation)
are in test_metrics.py; this file pins the features of the rewrite with exact numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from scripted import ScriptedBackend

from localeval.backends.base import Capabilities, DistributionRequest, JsonRequest, Message
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import BackendError, ConfigError, SchemaViolation, TruncatedOutput, UnknownMetric, unknown_name
from localeval.metrics import GEval, build_metric, metric_names
from localeval.metrics.geval import STEPS_SCHEMA, RubricItem, sampled_mean
from localeval.metrics.judged import REASON_SCHEMA
from localeval.metrics.presets import PRESETS
from localeval.run.runner import evaluate

CASE = TestCase(input="What is 2+2?", actual_output="4", expected_output="4")
STEPS = ("Check the arithmetic.", "Penalize extra text.")
TOPICAL_CHAT = Path(__file__).parent / "data" / "alignment" / "topical_chat.json"


def logprobs(*probabilities: float, low: int = 1) -> dict[str, float]:
    """Raw log-probabilities of the scores low, low + 1, ...; 0 becomes -inf."""
    return {str(low + i): math.log(p) if p else -math.inf for i, p in enumerate(probabilities)}


#: p = .1 .2 .3 .2 .2 on 1..5: expected 3.2 (on [0, 1]: 0.55), most likely 3.
LOGPROBS = logprobs(0.1, 0.2, 0.3, 0.2, 0.2)
#: p = .1 .2 .3 .25 .15 on 1..5: expected 3.15, most likely 3 (on [0, 1]: 0.5).
TOP_LOGPROBS = logprobs(0.1, 0.2, 0.3, 0.25, 0.15)
NO_LOGPROBS = Capabilities(json_schema=True, distribution=False, multi_token_candidates=False)


def geval(**options: Any) -> GEval:
    return GEval(**{"evaluation_steps": STEPS, **options})


def json_requests(judge: ScriptedBackend, schema: dict[str, Any] | None = None) -> list[JsonRequest]:
    return [
        r for r in judge.requests
        if isinstance(r, JsonRequest) and (schema is None or r.json_schema == schema)
    ]


# --- scoring = "logprobs" -------------------------------------------------------------


def test_logprobs_records_the_whole_distribution_in_details() -> None:
    result = geval(include_reason=False).measure(CASE, ScriptedBackend(logprobs=[LOGPROBS]))
    assert result.error is None
    assert result.score == pytest.approx(0.55, rel=1e-12)
    assert result.raw_score == pytest.approx(3.2, rel=1e-12)
    assert result.details == {
        "method": "logprobs",
        "score_range": [1, 5],
        "expected_score": pytest.approx(3.2, rel=1e-12),
        "most_likely_score": 3.0,
        "distribution": {s: pytest.approx(p, rel=1e-12) for s, p in zip("12345", (0.1, 0.2, 0.3, 0.2, 0.2))},
        "covered_mass": pytest.approx(1.0, rel=1e-12),
        "unread_mass": 0.0,
        "evaluation_steps": list(STEPS),
        "steps_source": "given",
    }


# --- scoring = "top" -------------------------------------------------------------------


def test_top_scores_the_most_likely_score_and_still_reports_the_expected_one() -> None:
    judge = ScriptedBackend(logprobs=[TOP_LOGPROBS])
    result = geval(scoring="top", include_reason=False).measure(CASE, judge)
    assert result.score == 0.5  # (3 - 1) / 4
    assert result.passed is True
    assert result.details["method"] == "top"
    assert result.raw_score == 3.0
    assert result.details["most_likely_score"] == 3.0
    assert result.details["expected_score"] == pytest.approx(3.15, rel=1e-12)  # .1 + .4 + .9 + 1 + .75
    assert result.reason == "Most likely score 3.00 on 1-5 (the valid scores covered 100% of the judge's probability)."
    [request] = judge.requests
    assert isinstance(request, DistributionRequest)
    assert request.candidates == ("1", "2", "3", "4", "5")


def test_logprobs_of_the_same_distribution_is_its_expected_value() -> None:
    result = geval(include_reason=False).measure(CASE, ScriptedBackend(logprobs=[TOP_LOGPROBS]))
    assert result.raw_score == pytest.approx(3.15, rel=1e-12)
    assert result.score == pytest.approx(0.5375, rel=1e-12)


# --- min_covered_mass --------------------------------------------------------------------


def test_a_covered_mass_below_the_floor_is_an_error_result() -> None:
    judge = ScriptedBackend(logprobs=[{s: lp + math.log(0.05) for s, lp in LOGPROBS.items()}])
    result = geval().measure(CASE, judge)
    assert (result.score, result.passed, result.details) == (None, None, {})
    assert result.error == (
        "BackendError: the valid scores covered 5.0% of the judge's probability at the score position "
        "(min_covered_mass 10%): the judge was not writing a score there; check the prompt and the "
        "model's chat format"
    )
    assert len(judge.requests) == 1  # no reason asked for a score that does not exist


def test_min_covered_mass_zero_accepts_any_covered_mass() -> None:
    judge = ScriptedBackend(logprobs=[{s: lp + math.log(0.05) for s, lp in LOGPROBS.items()}])
    result = geval(min_covered_mass=0.0, include_reason=False).measure(CASE, judge)
    assert result.error is None
    assert result.score == pytest.approx(0.55, rel=1e-12)  # renormalized over the valid scores
    assert result.details["covered_mass"] == pytest.approx(0.05, rel=1e-12)


def test_the_covered_mass_floor_applies_to_top_as_well() -> None:
    judge = ScriptedBackend(logprobs=[{s: lp + math.log(0.05) for s, lp in TOP_LOGPROBS.items()}])
    result = geval(scoring="top", min_covered_mass=0.06).measure(CASE, judge)
    assert result.error is not None
    assert "covered 5.0% of the judge's probability" in result.error
    assert "(min_covered_mass 6%)" in result.error


@pytest.mark.parametrize("bad", [-0.1, 1.1])
def test_min_covered_mass_is_a_fraction(bad: float) -> None:
    with pytest.raises(ValidationError, match="min_covered_mass"):
        geval(min_covered_mass=bad)


# --- strict_mode -------------------------------------------------------------------------


def test_strict_mode_forces_a_binary_range_and_threshold_one() -> None:
    metric = geval(strict_mode=True, score_range=(1, 5), threshold=0.5)
    assert (metric.score_range, metric.threshold) == ((0, 1), 1.0)
    built = build_metric("geval", {"criteria": "c", "strict_mode": True, "threshold": 0.2, "score_range": [1, 9]})
    assert (built.score_range, built.threshold) == ((0, 1), 1.0)  # type: ignore[attr-defined]


# A strict_mode that pydantic reads as False ("false", "no", "0": e.g. `--metric-option
# strict_mode=False`, which is not JSON and arrives as text) must not force strict settings.
@pytest.mark.parametrize("off", ["false", "False", "no", "0"])
def test_a_strict_mode_that_validates_to_false_changes_nothing(off: str) -> None:
    metric = geval(strict_mode=off, score_range=(1, 5), threshold=0.5)
    assert metric.strict_mode is False
    assert (metric.score_range, metric.threshold) == ((1, 5), 0.5)


def test_strict_mode_passes_when_one_is_the_verdict() -> None:
    judge = ScriptedBackend(logprobs=[logprobs(0.3, 0.7, low=0)])
    result = geval(strict_mode=True, include_reason=False).measure(CASE, judge)
    [request] = judge.requests
    assert isinstance(request, DistributionRequest)
    assert request.candidates == ("0", "1")
    assert "on a scale from 0 (worst) to 1 (best)" in request.messages[-1].content
    assert (result.score, result.passed, result.threshold) == (1.0, True, 1.0)
    assert result.raw_score == pytest.approx(0.7, rel=1e-12)
    assert result.details["expected_score"] == pytest.approx(0.7, rel=1e-12)
    assert result.details["score_range"] == [0, 1]


def test_strict_mode_fails_when_zero_is_the_verdict() -> None:
    result = geval(strict_mode=True, include_reason=False).measure(
        CASE, ScriptedBackend(logprobs=[logprobs(0.7, 0.3, low=0)])
    )
    assert (result.score, result.passed) == (0.0, False)
    assert result.raw_score == pytest.approx(0.3, rel=1e-12)


@pytest.mark.parametrize("scoring", ["logprobs", "top"])
def test_strict_mode_scores_an_exact_tie_0_with_every_method(scoring: str) -> None:
    judge = ScriptedBackend(logprobs=[logprobs(0.5, 0.5, low=0)])  # p(1) = 0.5 exactly
    result = geval(strict_mode=True, scoring=scoring, include_reason=False).measure(CASE, judge)
    assert (result.score, result.passed) == (0.0, False)
    assert result.details["expected_score"] == 0.5
    assert result.details["most_likely_score"] == 0.0


def test_strict_sampling_scores_a_mean_of_exactly_half_0() -> None:
    judge = ScriptedBackend(json_values=[{"score": s} for s in [0, 1] * 10])
    result = geval(strict_mode=True, scoring="sampling", include_reason=False).measure(CASE, judge)
    assert (result.raw_score, result.score, result.passed) == (0.5, 0.0, False)


def test_top_breaks_a_tie_toward_the_lower_score() -> None:
    judge = ScriptedBackend(logprobs=[logprobs(0.1, 0.4, 0.1, 0.4, 0.0)])
    result = geval(scoring="top", include_reason=False).measure(CASE, judge)
    assert result.raw_score == 2.0


# --- scoring = "sampling" ----------------------------------------------------------------

SAMPLE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["score"],
    "additionalProperties": False,
}


def test_sampling_asks_for_twenty_seeded_samples_of_the_score_prompt() -> None:
    scores = [3] * 10 + [4] * 5 + [5] * 5
    judge = ScriptedBackend(json_values=[{"score": s} for s in scores])
    result = geval(scoring="sampling", include_reason=False).measure(CASE, judge)
    requests = json_requests(judge)
    assert len(requests) == len(judge.requests) == 20
    assert [r.seed for r in requests] == list(range(20))
    assert {r.temperature for r in requests} == {1.0}
    assert all(r.json_schema == SAMPLE_SCHEMA and r.max_tokens == 32 for r in requests)
    # The same prompt a logprobs run scores (without the "Score: " prefill).
    scored = ScriptedBackend(logprobs=[LOGPROBS])
    geval(include_reason=False).measure(CASE, scored)
    assert {r.messages for r in requests} == {scored.requests[0].messages}
    assert result.score == 0.6875  # mean 3.75 = (30 + 20 + 25) / 20; (3.75 - 1) / 4
    assert result.raw_score == 3.75
    assert result.details == {
        "method": "sampling",
        "score_range": [1, 5],
        "samples": scores,
        "temperature": 1.0,
        "evaluation_steps": list(STEPS),
        "steps_source": "given",
    }
    assert result.reason == "Mean of 20 valid sampled scores: 3.75 on 1-5."


def test_sampling_options_set_the_count_temperature_and_first_seed() -> None:
    judge = ScriptedBackend(json_values=[{"score": 2}, {"score": 4}, {"score": 5}])
    result = geval(scoring="sampling", samples=3, temperature=0.5, seed=7, include_reason=False).measure(CASE, judge)
    assert [(r.seed, r.temperature) for r in json_requests(judge)] == [(7, 0.5), (8, 0.5), (9, 0.5)]
    assert result.raw_score == pytest.approx(11 / 3, rel=1e-12)
    assert result.score == pytest.approx(2 / 3, rel=1e-12)


def test_sampling_schema_enumerates_the_score_range() -> None:
    judge = ScriptedBackend(json_values=[{"score": 0}, {"score": 10}])
    result = geval(scoring="sampling", samples=2, score_range=(0, 10), include_reason=False).measure(CASE, judge)
    assert json_requests(judge)[0].json_schema["properties"]["score"]["enum"] == list(range(11))
    assert result.score == 0.5


def test_sampling_with_half_the_samples_invalid_is_the_mean_of_the_valid_ones() -> None:
    valid = [5, 4] * 5
    replies: list[object] = []
    for score in valid:
        replies += [SchemaViolation("reply is not JSON"), {"score": score}]
    judge = ScriptedBackend(json_values=replies)
    result = geval(scoring="sampling", include_reason=False).measure(CASE, judge)
    assert result.error is None
    assert len(judge.requests) == 20
    assert result.details["samples"] == [None, 5, None, 4] * 5
    assert result.raw_score == 4.5
    assert result.score == 0.875
    assert result.reason == "Mean of 10 valid sampled scores: 4.50 on 1-5."


def test_sampling_with_more_than_half_invalid_is_an_error_result() -> None:
    replies: list[object] = [SchemaViolation("reply is not JSON")] * 11 + [{"score": 5}] * 9
    judge = ScriptedBackend(json_values=replies)
    result = geval(scoring="sampling").measure(CASE, judge)
    assert (result.score, result.passed) == (None, None)
    assert result.error == "BackendError: only 9 of 20 sampled scores were valid"
    assert len(judge.requests) == 20  # every sample tried, and no reason asked for


def test_sampling_counts_off_schema_and_truncated_replies_as_invalid() -> None:
    # {"score": 7} is outside the enum: the (scripted, like a real) backend rejects it.
    replies = [{"score": 7}, TruncatedOutput("max_tokens"), {"score": 2}, {"score": 3}]
    result = geval(scoring="sampling", samples=4, include_reason=False).measure(
        CASE, ScriptedBackend(json_values=replies)
    )
    assert result.details["samples"] == [None, None, 2, 3]
    assert result.raw_score == 2.5


def test_sampling_does_not_hide_other_backend_errors() -> None:
    judge = ScriptedBackend(json_values=[{"score": 3}, BackendError("the server went away")])
    result = geval(scoring="sampling", samples=4).measure(CASE, judge)
    assert result.error == "BackendError: the server went away"
    assert len(judge.requests) == 2


def test_sampled_mean_is_the_mean_of_the_valid_samples() -> None:
    assert sampled_mean([1, None, 4]) == 2.5
    assert sampled_mean([3]) == 3.0
    assert sampled_mean([None, 5]) == 5.0  # exactly half valid is enough
    assert sampled_mean([1, 2, 2, None]) == pytest.approx(5 / 3, rel=1e-12)


@pytest.mark.parametrize(
    ("samples", "message"),
    [([None, None, 1], "only 1 of 3"), ([None], "only 0 of 1"), ([], "only 0 of 0")],
)
def test_sampled_mean_of_fewer_than_half_valid_is_an_error(samples: list[int | None], message: str) -> None:
    with pytest.raises(BackendError, match=f"^{message} sampled scores were valid$"):
        sampled_mean(samples)


# --- fallback ----------------------------------------------------------------------------


@pytest.mark.parametrize("scoring", ["logprobs", "top"])
def test_a_backend_without_logprobs_is_an_error_unless_fallback_is_allowed(scoring: str) -> None:
    judge = ScriptedBackend(capabilities=NO_LOGPROBS)
    result = geval(scoring=scoring).measure(CASE, judge)
    assert (result.score, result.passed) == (None, None)
    assert result.error == (
        f"BackendError: scoring '{scoring}' needs log-probabilities, which this backend (scripted) "
        "does not give; set scoring = 'sampling', or allow_fallback = true to fall back to it"
    )
    assert judge.requests == []


@pytest.mark.parametrize("scoring", ["logprobs", "top"])
def test_allow_fallback_samples_and_records_it(scoring: str) -> None:
    judge = ScriptedBackend(json_values=[{"score": s} for s in (2, 3, 4, 5)], capabilities=NO_LOGPROBS)
    result = geval(scoring=scoring, allow_fallback=True, samples=4, include_reason=False).measure(CASE, judge)
    assert result.error is None
    assert result.details["method"] == "sampling"
    assert result.details["fallback"] == f"{scoring} -> sampling: the backend gives no log-probabilities"
    assert result.raw_score == 3.5
    assert result.score == 0.625
    assert [r.seed for r in json_requests(judge)] == [0, 1, 2, 3]
    assert all(isinstance(r, JsonRequest) and r.temperature == 1.0 for r in judge.requests)


def test_sampling_needs_no_fallback_on_any_backend() -> None:
    for capabilities in (NO_LOGPROBS, ScriptedBackend().capabilities):
        judge = ScriptedBackend(json_values=[{"score": 4}], capabilities=capabilities)
        result = geval(scoring="sampling", samples=1, include_reason=False).measure(CASE, judge)
        assert result.score == 0.75
        assert "fallback" not in result.details


def test_a_backend_with_logprobs_ignores_allow_fallback() -> None:
    result = geval(allow_fallback=True, include_reason=False).measure(CASE, ScriptedBackend(logprobs=[LOGPROBS]))
    assert result.details["method"] == "logprobs"
    assert "fallback" not in result.details


# --- multi-digit score ranges --------------------------------------------------------------


def test_a_zero_to_ten_range_asks_for_eleven_candidates() -> None:
    judge = ScriptedBackend(logprobs=[logprobs(0, 0, 0, 0, 0, 0, 0, 0.5, 0.3, 0, 0.2, low=0)])
    result = geval(score_range=(0, 10), include_reason=False).measure(CASE, judge)
    [request] = judge.requests
    assert isinstance(request, DistributionRequest)
    assert request.candidates == ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
    assert "on a scale from 0 (worst) to 10 (best)" in request.messages[-1].content
    assert result.details["expected_score"] == pytest.approx(7.9, rel=1e-12)  # 3.5 + 2.4 + 2
    assert result.details["most_likely_score"] == 7.0
    assert result.score == pytest.approx(0.79, rel=1e-12)


def test_a_one_to_hundred_range_asks_for_every_score() -> None:
    judge = ScriptedBackend(logprobs=[{str(s): (0.0 if s == 100 else -math.inf) for s in range(1, 101)}])
    result = geval(score_range=(1, 100), include_reason=False).measure(CASE, judge)
    request = judge.requests[0]
    assert isinstance(request, DistributionRequest)
    assert request.candidates == tuple(str(s) for s in range(1, 101))
    assert result.score == 1.0


# --- rubric --------------------------------------------------------------------------------

RUBRIC = [
    {"score_range": (1, 2), "expected_outcome": "bad"},
    {"score_range": (3, 4), "expected_outcome": "fine"},
    {"score_range": (5, 5), "expected_outcome": "great"},
]


def test_the_rubric_is_rendered_into_the_score_prompt() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    metric = geval(criteria="Correct.", rubric=RUBRIC, include_reason=False)
    assert metric.rubric[2] == RubricItem(score_range=(5, 5), expected_outcome="great")
    metric.measure(CASE, judge)
    user = judge.requests[0].messages[-1].content
    assert "2. Penalize extra text.\n\nRubric:\n1-2: bad\n3-4: fine\n5: great\n\n---\nInput:" in user


@pytest.mark.parametrize("item_range", [(0, 2), (4, 6), (4, 2)])
def test_a_rubric_range_outside_the_score_range_is_rejected(item_range: tuple[int, int]) -> None:
    a, b = item_range
    with pytest.raises(ValidationError, match=f"rubric range {a}-{b} is outside score_range 1-5"):
        geval(rubric=[{"score_range": item_range, "expected_outcome": "x"}])


def test_build_metric_turns_a_bad_rubric_into_a_config_error() -> None:
    options = {"criteria": "c", "score_range": [0, 3], "rubric": [{"score_range": [2, 4], "expected_outcome": "x"}]}
    with pytest.raises(ConfigError) as info:
        build_metric("geval", options)
    assert str(info.value) == "geval: rubric range 2-4 is outside score_range 0-3"


# --- include_reason --------------------------------------------------------------------------


def test_the_reason_is_asked_for_after_the_score_and_told_it() -> None:
    judge = ScriptedBackend(json_values=[{"reason": "  The sum is right. "}], logprobs=[LOGPROBS])
    result = geval(criteria="Correct.").measure(CASE, judge)
    score_request, reason_request = judge.requests
    assert isinstance(score_request, DistributionRequest)
    assert isinstance(reason_request, JsonRequest)
    assert reason_request.json_schema == REASON_SCHEMA
    assert (reason_request.max_tokens, reason_request.temperature, reason_request.seed) == (256, 0.0, 0)
    # a follow-up to the score prompt: its messages, the judge's answer, then the question
    assert reason_request.messages[:2] == score_request.messages
    assert reason_request.messages[2] == Message(role="assistant", content="Score: 3.2")
    question = reason_request.messages[3]
    assert question.role == "user" and len(reason_request.messages) == 4
    assert question.content.startswith(
        "In one or two sentences, say why the Input and Actual Output above received the score 3.2 on the "
        "scale from 1 to 5,"
    )
    assert result.reason == "The sum is right."
    assert result.score == pytest.approx(0.55, rel=1e-12)  # the same as without a reason
    assert result.raw_score == pytest.approx(3.2, rel=1e-12)


@pytest.mark.parametrize(
    ("probabilities", "told"), [((0, 0, 0, 0, 1), "5"), ((0, 0, 0.75, 0.25, 0), "3.25"), ((0, 0, 0.5, 0.5, 0), "3.5")]
)
def test_the_reason_prompt_shows_the_score_without_trailing_zeros(probabilities: tuple[float, ...], told: str) -> None:
    judge = ScriptedBackend(json_values=[{"reason": "r"}], logprobs=[logprobs(*probabilities)])
    geval().measure(CASE, judge)
    assert f"received the score {told} on the scale from 1 to 5," in judge.requests[1].messages[-1].content
    assert judge.requests[1].messages[-2].content == f"Score: {told}"


def test_the_reason_of_a_sampled_score_follows_the_samples() -> None:
    judge = ScriptedBackend(json_values=[{"score": 4}, {"score": 3}, {"reason": "Mostly right."}])
    result = geval(scoring="sampling", samples=2).measure(CASE, judge)
    *samples, reason_request = judge.requests
    assert [r.json_schema for r in samples] == [SAMPLE_SCHEMA] * 2  # type: ignore[union-attr]
    assert isinstance(reason_request, JsonRequest) and reason_request.json_schema == REASON_SCHEMA
    assert "received the score 3.5 on the scale from 1 to 5," in reason_request.messages[-1].content
    assert result.reason == "Mostly right."


def test_a_failed_reason_request_keeps_the_score_and_says_why() -> None:
    # The score is computed first and does not depend on the reason: it stands.
    judge = ScriptedBackend(json_values=[SchemaViolation("reply is not JSON")], logprobs=[LOGPROBS])
    result = geval().measure(CASE, judge)
    assert result.error is None
    assert result.score == pytest.approx(0.55, rel=1e-12)
    assert result.details["reason_error"] == "SchemaViolation: reply is not JSON"
    assert result.reason == "Expected score 3.20 on 1-5 (the valid scores covered 100% of the judge's probability)."


def test_without_include_reason_no_json_is_generated_and_the_reason_is_a_summary() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    result = geval(include_reason=False).measure(CASE, judge)
    assert [type(r) for r in judge.requests] == [DistributionRequest]
    assert result.reason == "Expected score 3.20 on 1-5 (the valid scores covered 100% of the judge's probability)."


# --- prepare() ---------------------------------------------------------------------------------


def test_prepare_generates_the_steps_once_and_returns_a_copy() -> None:
    judge = ScriptedBackend(json_values=[{"steps": [" Compare with 4. ", "Ignore style."]}])
    metric = GEval(criteria="The answer is correct.")
    prepared = metric.prepare(judge)
    [request] = judge.requests
    assert isinstance(request, JsonRequest) and request.json_schema == STEPS_SCHEMA
    assert isinstance(prepared, GEval) and prepared is not metric
    assert (prepared.evaluation_steps, prepared.steps_source) == (("Compare with 4.", "Ignore style."), "generated")
    assert (metric.evaluation_steps, metric.steps_source) == (None, "given")  # the original is unchanged
    assert prepared.model_dump(exclude={"evaluation_steps", "steps_source"}) == metric.model_dump(
        exclude={"evaluation_steps", "steps_source"}
    )
    assert prepared.prepare(judge) is prepared
    assert len(judge.requests) == 1


def test_prepare_with_given_steps_or_without_a_judge_does_nothing() -> None:
    judge = ScriptedBackend()
    given = geval(criteria="c")
    assert given.prepare(judge) is given
    criteria_only = GEval(criteria="c")
    assert criteria_only.prepare(None) is criteria_only
    assert judge.requests == []


def test_a_prepared_metric_scores_without_asking_for_steps_again() -> None:
    judge = ScriptedBackend(json_values=[{"steps": ["A."]}], logprobs=[LOGPROBS])
    prepared = GEval(criteria="c", include_reason=False).prepare(judge)
    result = prepared.measure(CASE, judge)
    assert [type(r) for r in judge.requests] == [JsonRequest, DistributionRequest]
    assert (result.details["evaluation_steps"], result.details["steps_source"]) == (["A."], "generated")


CASES = [TestCase(input=f"q{i}", actual_output=f"a{i}") for i in range(3)]


def test_evaluate_generates_the_steps_once_for_the_whole_run() -> None:
    judge = ScriptedBackend(
        json_values=[{"steps": ["A."]}, {"reason": "r0"}, {"reason": "r1"}, {"reason": "r2"}],
        logprobs=[LOGPROBS] * 3,
    )
    report = evaluate(Dataset.from_cases(CASES), [GEval(criteria="c")], judge)
    assert len(json_requests(judge, STEPS_SCHEMA)) == 1
    assert len(json_requests(judge, REASON_SCHEMA)) == 3
    assert len(judge.requests) == 7  # steps, then (score, reason) per case
    results = [c.results[0] for c in report.cases]
    assert [r.reason for r in results] == ["r0", "r1", "r2"]
    assert [r.score for r in results] == [pytest.approx(0.55, rel=1e-12)] * 3
    assert {(tuple(r.details["evaluation_steps"]), r.details["steps_source"]) for r in results} == {
        (("A.",), "generated")
    }
    # Each case's prompts carry the run's steps.
    scores = [r for r in judge.requests if isinstance(r, DistributionRequest)]
    assert all("Evaluation steps:\n1. A.\n" in r.messages[-1].content for r in scores)


def test_evaluate_after_a_failed_prepare_retries_the_steps_per_case() -> None:
    # prepare() fails; the runner goes on with the unprepared metric, which asks for the
    # steps again in every case: case 0 records the error, cases 1 and 2 get their own steps.
    judge = ScriptedBackend(
        json_values=[
            SchemaViolation("no steps in prepare"),
            SchemaViolation("no steps in case 0"),
            {"steps": ["A."]},
            {"steps": ["B."]},
        ],
        logprobs=[LOGPROBS] * 2,
    )
    report = evaluate(Dataset.from_cases(CASES), [GEval(criteria="c", include_reason=False)], judge)
    results = [c.results[0] for c in report.cases]
    assert results[0].error == "SchemaViolation: no steps in case 0"
    assert results[0].score is None
    assert [r.details.get("evaluation_steps") for r in results] == [None, ["A."], ["B."]]
    assert [r.score for r in results[1:]] == [pytest.approx(0.55, rel=1e-12)] * 2
    assert len(json_requests(judge, STEPS_SCHEMA)) == 4
    assert [s.errored for s in report.summary] == [1]


# --- field_labels ------------------------------------------------------------------------------


def test_a_summary_preset_labels_the_fields_in_the_prompt() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    build_metric("geval:coherence", {"include_reason": False}).measure(
        TestCase(input="The document.", actual_output="The summary."), judge
    )
    user = judge.requests[0].messages[-1].content
    assert user.startswith("Source Document:\nThe document.\n\nSummary:\nThe summary.\n\n---\n")
    assert "grade the Source Document and Summary above on a scale from 1 (worst) to 5 (best)" in user


def test_the_fluency_preset_shows_only_the_summary() -> None:
    judge = ScriptedBackend(logprobs=[logprobs(0.2, 0.3, 0.5)])
    result = build_metric("geval:fluency", {"include_reason": False}).measure(
        TestCase(input="The document.", actual_output="The summary."), judge
    )
    user = judge.requests[0].messages[-1].content
    assert user.startswith("Summary:\nThe summary.\n\n---\n")
    assert "Source Document" not in user
    assert result.details["expected_score"] == pytest.approx(2.3, rel=1e-12)
    assert result.score == pytest.approx(0.65, rel=1e-12)


def test_the_groundedness_preset_shows_the_fact() -> None:
    judge = ScriptedBackend(logprobs=[logprobs(0.0, 0.0, 1.0, 0.0, low=0)])
    case = TestCase(input="Hi!", actual_output="Paris is in France.", context=["Paris is in France."])
    result = build_metric("geval:groundedness", {"include_reason": False}).measure(case, judge)
    assert (result.raw_score, result.score) == (2.0, pytest.approx(2 / 3, rel=1e-12))
    user = judge.requests[0].messages[-1].content
    assert user.startswith(
        "Conversation History:\nHi!\n\nResponse:\nParis is in France.\n\nFact:\n- Paris is in France.\n\n---\n"
    )
    assert "grade the Conversation History, Response and Fact above on a scale from 0 (worst) to 3 (best)" in user


def test_the_groundedness_range_has_the_levels_of_topical_chats_labels() -> None:
    labels = {round(r["scores"]["groundedness"], 6) for r in json.loads(TOPICAL_CHAT.read_text())}
    assert labels == {0.0, round(1 / 3, 6), round(2 / 3, 6), 1.0}
    low, high = build_metric("geval:groundedness").score_range  # type: ignore[attr-defined]
    assert {round((s - low) / (high - low), 6) for s in range(low, high + 1)} == labels


def test_the_case_comes_first_with_case_first() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    geval(layout="case_first", include_reason=False).measure(CASE, judge)
    assert judge.requests[0].messages[-1].content.startswith("Input:\nWhat is 2+2?\n\nActual Output:\n4\n\n---\n")


def test_presets_put_the_case_first_and_plain_geval_the_criteria() -> None:
    assert build_metric("geval:coherence").layout == "case_first"
    assert build_metric("geval:coherence", {"layout": "criteria_first"}).layout == "criteria_first"
    assert build_metric("geval", {"criteria": "c"}).layout == "criteria_first"


def test_an_unlabelled_field_keeps_its_default_label() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    geval(field_labels={"input": "Question"}, include_reason=False).measure(CASE, judge)
    assert "---\nQuestion:\nWhat is 2+2?\n\nActual Output:\n4\n\nFollowing" in judge.requests[0].messages[-1].content


def test_a_label_for_an_unknown_field_is_rejected() -> None:
    with pytest.raises(ValidationError, match=r"field_labels must name test-case fields, got \['answer'\]"):
        geval(field_labels={"answer": "Answer"})


def test_a_label_for_an_unknown_field_names_field_labels() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("geval", {"criteria": "c", "field_labels": {"answer": "Answer"}})
    assert "field_labels" in str(info.value)
    assert "evaluation_params" not in str(info.value)


# --- presets -----------------------------------------------------------------------------------


def test_a_preset_builds_a_named_geval() -> None:
    metric = build_metric("geval:coherence")
    assert isinstance(metric, GEval)
    assert (metric.name, metric.display_name) == ("coherence", "coherence")
    assert metric.score_range == (1, 5)
    assert metric.evaluation_params == ("input", "actual_output")
    assert metric.evaluation_steps == tuple(PRESETS["coherence"]["evaluation_steps"])
    assert metric.criteria == PRESETS["coherence"]["criteria"]
    assert (metric.scoring, metric.threshold, metric.include_reason) == ("logprobs", 0.5, True)


PRESET_SHAPES = {
    "coherence": ((1, 5), ("input", "actual_output")),
    "consistency": ((1, 5), ("input", "actual_output")),
    "fluency": ((1, 3), ("actual_output",)),
    "relevance": ((1, 5), ("input", "actual_output")),
    "engagingness": ((1, 3), ("input", "actual_output")),
    "naturalness": ((1, 3), ("input", "actual_output")),
    "groundedness": ((0, 3), ("input", "actual_output", "context")),
}


def test_the_presets_are_the_seven_dimensions() -> None:
    assert set(PRESETS) == set(PRESET_SHAPES)
    assert {f"geval:{name}" for name in PRESETS} <= set(metric_names())


@pytest.mark.parametrize(("name", "shape"), PRESET_SHAPES.items())
def test_every_preset_builds_with_its_range(name: str, shape: tuple[tuple[int, int], tuple[str, ...]]) -> None:
    metric = build_metric(f"geval:{name}")
    assert isinstance(metric, GEval)
    assert metric.name == name
    assert (metric.score_range, metric.evaluation_params) == shape
    assert metric.evaluation_steps and metric.steps_source == "given"


def test_options_override_a_preset() -> None:
    metric = build_metric("geval:coherence", {"scoring": "top", "name": "x"})
    assert isinstance(metric, GEval)
    assert (metric.scoring, metric.name) == ("top", "x")
    assert metric.score_range == (1, 5)
    assert metric.evaluation_steps == tuple(PRESETS["coherence"]["evaluation_steps"])


def test_a_bad_override_of_a_preset_names_the_preset() -> None:
    with pytest.raises(ConfigError) as info:
        build_metric("geval:fluency", {"rubric": [{"score_range": [4, 5], "expected_outcome": "x"}]})
    assert str(info.value) == "geval:fluency: rubric range 4-5 is outside score_range 1-3"


def test_a_preset_result_is_named_after_the_preset() -> None:
    judge = ScriptedBackend(logprobs=[LOGPROBS])
    result = build_metric("geval:relevance", {"include_reason": False}).measure(CASE, judge)
    assert (result.metric, result.kind) == ("relevance", "geval")


@pytest.mark.parametrize("kind", ["geval:nope", "exact_match:x", "geval:", "nope:coherence"])
def test_an_unknown_preset_is_an_unknown_metric(kind: str) -> None:
    with pytest.raises(UnknownMetric) as info:
        build_metric(kind)
    assert str(info.value) == unknown_name("metric", kind, metric_names())  # did you mean ...? (tests/test_cli_conventions.py)
