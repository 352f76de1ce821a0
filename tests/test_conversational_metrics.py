"""The five conversational metrics against a scripted judge: the exact requests, prompts and scores."""

from __future__ import annotations

import math
from typing import Any

import pytest

from localeval.backends.base import Capabilities, DistributionRequest, JsonRequest
from localeval.data.case import ConversationalTestCase
from localeval.errors import ConfigError
from localeval.metrics import build_metric
from localeval.metrics.conversational import CONVERSATIONAL_METRICS, RoleAdherence, transcript
from localeval.metrics.conversational.turn_relevancy import ExchangeTurns, exchanges
from localeval.metrics.items import verdicts_schema
from localeval.metrics.judged import REASON_SCHEMA
from localeval.run.schedule import plan
from localeval.testing import ScriptedJudge

CASE = ConversationalTestCase.model_validate({
    "turns": [
        {"role": "user", "content": "Hi, I'm Ana and I'm vegetarian."},
        {"role": "assistant", "content": "Hello Ana! How can I help?"},
        {"role": "user", "content": "Suggest a dinner, and tell me the weather."},
        {"role": "assistant", "content": "Try a steak.", "tools_called": [{"name": "recipes", "input_parameters": {"q": "dinner"}}],
         "retrieval_context": ["Steak recipe."]},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "The stock market rose today."},
    ],
    "chatbot_role": "a cooking assistant",
    "scenario": "planning dinner",
    "expected_outcome": "a vegetarian dinner idea",
})
SYSTEM = "You judge conversations between a user and an AI assistant, using only what the conversation shows."
TRANSCRIPT = """Turn 1, user:
Hi, I'm Ana and I'm vegetarian.

Turn 2, assistant:
Hello Ana! How can I help?

Turn 3, user:
Suggest a dinner, and tell me the weather.

Turn 4, assistant:
Try a steak.
(Retrieved for this turn:
- Steak recipe.
)
(Tools called for this turn:
- recipes {"q": "dinner"}
)

Turn 5, user:
Thanks.

Turn 6, assistant:
The stock market rose today."""
OPENING = f"Conversation:\n{TRANSCRIPT}\n"


def json_requests(judge: ScriptedJudge) -> list[JsonRequest]:
    return [r for r in judge.requests if isinstance(r, JsonRequest)]


def test_the_transcript_shows_every_turn_and_the_assistant_turns_extras() -> None:
    assert transcript(CASE) == TRANSCRIPT
    assert "Retrieved" not in transcript(CASE, shown=("tools_called",))


def test_knowledge_retention_scores_kept_turns_and_keeps_each_turns_verdict() -> None:
    judge = ScriptedJudge([{"verdicts": ["kept", "contradicted", "forgot"]}, {"reason": "Steak contradicts vegetarian."}])
    result = build_metric("knowledge_retention").measure(CASE, judge)
    assert result.score == pytest.approx(1 / 3) and result.passed is False
    assert result.details["verdicts"] == [
        {"turn": 2, "verdict": "kept"}, {"turn": 4, "verdict": "contradicted"}, {"turn": 6, "verdict": "forgot"}]
    assert result.details["counts"] == {"kept": 1, "forgot": 1, "contradicted": 1, "nothing_to_retain": 0}
    assert result.details["unjudged"] == []
    verdicts, reason = json_requests(judge)
    assert verdicts.json_schema == verdicts_schema(3, ["kept", "forgot", "contradicted", "nothing_to_retain"])
    assert [m.role for m in verdicts.messages] == ["system", "user"] and verdicts.messages[0].content == SYSTEM
    assert verdicts.messages[1].content.startswith(OPENING + "---\nTask: check whether the assistant remembers")
    assert "For each of the assistant's turns 2, 4, 6, give one verdict" in verdicts.messages[1].content
    # The reason is a follow-up turn of the verdicts call: same conversation, then the question.
    assert reason.messages[:2] == verdicts.messages and reason.json_schema == REASON_SCHEMA
    assert reason.messages[2].content == '{"verdicts": ["kept", "contradicted", "forgot"]}'
    assert reason.messages[3].content.startswith("Your verdicts, turn by turn: turn 2: kept; turn 4: contradicted; turn 6: forgot.")
    assert result.reason == "Steak contradicts vegetarian."


def test_role_adherence_shows_the_role_and_scores_in_role_turns() -> None:
    judge = ScriptedJudge([{"verdicts": ["in_role", "in_role", "out_of_role"]}])
    result = build_metric("role_adherence", {"include_reason": False}).measure(CASE, judge)
    assert result.score == pytest.approx(2 / 3) and result.details["counts"] == {"in_role": 2, "out_of_role": 1}
    (request,) = json_requests(judge)
    assert "The assistant's role:\na cooking assistant\n" in request.messages[1].content


def test_conversation_completeness_lists_intentions_then_judges_them_in_a_follow_up() -> None:
    intentions = ["The user wants a dinner idea.", "The user wants the weather.", "The user wants a dinner idea."]
    judge = ScriptedJudge([{"intentions": intentions}, {"verdicts": ["satisfied", "unsatisfied"]}, {"reason": "No weather."}])
    result = build_metric("conversation_completeness").measure(CASE, judge)
    assert result.score == 0.5
    assert result.details["verdicts"] == [
        {"intention": "The user wants a dinner idea.", "verdict": "satisfied"},
        {"intention": "The user wants the weather.", "verdict": "unsatisfied"}]
    assert result.details["dropped"] == 1
    listing, verdicts, reason = json_requests(judge)
    assert listing.messages[1].content.startswith(OPENING + "---\nScenario: planning dinner\nTask: list what the user wanted")
    assert verdicts.messages[:2] == listing.messages  # the transcript is not sent again as a new prompt
    assert verdicts.messages[2].content == '{"intentions": ' + str(intentions).replace("'", '"') + "}"
    assert verdicts.json_schema == verdicts_schema(2, ["satisfied", "unsatisfied"])
    assert reason.messages[:4] == verdicts.messages


def test_turn_relevancy_judges_each_exchange_once_with_its_reply_as_a_whole() -> None:
    judge = ScriptedJudge([{"verdict": "irrelevant"}, {"reason": "The stock market is off topic."}])
    case = CASE.model_copy(update={"turns": [CASE.turns[1], *CASE.turns[2:4], CASE.turns[5]]})  # opens with the assistant
    result = build_metric("turn_relevancy", {"window_size": 1}).measure(case, judge)
    assert result.score == 0.0
    assert result.details["verdicts"] == [{"exchange": 1, "turn": 4, "reply": [3, 4], "verdict": "irrelevant"}]
    assert result.details["unjudged"] == [1] and result.details["window_size"] == 1
    verdict, reason = json_requests(judge)
    assert ("Task: judge the assistant's reply in turns 3, 4, to the user's turn 2, in the light of turns 1 to 4 "
            "(this exchange), ignoring the rest of the conversation." in verdict.messages[1].content)
    assert reason.messages[3].content.startswith("The verdicts on all of the assistant's replies: turns 3, 4: irrelevant.")


def test_turn_relevancy_with_no_user_turn_answered_is_an_error_before_any_judge_call() -> None:
    for turns in ([{"role": "assistant", "content": "Hi!"}],
                  [{"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "Bye."}]):
        case = ConversationalTestCase.model_validate({"turns": turns})
        judge = ScriptedJudge()
        metric = build_metric("turn_relevancy")
        result = metric.measure(case, judge)
        assert result.error == "MetricInputError: no assistant turn answers a user turn: there is no exchange to judge"
        assert judge.requests == [] and metric.prompt_start(case) == "turn_relevancy"


LOGPROBS = {"1": math.log(0.1), "2": math.log(0.1), "3": math.log(0.2), "4": math.log(0.4), "5": math.log(0.2)}


def test_conversational_geval_weights_scores_by_probability_over_the_transcript() -> None:
    metric = build_metric("conversational_geval", {
        "criteria": "The assistant respects the user's diet.", "evaluation_steps": ["Check the diet."],
        "evaluation_params": ["content", "expected_outcome"], "include_reason": False})
    judge = ScriptedJudge(logprobs=[LOGPROBS])
    result = metric.measure(CASE, judge)
    expected = 0.1 * 1 + 0.1 * 2 + 0.2 * 3 + 0.4 * 4 + 0.2 * 5
    assert result.raw_score == pytest.approx(expected) and result.score == pytest.approx((expected - 1) / 4)
    (request,) = judge.requests
    assert isinstance(request, DistributionRequest) and request.prefill == "Score: "
    user = request.messages[1].content
    assert user.startswith("Conversation:\n" + transcript(CASE, shown=()) + "\n\nExpected Outcome:\na vegetarian dinner idea\n\n---\n")
    assert "Retrieved" not in user and "grade the Conversation and Expected Outcome above" in user


def test_conversational_geval_writes_steps_once_and_falls_back_only_when_allowed() -> None:
    metric = build_metric("conversational_geval", {"criteria": "Polite.", "scoring": "top", "allow_fallback": True,
                                                  "samples": 2, "include_reason": False})
    judge = ScriptedJudge([{"steps": ["Read the turns."]}, {"score": 4}, {"score": 2}],
                          capabilities=Capabilities(json_schema=True, distribution=False, multi_token_candidates=False,
                                                        max_top_logprobs=None))
    result = metric.prepare(judge).measure(CASE, judge)
    assert result.raw_score == 3.0 and result.details["method"] == "sampling"
    assert result.details["fallback"] == "top -> sampling: the backend gives no log-probabilities"
    assert result.details["evaluation_steps"] == ["Read the turns."]
    assert "using only: Conversation" in json_requests(judge)[0].messages[-1].content
    with pytest.raises(ConfigError, match=r"evaluation_params must name turn fields .* got \[.input.\]$"):
        build_metric("conversational_geval", {"criteria": "x", "evaluation_params": ["input"]})


def test_strict_mode_is_binary_on_every_conversational_metric() -> None:
    judge = ScriptedJudge([{"verdicts": ["in_role", "in_role", "out_of_role"]}])
    result = build_metric("role_adherence", {"strict_mode": True, "include_reason": False}).measure(CASE, judge)
    assert (result.score, result.raw_score, result.threshold) == (0.0, pytest.approx(2 / 3), 1.0)


def first_request(kind: str, case: ConversationalTestCase) -> Any:
    replies: dict[str, list[Any]] = {
        "knowledge_retention": [{"verdicts": ["kept"] * 3}], "role_adherence": [{"verdicts": ["in_role"] * 3}],
        "conversation_completeness": [{"intentions": ["x"]}, {"verdicts": ["satisfied"]}],
        "turn_relevancy": [{"verdict": "relevant"}] * 3}
    judge = ScriptedJudge(replies.get(kind, []), logprobs=[LOGPROBS])
    options = {"criteria": "Good.", "evaluation_steps": ["Check."]} if kind == "conversational_geval" else {}
    metric = build_metric(kind, {**options, "include_reason": False})
    assert metric.measure(case, judge).error is None
    return metric, judge.requests[0]


def test_every_conversational_metric_opens_with_the_same_transcript_block_and_sorts_by_it() -> None:
    kinds = [cls.kind for cls in CONVERSATIONAL_METRICS]
    for kind in kinds:
        metric, request = first_request(kind, CASE)
        assert request.messages[0].content == SYSTEM
        assert request.messages[1].content.startswith(OPENING)
        assert metric.prompt_start(CASE) == "\n".join(m.content for m in request.messages)
    other = CASE.model_copy(update={"turns": [CASE.turns[0].model_copy(update={"content": "Hi, I'm Bo."}), *CASE.turns[1:]]})
    metrics = [build_metric(k, {"criteria": "Good."} if k == "conversational_geval" else {}) for k in kinds]
    tasks = plan([CASE, other, CASE.model_copy(update={"name": "again"})], metrics)
    # The calls about one conversation run back to back, whatever the metric; equal conversations next to each other.
    assert [t.case for t in tasks] == [0, 2] * 5 + [1] * 5 or [t.case for t in tasks] == [1] * 5 + [0, 2] * 5


def test_a_composite_of_conversational_metrics_judges_conversations_and_refuses_a_mix() -> None:
    composite = build_metric("composite", {"aggregate": "mean", "metrics": [
        {"metric": "knowledge_retention", "include_reason": False}, {"metric": "role_adherence", "include_reason": False}]})
    judge = ScriptedJudge([{"verdicts": ["kept", "kept", "forgot"]}, {"verdicts": ["in_role"] * 3}])
    assert composite.measure(CASE, judge).score == pytest.approx((2 / 3 + 1) / 2)
    with pytest.raises(ConfigError, match="the parts judge different kinds of case"):
        build_metric("composite", {"metrics": [{"metric": "role_adherence"}, {"metric": "exact_match"}]})


def test_a_broken_prompt_file_is_the_cases_error_not_the_runs(tmp_path: Any) -> None:
    broken = tmp_path / "verdicts.txt"
    broken.write_text("[[user]]\n{{ nowhere }}\n", encoding="utf-8")
    metric = build_metric("role_adherence", {"verdicts_prompt": str(broken)})
    assert metric.prompt_start(CASE) == "role_adherence\na cooking assistant"  # ordering still works
    result = metric.measure(CASE, ScriptedJudge())
    assert result.error is not None and result.error.startswith("PromptError: ") and "nowhere" in result.error


# --- knowledge_retention: turns with nothing to retain stay out of the score (issue 25) ---------------

def conversation(*turns: tuple[str, str]) -> ConversationalTestCase:
    return ConversationalTestCase.model_validate({"turns": [{"role": r, "content": c} for r, c in turns]})


ALLERGY = conversation(
    ("assistant", "Hello! How can I help?"),
    ("user", "I'm allergic to peanuts. Suggest a snack."),
    ("assistant", "Try peanut butter cookies."),
)


def test_knowledge_retention_does_not_ask_about_a_turn_before_the_user_said_anything() -> None:
    # Issue 25: the greeting counted as "kept", so forgetting the allergy scored 0.5.
    judge = ScriptedJudge([{"verdicts": ["forgot"]}])
    result = build_metric("knowledge_retention", {"include_reason": False}).measure(ALLERGY, judge)
    assert (result.error, result.score, result.passed) == (None, 0.0, False)
    assert result.details["verdicts"] == [{"turn": 3, "verdict": "forgot"}]
    assert result.details["unjudged"] == [1]
    (request,) = json_requests(judge)
    assert request.json_schema == verdicts_schema(1, ["kept", "forgot", "contradicted", "nothing_to_retain"])
    assert "For each of the assistant's turns 3, give one verdict" in request.messages[1].content
    assert result.reason == "0 of 1 assistant turns keep what the user said (1 forgot, 0 contradicted)."


def test_knowledge_retention_leaves_turns_the_judge_finds_nothing_to_retain_for_out_of_the_score() -> None:
    case = conversation(("user", "Hi!"), ("assistant", "Hello! How can I help?"),
                        *((t.role, t.content) for t in ALLERGY.turns[1:]))
    judge = ScriptedJudge([{"verdicts": ["nothing_to_retain", "forgot"]}])
    result = build_metric("knowledge_retention", {"include_reason": False}).measure(case, judge)
    assert (result.score, result.details["unjudged"]) == (0.0, [])
    assert result.details["counts"] == {"kept": 0, "forgot": 1, "contradicted": 0, "nothing_to_retain": 1}
    assert result.reason == (
        "0 of 1 assistant turns keep what the user said (1 forgot, 0 contradicted); 1 more had nothing to retain."
    )


def test_knowledge_retention_with_nothing_to_retain_anywhere_is_unscored() -> None:
    chat = conversation(("user", "Hi!"), ("assistant", "Hello! How can I help?"))
    result = build_metric("knowledge_retention").measure(chat, ScriptedJudge([{"verdicts": ["nothing_to_retain"]}]))
    assert (result.score, result.passed) == (None, None)
    assert result.error is not None and "the user gave nothing to retain before turn 2" in result.error
    opening_only = conversation(("assistant", "Hello! How can I help?"), ("user", "Thanks."))
    judge = ScriptedJudge()
    result = build_metric("knowledge_retention").measure(opening_only, judge)
    assert result.error is not None and "no assistant turn follows a user turn" in result.error
    assert judge.requests == []


# --- turn_relevancy: one verdict per exchange, the window in exchanges (issue 25) ----------------------

def test_exchanges_group_the_users_turns_with_the_assistant_turns_that_answer_them() -> None:
    chat = conversation(("assistant", "Hi!"), ("user", "a"), ("user", "b"), ("assistant", "c"), ("assistant", "d"),
                        ("user", "e"), ("assistant", "f"), ("user", "unanswered"))
    assert exchanges(chat) == [ExchangeTurns(start=0, asked=[1, 2], reply=[3, 4]),
                               ExchangeTurns(start=5, asked=[5], reply=[6])]
    assert exchanges(conversation(("assistant", "Hi!"), ("user", "Bye."))) == []


def test_turn_relevancy_judges_a_reply_in_two_turns_once() -> None:
    # Issue 25: each of the two assistant turns was judged, so one reply had two votes.
    chat = conversation(("user", "Where is my order?"), ("assistant", "Let me check."), ("assistant", "It ships Monday."))
    judge = ScriptedJudge([{"verdict": "relevant"}])
    result = build_metric("turn_relevancy", {"include_reason": False}).measure(chat, judge)
    assert (result.error, result.score) == (None, 1.0)
    assert result.details["verdicts"] == [{"exchange": 1, "turn": 3, "reply": [2, 3], "verdict": "relevant"}]
    assert result.details["unjudged"] == []
    assert result.reason == "1 of 1 assistant replies are relevant to what the user said."
    (request,) = json_requests(judge)
    assert ("Task: judge the assistant's reply in turns 2, 3, to the user's turn 1, in the light of turns 1 to 3"
            in request.messages[1].content)


def test_turn_relevancy_reads_an_opening_assistant_turn_as_context_of_the_first_exchange() -> None:
    judge = ScriptedJudge([{"verdict": "irrelevant"}])
    result = build_metric("turn_relevancy", {"window_size": 1, "include_reason": False}).measure(ALLERGY, judge)
    assert (result.score, result.details["unjudged"]) == (0.0, [1])
    assert result.details["verdicts"] == [{"exchange": 1, "turn": 3, "reply": [3], "verdict": "irrelevant"}]
    (request,) = json_requests(judge)
    assert "reply in turn 3, to the user's turn 2, in the light of turns 1 to 3 (this exchange)," in (
        request.messages[1].content)


def test_turn_relevancy_window_counts_exchanges_the_judged_one_included() -> None:
    judge = ScriptedJudge([{"verdict": "relevant"}, {"verdict": "relevant"}, {"verdict": "irrelevant"}])
    result = build_metric("turn_relevancy", {"window_size": 2, "include_reason": False}).measure(CASE, judge)
    assert result.score == pytest.approx(2 / 3)
    assert [v["turn"] for v in result.details["verdicts"]] == [2, 4, 6]
    windows = [r.messages[1].content.split("in the light of ")[1].split(",")[0] for r in json_requests(judge)]
    assert windows == ["turns 1 to 2 (this exchange)", "turns 1 to 4 (this exchange and the 1 before it)",
                       "turns 3 to 6 (this exchange and the 1 before it)"]


def test_turn_relevancy_window_larger_than_the_conversation_starts_at_turn_1() -> None:
    judge = ScriptedJudge([{"verdict": "relevant"}] * 3)
    result = build_metric("turn_relevancy", {"window_size": 100, "include_reason": False}).measure(CASE, judge)
    assert (result.score, result.details["window_size"]) == (1.0, 100)
    last = json_requests(judge)[-1].messages[1].content
    assert "in the light of turns 1 to 6 (this exchange and the 2 before it)," in last


# --- system turns: context for the judge, never judged (issue 27) ------------------------------------

INSTRUCTIONS = "You are a cooking assistant for vegetarians. Never suggest meat."
LATER = "The user has just upgraded to the premium plan."
WITH_SYSTEM = conversation(
    ("system", INSTRUCTIONS), ("user", "Hi, I'm Ana."), ("assistant", "Hello Ana!"), ("user", "Dinner idea?"),
    ("assistant", "Try a steak."), ("system", LATER), ("user", "Thanks."), ("assistant", "The stock market rose."),
)
LABEL = "system message (the assistant's instructions: context, not a turn to judge)"


def test_the_transcript_shows_system_turns_in_place_labelled_as_the_assistants_instructions() -> None:
    shown = transcript(WITH_SYSTEM)
    assert shown.startswith(f"Turn 1, {LABEL}:\n{INSTRUCTIONS}\n\nTurn 2, user:\nHi, I'm Ana.\n\n")
    assert f"\n\nTurn 6, {LABEL}:\n{LATER}\n\nTurn 7, user:\nThanks.\n\n" in shown


def test_knowledge_retention_judges_only_assistant_turns_with_the_system_turns_as_context() -> None:
    judge = ScriptedJudge([{"verdicts": ["kept", "contradicted", "forgot"]}])
    result = build_metric("knowledge_retention", {"include_reason": False}).measure(WITH_SYSTEM, judge)
    assert result.score == pytest.approx(1 / 3)
    assert result.details["verdicts"] == [
        {"turn": 3, "verdict": "kept"}, {"turn": 5, "verdict": "contradicted"}, {"turn": 8, "verdict": "forgot"}]
    assert sum(result.details["counts"].values()) == 3 and result.details["unjudged"] == []
    (request,) = json_requests(judge)
    assert request.json_schema == verdicts_schema(3, ["kept", "forgot", "contradicted", "nothing_to_retain"])
    assert request.messages[1].content.startswith(f"Conversation:\nTurn 1, {LABEL}:\n{INSTRUCTIONS}\n")
    assert "For each of the assistant's turns 3, 5, 8, give one verdict" in request.messages[1].content


def test_role_adherence_takes_the_role_from_the_system_turns_when_no_chatbot_role_is_given() -> None:
    metric = RoleAdherence(include_reason=False)
    metric.check_case(WITH_SYSTEM)  # no chatbot_role, and no error: the system turns give the role
    judge = ScriptedJudge([{"verdicts": ["in_role", "out_of_role", "out_of_role"]}])
    result = metric.measure(WITH_SYSTEM, judge)
    assert result.score == pytest.approx(1 / 3) and result.details["counts"] == {"in_role": 1, "out_of_role": 2}
    assert result.reason == "1 of 3 assistant turns stay in the role."
    (request,) = json_requests(judge)
    assert "The assistant's role:\nthe one its system messages (turns 1, 6) give it\n" in request.messages[1].content
    assert "For each of the assistant's turns 3, 5, 8, give one verdict" in request.messages[1].content
    one = conversation(*((t.role, t.content) for t in WITH_SYSTEM.turns[:5]))
    assert "the one its system message (turn 1) gives it\n" in metric.first_prompt(one).messages[1].content
    given = one.model_copy(update={"chatbot_role": "a chef"})
    assert "The assistant's role:\na chef\n" in metric.first_prompt(given).messages[1].content


def test_turn_relevancy_puts_a_system_turn_in_the_next_exchanges_window_and_judges_no_system_turn() -> None:
    assert exchanges(WITH_SYSTEM) == [ExchangeTurns(start=0, asked=[1], reply=[2]),
                                      ExchangeTurns(start=3, asked=[3], reply=[4]),
                                      ExchangeTurns(start=5, asked=[6], reply=[7])]
    judge = ScriptedJudge([{"verdict": "relevant"}, {"verdict": "relevant"}, {"verdict": "irrelevant"}])
    result = build_metric("turn_relevancy", {"window_size": 1, "include_reason": False}).measure(WITH_SYSTEM, judge)
    assert result.score == pytest.approx(2 / 3) and [v["turn"] for v in result.details["verdicts"]] == [3, 5, 8]
    windows = [r.messages[1].content.split("in the light of ")[1].split(" (")[0] for r in json_requests(judge)]
    assert windows == ["turns 1 to 3", "turns 4 to 5", "turns 6 to 8"]


def test_every_conversational_metric_shows_the_judge_the_system_turns_labelled() -> None:
    for cls in CONVERSATIONAL_METRICS:
        _, request = first_request(cls.kind, WITH_SYSTEM)
        assert request.messages[1].content.startswith(f"Conversation:\n{transcript(WITH_SYSTEM)}\n")
        assert request.messages[1].content.count(LABEL) == 2
