"""Conversations as test cases: loading, the one-line errors, saving back, and the case-kind check of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localeval.data.case import ConversationalTestCase, TestCase, ToolCall, Turn
from localeval.data.dataset import Dataset
from localeval.errors import DatasetError
from localeval.metrics import ExactMatch, build_metric
from localeval.run.runner import check_inputs, evaluate
from localeval.testing import ScriptedJudge

TURNS = [
    {"role": "user", "content": "I'm Ana; book me a table for two on Friday."},
    {"role": "assistant", "content": "Done: Friday, two people.", "tools_called": ["book_table"],
     "retrieval_context": ["Tables seat two or four."]},
]
CONVERSATION = {"turns": TURNS, "chatbot_role": "a restaurant's booking assistant", "scenario": "booking",
                "expected_outcome": "a table is booked", "user_description": "a regular", "name": "booking",
                "tags": ["happy"], "metadata": {"source": "hand"}}


def jsonl(path: Path, *records: Any) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def error(path: Path, **options: Any) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        Dataset.load(path, **options)
    return info.value


def test_a_jsonl_file_of_conversations_loads_every_field(tmp_path: Path) -> None:
    dataset = Dataset.load(jsonl(tmp_path / "c.jsonl", CONVERSATION, {"turns": TURNS}))
    assert dataset.conversational and dataset.locations == [f"{tmp_path}/c.jsonl:1", f"{tmp_path}/c.jsonl:2"]
    first = dataset.cases[0]
    assert isinstance(first, ConversationalTestCase)
    assert first.turns[1] == Turn(role="assistant", content="Done: Friday, two people.",
                                  tools_called=[ToolCall(name="book_table")],
                                  retrieval_context=["Tables seat two or four."])
    assert (first.chatbot_role, first.scenario, first.expected_outcome, first.user_description) == (
        "a restaurant's booking assistant", "booking", "a table is booked", "a regular")
    assert (first.name, first.tags, first.metadata) == ("booking", ["happy"], {"source": "hand"})
    assert first.assistant_turns == [1]


def test_a_json_list_of_conversations_loads_with_the_line_each_starts_on(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    text = json.dumps([CONVERSATION, {"turns": TURNS}], indent=2)
    path.write_text(text, encoding="utf-8")
    starts = [str(n) for n, line in enumerate(text.splitlines(), start=1) if line == "  {"]
    dataset = Dataset.load(path)
    assert [loc.rsplit(":", 1)[1] for loc in dataset.locations] == starts == ["2", "31"]
    assert dataset.conversational


def test_keys_are_mapped_and_unknown_ones_kept_in_metadata(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"messages": TURNS, "persona": "a booking assistant", "team": "x"})
    case = Dataset.load(path, fields={"messages": "turns", "persona": "chatbot_role"}, unknown_fields="metadata").cases[0]
    assert isinstance(case, ConversationalTestCase)
    assert (case.chatbot_role, case.metadata, len(case.turns)) == ("a booking assistant", {"team": "x"}, 2)


def test_saving_and_loading_gives_back_equal_conversations(tmp_path: Path) -> None:
    original = Dataset.load(jsonl(tmp_path / "c.jsonl", CONVERSATION, {"turns": TURNS}))
    for name in ("back.jsonl", "back.json"):
        original.save(tmp_path / name)
        assert Dataset.load(tmp_path / name).cases == original.cases
    assert json.loads((tmp_path / "back.jsonl").read_text().splitlines()[1]) == {"turns": [
        {"role": "user", "content": TURNS[0]["content"]},
        {"role": "assistant", "content": TURNS[1]["content"], "retrieval_context": ["Tables seat two or four."],
         "tools_called": [{"name": "book_table"}]}]}
    with pytest.raises(DatasetError, match="CSV cannot hold conversations; save as JSONL or JSON"):
        original.save(tmp_path / "back.csv")


BAD: dict[str, tuple[Any, str, str]] = {
    "unknown role": ({"turns": [{"role": "bot", "content": "hi"}]}, "turns[0].role",
                     "Input should be 'user', 'assistant' or 'system', got 'bot' "
                     "(map a role of your own with fields, e.g. bot = \"turns.role=assistant\")"),
    "empty turns": ({"turns": []}, "turns", "a conversation needs at least one turn"),
    "no assistant turn": ({"turns": [TURNS[0]]}, "turns", "no turn has role 'assistant': there is nothing to judge"),
    "turns not a list": ({"turns": "hello"}, "turns", "must be a list of turns"),
    "turn not an object": ({"turns": [TURNS[0], "hi"]}, "turns[1]", "must be an object with role and content, got a string"),
    "no content": ({"turns": [{"role": "assistant"}]}, "turns[0].content", "Field required"),
    "tools_called not a list": ({"turns": [{**TURNS[1], "tools_called": "book"}]}, "turns[0].tools_called",
                                "must be a list of tool names or tool objects ({\"name\": ...}): Input should be a valid list"),
    "tool neither name nor object": ({"turns": [{**TURNS[1], "tools_called": [3]}]}, "turns[0].tools_called[0]",
                                     "must be a list of tool names or tool objects ({\"name\": ...}): Input should be a "
                                     "valid dictionary or instance of ToolCall"),
    "tool without a name": ({"turns": [{**TURNS[1], "tools_called": [{"input_parameters": {}}]}]},
                            "turns[0].tools_called[0].name", "Field required"),
    "unknown turn key": ({"turns": [{**TURNS[1], "speaker": "x"}]}, "turns[0].speaker",
                         "not a turn field (role, content, retrieval_context, tools_called); map it with fields "
                         "(speaker = \"turns.FIELD\") or drop unknown keys with unknown_fields = 'ignore'"),
    "context on a user turn": ({"turns": [{**TURNS[0], "retrieval_context": ["x"]}, TURNS[1]]}, "turns[0]",
                               "retrieval_context belongs on assistant turns; this turn's role is 'user'"),
    "a single-turn record among conversations": ({"input": "q"}, "input", "not a conversation field"),
}


@pytest.mark.parametrize("record, field, message", BAD.values(), ids=BAD.keys())
def test_a_bad_conversation_is_one_line_naming_file_line_and_field(
    tmp_path: Path, record: Any, field: str, message: str
) -> None:
    path = jsonl(tmp_path / "cases.jsonl", CONVERSATION, {"turns": TURNS}, record)
    err = error(path)
    assert (err.path, err.line, err.field) == (str(path), 3, field)
    assert message in err.detail
    assert "\n" not in str(err) and str(err).startswith(f"{path}:3: field '{field}': ")


def test_a_record_without_turns_in_a_file_of_conversations_names_turns(tmp_path: Path) -> None:
    err = error(jsonl(tmp_path / "c.jsonl", CONVERSATION, {"name": "x"}))
    assert (err.line, err.field) == (2, "turns")
    assert "this file holds conversations (its first record has turns or messages)" in err.detail


def test_a_conversation_in_a_file_of_single_turn_cases_is_an_error(tmp_path: Path) -> None:
    err = error(jsonl(tmp_path / "c.jsonl", {"input": "q", "actual_output": "a"}, CONVERSATION))
    assert (err.line, err.field) == (2, "turns")
    assert "this file holds single-turn test cases" in err.detail


def test_a_dataset_in_code_holds_one_kind() -> None:
    with pytest.raises(DatasetError, match="single-turn test cases or conversations, not both"):
        Dataset.from_cases([TestCase(input="q"), ConversationalTestCase.model_validate({"turns": TURNS})])


def test_a_metric_of_the_other_kind_is_an_error_before_any_judge_call(tmp_path: Path) -> None:
    conversations = Dataset.load(jsonl(tmp_path / "cases.jsonl", CONVERSATION))
    judge = ScriptedJudge()
    with pytest.raises(DatasetError) as info:
        evaluate(conversations, [build_metric("role_adherence"), ExactMatch()], judge)
    assert str(info.value) == (
        f"{tmp_path}/cases.jsonl:1: field 'input': metric 'exact_match' judges single-turn test cases, "
        "and this dataset holds conversations"
    )
    single = Dataset.load(jsonl(tmp_path / "single.jsonl", {"input": "q", "actual_output": "a"}))
    with pytest.raises(DatasetError) as info:
        check_inputs(single, [build_metric("knowledge_retention")])
    assert str(info.value) == (
        f"{tmp_path}/single.jsonl:1: field 'turns': metric 'knowledge_retention' judges conversations, "
        "and this dataset holds single-turn test cases"
    )
    assert judge.requests == []


def test_a_missing_conversation_field_a_metric_needs_is_named(tmp_path: Path) -> None:
    dataset = Dataset.load(jsonl(tmp_path / "cases.jsonl", {"turns": TURNS}))
    with pytest.raises(DatasetError) as info:
        check_inputs(dataset, [build_metric("role_adherence")])
    assert str(info.value) == (f"{tmp_path}/cases.jsonl:1: field 'chatbot_role': metric 'role_adherence' needs it, "
                               "or a system turn that gives the role, and the conversation has neither")


def test_measure_on_the_other_kind_is_an_error_result_not_an_exception() -> None:
    result = build_metric("turn_relevancy").measure(TestCase(input="q", actual_output="a"), ScriptedJudge())
    assert result.error == "MetricInputError: metric 'turn_relevancy' judges conversations, not single-turn test cases"
