"""The arena against a scripted judge: both orders, their average, the ranking, sampling, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest
from pydantic import ValidationError
from scripted import ScriptedBackend

from localeval.backends.base import Capabilities, DistributionRequest, JsonRequest
from localeval.data.case import TestCase
from localeval.data.dataset import Dataset
from localeval.errors import DatasetError, SchemaViolation
from localeval.metrics import Arena, build_metric
from localeval.metrics.arena import TIE
from localeval.metrics.ranking import soft_wins, win_probability
from localeval.run.runner import check_inputs, evaluate

STEPS = ("Check the answer is right.",)
CASE = TestCase(input="What is 2+2?", contestants={"new": "4", "old": "5"})
THREE = TestCase(input="What is 2+2?", contestants={"x": "4", "y": "5", "z": "four"})
NO_LOGPROBS = Capabilities(json_schema=True, distribution=False, multi_token_candidates=False)


def p_a(p: float) -> dict[str, float]:
    """Raw log-probabilities of the letters (the next token: " A", " B") with P(A) = p."""
    return {" A": math.log(p), " B": math.log(1 - p)}


def wilson_bounds(k: int, n: int) -> tuple[float, float]:
    """Wilson's 95% score interval by its closed form."""
    z = NormalDist().inv_cdf(0.975)
    centre, half = k + z * z / 2, z * math.sqrt(k * (n - k) / n + z * z / 4)
    return (centre - half) / (n + z * z), (centre + half) / (n + z * z)


def arena(**options: Any) -> Arena:
    return Arena(**{"evaluation_steps": STEPS, "include_reason": False, **options})


def shown(request: JsonRequest | DistributionRequest) -> tuple[str, str]:
    """The outputs the prompt shows as A and as B."""
    text = request.messages[-1].content
    a = text.split("Output A:\n")[1].split("\n")[0]
    b = text.split("Output B:\n")[1].split("\n")[0]
    return a, b


def test_each_pair_is_judged_in_both_orders_and_the_preference_averages_them() -> None:
    judge = ScriptedBackend(logprobs=[p_a(0.8), p_a(0.4)])
    result = arena().measure(CASE, judge)
    assert result.error is None
    # new first: P(A) = 0.8; old first: P(A) = 0.4, so new (shown as B) gets 0.6. Mean 0.7.
    assert result.score == pytest.approx(0.7, abs=1e-12)
    assert result.passed is True
    assert [shown(r) for r in judge.requests] == [("4", "5"), ("5", "4")]
    assert all(isinstance(r, DistributionRequest) and r.candidates == (" A", " B") for r in judge.requests)
    assert judge.requests[0].prefill == "The better output is Output"
    pair = result.details["pairs"][0]
    assert (pair["a"], pair["b"]) == ("new", "old")
    assert pair["p_first"] == [pytest.approx(0.8), pytest.approx(0.4)]
    assert pair["preference"] == pytest.approx(0.7)
    assert [(o["first"], o["second"]) for o in pair["orders"]] == [("new", "old"), ("old", "new")]
    assert pair["orders"][1]["distribution"] == {"A": pytest.approx(0.4), "B": pytest.approx(0.6)}
    assert result.details["mean_p_first"] == pytest.approx(0.6)  # the position bias, measured
    assert result.details["method"] == "logprobs"
    assert "ranking" not in result.details  # two contestants: the preference says it all
    # new's two readings, 0.8 shown first and 0.6 shown second, agree: new is preferred beyond the noise
    assert (pair["preferred"], pair["outcome"]) == ("new", "new preferred")
    assert (result.details["outcome"], result.details["preferred"]) == ("new preferred", ["new"])
    assert result.reason.startswith("new preferred: preference for new over old 0.70 (P(first) 0.80 with new first, 0.40")


def test_a_judge_that_always_prefers_the_first_position_has_no_preference() -> None:
    result = arena().measure(CASE, ScriptedBackend(logprobs=[p_a(0.9), p_a(0.9)]))
    assert result.score == pytest.approx(0.5, abs=1e-12)
    assert result.details["mean_p_first"] == pytest.approx(0.9)
    assert (result.details["outcome"], result.details["preferred"]) == (TIE, [])


@pytest.mark.parametrize(
    ("p_first", "preferred", "passed"),
    [
        ((0.95, 0.6), None, True),  # new's readings 0.95 and 0.4: the orders disagree, whatever the mean (0.675)
        ((0.3, 0.45), None, True),  # 0.3 and 0.55: a tie though the mean (0.425) is below 0.5, and it passes
        ((0.5, 0.2), None, True),   # 0.5 and 0.8: one order indifferent is no preference
        ((0.55, 0.45), "new", True),  # 0.55 and 0.55: small, and the same in both orders
        ((0.3, 0.8), "old", False),   # 0.3 and 0.2: old preferred beyond the noise fails
    ],
)
def test_a_preference_the_position_swap_can_flip_is_a_tie(p_first: tuple[float, float], preferred: str | None,
                                                            passed: bool) -> None:
    result = arena().measure(CASE, ScriptedBackend(logprobs=[p_a(p) for p in p_first]))
    pair = result.details["pairs"][0]
    assert pair["preferred"] == preferred
    assert pair["outcome"] == (TIE if preferred is None else f"{preferred} preferred")
    assert result.details["preferred"] == ([] if preferred is None else [preferred])
    assert result.passed is passed


@pytest.mark.parametrize(("first_order", "second_order", "preferred"), [
    (["A"] * 12 + ["B"] * 8, ["B"] * 12 + ["A"] * 8, None),   # 24 of 40 for new: Wilson 0.45-0.74 holds 0.5
    (["A"] * 16 + ["B"] * 4, ["B"] * 16 + ["A"] * 4, "new"),  # 32 of 40: 0.65-0.90
])
def test_sampled_verdicts_must_also_clear_their_sampling_noise(first_order: list[str], second_order: list[str],
                                                               preferred: str | None) -> None:
    verdicts = [{"better": v} for v in first_order + second_order]
    judge = ScriptedBackend(json_values=verdicts, capabilities=NO_LOGPROBS)
    result = arena(scoring="sampling", samples=20).measure(CASE, judge)
    assert result.details["pairs"][0]["p_first"][0] > 0.5 > result.details["pairs"][0]["p_first"][1]  # orders agree
    assert result.details["pairs"][0]["preferred"] == preferred


def test_the_prompt_shows_criteria_steps_rubric_and_the_chosen_fields() -> None:
    case = CASE.model_copy(update={"expected_output": "4"})
    judge = ScriptedBackend(logprobs=[p_a(0.5), p_a(0.5)])
    arena(criteria="Correct.", rubric=("States the number.",), evaluation_params=("input", "expected_output"),
          field_labels={"input": "Question"}).measure(case, judge)
    assert judge.requests[0].messages[-1].content == (
        "Evaluation criteria:\nCorrect.\n\nEvaluation steps:\n1. Check the answer is right.\n\n"
        "Rubric:\n- States the number.\n\n---\nQuestion:\nWhat is 2+2?\n\nExpected Output:\n4\n\n"
        "Output A:\n4\n\nOutput B:\n5\n\n"
        "Following the steps, which output is better, A or B? Reply with the letter only."
    )


def test_three_contestants_every_pair_both_orders_and_a_ranking() -> None:
    # (x, y): 0.9 and 0.3 → x 0.8, x preferred; (x, z): 0.7 and 0.5 → x 0.6, a tie (x's second reading
    # is 0.5); (y, z): 0.6 and 0.6 → y 0.5, a tie.
    judge = ScriptedBackend(logprobs=[p_a(p) for p in (0.9, 0.3, 0.7, 0.5, 0.6, 0.6)])
    result = arena().measure(THREE, judge)
    assert [shown(r) for r in judge.requests] == [
        ("4", "5"), ("5", "4"), ("4", "four"), ("four", "4"), ("5", "four"), ("four", "5")
    ]
    pairs = result.details["pairs"]
    assert [(p["a"], p["b"], p["preference"], p["preferred"]) for p in pairs] == [
        ("x", "y", pytest.approx(0.8), "x"), ("x", "z", pytest.approx(0.6), None), ("y", "z", pytest.approx(0.5), None)
    ]
    assert (result.details["outcome"], result.passed) == (TIE, True)  # x beat y, tied z: not preferred to every other
    assert result.score == pytest.approx(0.7)  # x, the first-named: mean of 0.8 and 0.6
    assert result.details["mean_p_first"] == pytest.approx(0.6)
    ranking = result.details["ranking"]
    assert [s["name"] for s in ranking] == ["x", "z", "y"]  # by strength, from the preferences
    # win rates from the outcomes, a tie half a win: x 1 win 1 tie, z 2 ties, y 1 tie 1 loss
    assert [(s["wins"], s["ties"], s["losses"]) for s in ranking] == [(1, 1, 0), (0, 2, 0), (0, 1, 1)]
    assert [s["win_rate"] for s in ranking] == [0.75, 0.5, 0.25]
    assert ranking[0]["strength_low"] is None  # one case: nothing to resample
    assert result.details["smoothing"] == 0.0
    # Bradley–Terry's likelihood equations: each contestant's soft wins = its expected wins.
    s = {row["name"]: row["strength"] for row in ranking}
    wins = soft_wins(list(s), [(p["a"], p["b"], p["preference"]) for p in pairs])
    for name in s:
        expected = sum(win_probability(s[name], s[other]) for other in s if other != name)
        assert sum(w for (a, _), w in wins.items() if a == name) == pytest.approx(expected, abs=1e-9)


def test_a_run_ranks_the_contestants_over_all_cases() -> None:
    cases = [CASE, CASE.model_copy(update={"input": "What is 3+3?"})]
    judge = ScriptedBackend(logprobs=[p_a(0.8), p_a(0.4), p_a(0.6), p_a(0.6)])
    report = evaluate(Dataset.from_cases(cases), [arena()], judge)
    summary = report.summary[0]
    assert summary.mean_score == pytest.approx((0.7 + 0.5) / 2)
    details = summary.details
    assert details["cases"] == 2
    assert details["mean_p_first"] == pytest.approx((0.8 + 0.4 + 0.6 + 0.6) / 4)
    # case 1: new's readings 0.8 and 0.6, new preferred; case 2: 0.6 and 0.4, a tie
    low = 0.25 + 0.5 * wilson_bounds(1, 1)[0]  # the tie's half a win held, Wilson on the one decided case
    assert details["pairs"] == [{
        "a": "new", "b": "old", "cases": 2, "preference": pytest.approx(0.6),
        "p_first": [pytest.approx(0.7), pytest.approx(0.5)], "wins": 1, "ties": 1, "losses": 0,
        "win_rate": 0.75, "win_rate_low": pytest.approx(low, abs=1e-9), "win_rate_high": pytest.approx(0.75),
        "better": None, "verdict": "no significant difference",
    }]
    assert details["first"] == "new"
    # soft wins: new 1.2, old 0.8 ⇒ s_new - s_old = log 1.5
    assert [(r["name"], r["strength"], r["win_rate"]) for r in details["ranking"]] == [
        ("new", pytest.approx(math.log(1.5) / 2, abs=1e-9), 0.75),
        ("old", pytest.approx(-math.log(1.5) / 2, abs=1e-9), 0.25),
    ]
    assert details["smoothing"] == 0.0
    # two cases resampled: twice the first (soft wins 1.4 to 0.6), twice the second (1 to 1), or one of each
    assert details["ranking"][0]["strength_low"] == pytest.approx(0.0, abs=1e-9)
    assert details["ranking"][0]["strength_high"] == pytest.approx(math.log(1.4 / 0.6) / 2, abs=1e-9)
    assert json.loads(report.to_json())["summary"][0]["details"]["ranking"][0]["name"] == "new"


def test_sampling_when_the_backend_gives_no_logprobs_is_allowed_and_recorded() -> None:
    # new first: A, an invalid reply, B → 1 of 2 valid says A; old first: B, B, B → P(A) 0.
    verdicts = [{"better": "A"}, SchemaViolation("cut"), {"better": "B"}, *[{"better": "B"}] * 3]
    judge = ScriptedBackend(json_values=verdicts, capabilities=NO_LOGPROBS)
    result = arena(allow_fallback=True, samples=3, seed=7).measure(CASE, judge)
    assert result.error is None
    assert result.details["method"] == "sampling"
    assert result.details["fallback"] == "logprobs -> sampling: the backend gives no log-probabilities"
    pair = result.details["pairs"][0]
    assert pair["p_first"] == [0.5, 0.0]
    assert result.score == pytest.approx(0.75)
    assert pair["orders"][0]["samples"] == ["A", None, "B"]
    requests = [r for r in judge.requests if isinstance(r, JsonRequest)]
    assert [r.seed for r in requests] == [7, 8, 9, 7, 8, 9]
    assert requests[0].json_schema["properties"]["better"]["enum"] == ["A", "B"]


def test_without_logprobs_and_no_fallback_the_result_is_an_error_naming_the_way_out() -> None:
    result = arena().measure(CASE, ScriptedBackend(capabilities=NO_LOGPROBS))
    assert result.score is None
    assert "allow_fallback = true" in (result.error or "")


def test_too_little_mass_on_the_letters_is_an_error() -> None:
    result = arena().measure(CASE, ScriptedBackend(logprobs=[{" A": math.log(0.02), " B": math.log(0.03)}]))
    assert result.score is None
    assert "covered 5.0%" in (result.error or "")


def test_the_reason_continues_the_first_comparison_with_the_preferred_letter() -> None:
    judge = ScriptedBackend(logprobs=[p_a(0.3), p_a(0.8)], json_values=[{"reason": "5 is wrong."}])
    result = arena(include_reason=True).measure(CASE, judge)
    assert result.score == pytest.approx(0.25)
    assert result.reason == "5 is wrong."
    reason = judge.requests[2]
    assert isinstance(reason, JsonRequest)
    assert reason.messages[:2] == judge.requests[0].messages
    assert reason.messages[2].content == "The better output is Output B"  # old, shown as B, is preferred
    assert reason.messages[3].content.startswith("In one or two sentences, say why Output B is better than Output A")


def test_strict_mode_scores_one_only_when_the_first_named_is_preferred_beyond_the_noise() -> None:
    strict = arena(strict_mode=True)
    assert strict.threshold == 1.0
    assert strict.measure(CASE, ScriptedBackend(logprobs=[p_a(0.9), p_a(0.9)])).score == 0.0  # exactly 0.5
    tie = strict.measure(CASE, ScriptedBackend(logprobs=[p_a(0.9), p_a(0.8)]))  # readings 0.9 and 0.2
    assert (tie.score, tie.raw_score, tie.passed) == (0.0, pytest.approx(0.55), False)
    result = strict.measure(CASE, ScriptedBackend(logprobs=[p_a(0.9), p_a(0.3)]))  # 0.9 and 0.7
    assert (result.score, result.raw_score, result.passed) == (1.0, pytest.approx(0.8), True)


def test_steps_are_written_once_from_the_criteria_naming_both_outputs() -> None:
    judge = ScriptedBackend(json_values=[{"steps": ["Compare the numbers."]}], logprobs=[p_a(0.5), p_a(0.5)])
    result = Arena(criteria="Correct.", include_reason=False).measure(CASE, judge)
    assert result.details["steps_source"] == "generated"
    assert result.details["evaluation_steps"] == ["Compare the numbers."]
    assert "using only: Input, Output A and Output B." in judge.requests[0].messages[-1].content


def test_generated_steps_that_number_themselves_are_not_numbered_twice() -> None:
    written = ["1. Check the number.", "2) Prefer the right one.", "Step 3: Break ties by length.", "- Be brief.",
               "1.5 litres is a volume, not a step number."]
    judge = ScriptedBackend(json_values=[{"steps": written}], logprobs=[p_a(0.5), p_a(0.5)])
    result = Arena(criteria="Correct.", include_reason=False).measure(CASE, judge)
    steps = ["Check the number.", "Prefer the right one.", "Break ties by length.", "Be brief.",
             "1.5 litres is a volume, not a step number."]
    assert result.details["evaluation_steps"] == steps
    prompt = judge.requests[1].messages[-1].content
    assert "Evaluation steps:\n" + "".join(f"{i}. {step}\n" for i, step in enumerate(steps, 1)) in prompt


def test_options_are_checked() -> None:
    with pytest.raises(ValidationError, match="criteria or evaluation_steps"):
        Arena()
    with pytest.raises(ValidationError, match="other than the outputs"):
        Arena(criteria="c", evaluation_params=("actual_output",))
    assert isinstance(build_metric("arena", {"criteria": "c"}), Arena)


# --- bad input: fewer than two contestants, before any judge call -------------------------


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("cases.jsonl", '{"input": "q", "contestants": {"a": "1", "b": "2"}}\n{"input": "q", "contestants": {"a": "1"}}\n', 2),
        ("cases.json", '[\n{"input": "q", "contestants": {"a": "1", "b": "2"}},\n{"input": "q",\n "contestants": {}}\n]\n', 3),
        ("cases.csv", 'input,contestants\nq,"{""a"": ""1"", ""b"": ""2""}"\nq,"{""a"": ""1""}"\n', 3),
    ],
)
def test_fewer_than_two_contestants_names_file_line_and_field(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        Dataset.load(path)
    assert str(info.value).startswith(f"{path}:{line}: field 'contestants': ")
    assert "at least two contestants" in str(info.value)


def test_csv_contestants_load_as_a_mapping_and_save_back(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text('input,contestants\nq,"{""a"": ""1"", ""b"": ""2""}"\n', encoding="utf-8")
    dataset = Dataset.load(path)
    assert dataset.cases[0].contestants == {"a": "1", "b": "2"}
    dataset.save(tmp_path / "again.csv")
    assert Dataset.load(tmp_path / "again.csv").cases == dataset.cases


def test_a_contestant_output_that_is_not_text_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"input": "q", "contestants": {"a": "1", "b": 2}}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"cases.jsonl:1: field 'contestants': .*at contestants.b"):
        Dataset.load(path)


def test_a_case_without_contestants_fails_the_input_check_before_any_judge_call(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"input": "q", "contestants": {"a": "1", "b": "2"}}\n{"input": "q", "actual_output": "1"}\n')
    with pytest.raises(DatasetError, match=r"cases.jsonl:2: field 'contestants': metric 'arena' needs it"):
        check_inputs(Dataset.load(path), [arena()])
