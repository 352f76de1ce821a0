"""Conversations as people log them: system turns, OpenAI-style ``messages``, and ``fields`` inside turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from command_line import Project

from localeval.data.case import ConversationalTestCase, ToolCall, Turn
from localeval.data.dataset import Dataset
from localeval.errors import DatasetError

SYSTEM = {"role": "system", "content": "You are a booking assistant. Never book past 22:00."}
USER = {"role": "user", "content": "A table for two at 23:00?"}
ASSISTANT = {"role": "assistant", "content": "Sorry, we book until 22:00."}


def jsonl(path: Path, *records: Any) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def load(tmp_path: Path, *records: Any, **options: Any) -> list[ConversationalTestCase]:
    cases = Dataset.load(jsonl(tmp_path / "chats.jsonl", *records), **options).cases
    assert all(isinstance(c, ConversationalTestCase) for c in cases)
    return cases  # type: ignore[return-value]


def error(path: Path, **options: Any) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        Dataset.load(path, **options)
    assert "\n" not in str(info.value)
    return info.value


# --- system turns ------------------------------------------------------------------------------

def test_system_turns_are_kept_in_place_and_saved_back(tmp_path: Path) -> None:
    later = {"role": "system", "content": "The kitchen closes early today."}
    (case,) = load(tmp_path, {"turns": [SYSTEM, USER, ASSISTANT, later, USER, ASSISTANT]})
    assert [t.role for t in case.turns] == ["system", "user", "assistant", "system", "user", "assistant"]
    assert (case.system_turns, case.assistant_turns) == ([0, 3], [2, 5])
    case_file = tmp_path / "back.jsonl"
    Dataset.from_cases([case]).save(case_file)
    assert Dataset.load(case_file).cases == [case]


def test_a_system_turn_holds_no_tool_calls_or_retrieval_context(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "chats.jsonl", {"turns": [{**SYSTEM, "tools_called": ["lookup"]}, USER, ASSISTANT]})
    err = error(path)
    assert (err.line, err.field) == (1, "turns[0]")
    assert err.detail == "tools_called belongs on assistant turns; this turn's role is 'system'"


# --- OpenAI-style messages -----------------------------------------------------------------------

CALL = {"id": "call_1", "type": "function", "function": {"name": "find_table", "arguments": '{"time": "21:30"}'}}
MESSAGES = [
    {"role": "developer", "content": [{"type": "text", "text": "Book tables."}, {"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": [{"type": "text", "text": "Anything at 21:30?"}], "name": "ana"},
    {"role": "assistant", "content": None, "tool_calls": [CALL], "refusal": None, "annotations": []},
    {"role": "tool", "tool_call_id": "call_1", "content": "free: table 4"},
    {"role": "assistant", "content": "Table 4 is free at 21:30."},
    {"role": "user", "content": "Book it."},
    {"role": "assistant", "content": "Booking.", "tool_calls": [
        {**CALL, "id": "call_2", "function": {"name": "book", "arguments": {"table": 4}}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "ok"}]},
]


def test_openai_messages_map_to_turns_with_tool_calls_in_the_turns_tools_called(tmp_path: Path) -> None:
    (case,) = load(tmp_path, {"messages": MESSAGES, "name": "booking", "scenario": "a booking"})
    assert case.turns == [
        Turn(role="system", content="Book tables.\nBe brief."),
        Turn(role="user", content="Anything at 21:30?"),
        # The tool-calling message and the tool's answer belong to the reply they led to.
        Turn(role="assistant", content="Table 4 is free at 21:30.",
             tools_called=[ToolCall(name="find_table", input_parameters={"time": "21:30"}, output="free: table 4")]),
        Turn(role="user", content="Book it."),
        Turn(role="assistant", content="Booking.",
             tools_called=[ToolCall(name="book", input_parameters={"table": 4}, output="ok")]),
    ]
    assert (case.name, case.scenario) == ("booking", "a booking")


def test_tool_calls_no_reply_followed_are_an_assistant_turn_of_their_own(tmp_path: Path) -> None:
    messages = [USER, {"role": "assistant", "content": "", "tool_calls": [CALL]}, USER, ASSISTANT,
                {"role": "assistant", "tool_calls": [{**CALL, "id": "call_9"}]}]
    (case,) = load(tmp_path, {"messages": messages})
    called = [ToolCall(name="find_table", input_parameters={"time": "21:30"})]
    assert [(t.role, t.content, t.tools_called) for t in case.turns] == [
        ("user", USER["content"], None), ("assistant", "", called), ("user", USER["content"], None),
        ("assistant", ASSISTANT["content"], None), ("assistant", "", called)]


def test_a_file_may_mix_both_shapes_and_map_the_messages_key(tmp_path: Path) -> None:
    cases = load(tmp_path, {"turns": [USER, ASSISTANT]}, {"log": [SYSTEM, USER, ASSISTANT]}, fields={"log": "messages"})
    assert [len(c.turns) for c in cases] == [2, 3] and cases[1].turns[0].role == "system"


def test_messages_beside_an_input_are_a_single_turn_cases_as_before(tmp_path: Path) -> None:
    (case,) = Dataset.load(jsonl(tmp_path / "c.jsonl", {"input": "q", "messages": [USER]}), unknown_fields="metadata").cases
    assert not isinstance(case, ConversationalTestCase) and case.metadata == {"messages": [USER]}


BAD_MESSAGES: dict[str, tuple[Any, str, str]] = {
    "an image part": ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
                      "messages[2].content[0]", "image parts are not supported: the judge reads text"),
    "an audio part": ({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "input_audio"}]},
                      "messages[2].content[1]", "audio parts are not supported: the judge reads text"),
    "a part of no known type": ({"role": "user", "content": [{"type": "video"}]}, "messages[2].content[0]",
                                "'video' parts are not supported: only text parts (\"type\": \"text\")"),
    "a text part without text": ({"role": "user", "content": [{"type": "text"}]}, "messages[2].content[0].text",
                                 "must be a string, got null"),
    "content a number": ({"role": "user", "content": 3}, "messages[2].content",
                         "must be a string or a list of content parts, got a number"),
    "a user message without content": ({"role": "user"}, "messages[2].content",
                                       "required: a user message needs content"),
    "an unknown role": ({"role": "function", "content": "x"}, "messages[2].role",
                        "must be 'system', 'developer', 'user', 'assistant' or 'tool'; got 'function'"),
    "an unknown key": ({**USER, "timestamp": 5}, "messages[2].timestamp", "not a key of a chat message"),
    "audio in a reply": ({**ASSISTANT, "audio": {"id": "a"}}, "messages[2].audio", "audio replies are not supported"),
    "tool calls on a user message": ({**USER, "tool_calls": [CALL]}, "messages[2].tool_calls",
                                     "belongs on assistant messages; this message's role is 'user'"),
    "an answer to no call": ({"role": "tool", "tool_call_id": "call_7", "content": "x"}, "messages[2].tool_call_id",
                             "no earlier assistant message has a tool call with id 'call_7'"),
    "arguments not JSON": ({"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "{"}}]},
                           "messages[2].tool_calls[0].function.arguments", "invalid JSON: Expecting property name"),
    "arguments not an object": ({"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": "[1]"}}]},
                                "messages[2].tool_calls[0].function.arguments",
                                "must be a JSON object, or a string holding one; got a list"),
    "a call without a name": ({"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]},
                              "messages[2].tool_calls[0].function.name", "required: the function's name"),
    "a custom tool call": ({"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]},
                           "messages[2].tool_calls[0].type", "only function tool calls are supported, got 'custom'"),
    "no assistant message": ("drop the assistant", "messages", "no turn has role 'assistant'"),
}


@pytest.mark.parametrize("message, field, detail", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
def test_a_bad_message_is_one_line_naming_the_line_and_its_path(tmp_path: Path, message: Any, field: str,
                                                                 detail: str) -> None:
    messages = [SYSTEM, USER] if message == "drop the assistant" else [SYSTEM, USER, message, ASSISTANT]
    path = jsonl(tmp_path / "data.jsonl", {"messages": [USER, ASSISTANT]}, {"turns": [USER, ASSISTANT]},
                 {"messages": messages})
    err = error(path)
    assert (err.path, err.line, err.field) == (str(path), 3, field)
    assert detail in err.detail and str(err).startswith(f"{path}:3: field '{field}': {detail}")


def test_a_bad_message_is_named_by_the_files_own_key(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "data.jsonl", {"log": [USER, {"role": "user", "content": [{"type": "image_url"}]}, ASSISTANT]})
    assert str(error(path, fields={"log": "messages"})) == (
        f"{path}:1: field 'log[1].content[0]': image parts are not supported: the judge reads text")


def test_unknown_keys_of_messages_and_turns_are_dropped_when_asked(tmp_path: Path) -> None:
    messages = [{**USER, "timestamp": 1}, {**ASSISTANT, "id": "m2"}]
    turns = [{**USER, "at": "09:00"}, ASSISTANT]
    cases = load(tmp_path, {"messages": messages}, {"turns": turns}, unknown_fields="ignore")
    assert cases[0].turns == cases[1].turns == [Turn.model_validate(USER), Turn.model_validate(ASSISTANT)]


# --- fields inside turns --------------------------------------------------------------------------

DIALOG = {"dialog": [{"speaker": "human", "text": "A table at 23:00?"}, {"speaker": "bot", "text": "We close at 22:00."}],
          "persona": "a booking assistant"}
SPELLING = {"dialog": "turns", "persona": "chatbot_role", "speaker": "turns.role", "text": "turns.content",
            "bot": "turns.role=assistant", "human": "turns.role=user"}


def test_fields_rename_keys_and_roles_inside_turns(tmp_path: Path) -> None:
    (case,) = load(tmp_path, DIALOG, fields=SPELLING)
    assert case.turns == [Turn(role="user", content="A table at 23:00?"), Turn(role="assistant", content="We close at 22:00.")]
    assert case.chatbot_role == "a booking assistant"


BAD_DIALOGS: dict[str, tuple[Any, dict[str, str], str, str]] = {
    "a role not mapped": ({"speaker": "robot", "text": "x"}, SPELLING, "dialog[1].speaker",
                          "Input should be 'user', 'assistant' or 'system', got 'robot' "
                          "(map a role of your own with fields, e.g. robot = \"turns.role=assistant\")"),
    "content missing": ({"speaker": "bot"}, SPELLING, "dialog[1].text", "Field required"),
    "a key not mapped": ({"speaker": "bot", "text": "x", "when": "9:00"}, SPELLING, "dialog[1].when",
                         "not a turn field (role, content, retrieval_context, tools_called); map it with fields "
                         "(when = \"turns.FIELD\")"),
    "two keys for one field": ({"speaker": "bot", "text": "x", "content": "y"}, SPELLING, "dialog[1]",
                               "both 'text' and 'content' give this turn's content"),
    "a mapped field on the wrong turn": ({"speaker": "human", "text": "x", "docs": ["d"]},
                                         {**SPELLING, "docs": "turns.retrieval_context"}, "dialog[1]",
                                         "retrieval_context belongs on assistant turns; this turn's role is 'user'"),
}


@pytest.mark.parametrize("turn, fields, field, detail", BAD_DIALOGS.values(), ids=BAD_DIALOGS.keys())
def test_a_bad_mapped_turn_is_named_by_the_files_own_path(tmp_path: Path, turn: Any, fields: dict[str, str],
                                                          field: str, detail: str) -> None:
    path = jsonl(tmp_path / "data.jsonl", DIALOG, {"dialog": [DIALOG["dialog"][0], turn]})
    err = error(path, fields=fields)
    assert (err.line, err.field) == (2, field)
    assert detail in err.detail


@pytest.mark.parametrize("target, detail", [
    ("turns.speaker", "not a turn field (role, content, retrieval_context, tools_called)"),
    ("turns.role=bot", "a role is 'user', 'assistant', 'system', not 'bot'"),
    ("turns.content=x", "only roles map to values: turns.role=ROLE"),
])
def test_a_bad_target_inside_turns_is_refused_before_the_file_is_read(tmp_path: Path, target: str, detail: str) -> None:
    err = error(tmp_path / "absent.jsonl", fields={"who": target})
    assert (err.line, err.field, err.detail) == (None, target, f"fields maps 'who' here: {detail}")


def test_the_command_line_maps_inside_turns_and_names_a_bad_turn_in_one_line(project: Project) -> None:
    second = {"dialog": [DIALOG["dialog"][0], {"speaker": "bot", "text": "x", "when": "9:00"}], "persona": "p"}
    jsonl(project / "chats.jsonl", DIALOG, second)
    maps = [f"--map={k}={v}" for k, v in SPELLING.items()]
    result = project.localeval("run", "chats.jsonl", "-m", "role_adherence", *maps)
    assert result.returncode == 2, (result.stdout, result.stderr)
    # The first record read with every mapping; the second's unmapped key is named as the file spells it.
    assert result.stderr.splitlines() == [
        "error: chats.jsonl:2: field 'dialog[1].when': not a turn field (role, content, retrieval_context, "
        "tools_called); map it with fields (when = \"turns.FIELD\") or drop unknown keys with unknown_fields = 'ignore'"]
