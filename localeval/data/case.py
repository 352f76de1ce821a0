"""Test cases, goldens and conversations: what a metric judges."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class ToolCall(BaseModel):
    """A tool an LLM application called, or was expected to call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str | None = None
    input_parameters: dict[str, Any] | None = None
    output: Any = None


def _tools(value: Any) -> Any:
    # A bare name is the common case in CSV files and hand-written JSONL.
    if isinstance(value, list):
        return [{"name": v} if isinstance(v, str) else v for v in value]
    return value


class Golden(BaseModel):
    """A test case before the application under test has produced its output."""

    __test__: ClassVar[bool] = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str = Field(description="What the application under test was given.")
    expected_output: str | None = Field(None, description="The ideal output, if known.")
    context: list[str] | None = Field(None, description="Ground-truth facts for the input.")
    retrieval_context: list[str] | None = Field(
        None, description="What the application retrieved, in rank order."
    )
    expected_tools: list[ToolCall] | None = None
    name: str | None = Field(None, description="A short identifier shown in reports.")
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    _normalize_tools = field_validator("expected_tools", mode="before")(_tools)

    def with_output(self, actual_output: str, **fields: Any) -> TestCase:
        """The test case made from this golden and the application's output."""
        return TestCase(**self.model_dump(), actual_output=actual_output, **fields)


class TestCase(Golden):
    """One input/output pair of the application under test, with what a metric may need."""

    actual_output: str | None = Field(None, description="What the application produced.")
    tools_called: list[ToolCall] | None = None
    contestants: dict[str, str] | None = Field(
        None, description="Outputs for the same input by name, for pairwise comparison (the arena)."
    )

    _normalize_called = field_validator("tools_called", mode="before")(_tools)

    @field_validator("contestants")
    @classmethod
    def _two_contestants(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None:
            if len(value) < 2:
                raise ValueError(f"needs at least two contestants to compare, got {len(value)}")
            if any(not name.strip() for name in value):
                raise ValueError("a contestant's name must not be blank")
        return value

    def field_value(self, field: str) -> Any:
        """The value of a field by name; ``KeyError`` for a name that is not a field."""
        if field not in type(self).model_fields:
            raise KeyError(field)
        return getattr(self, field)


CASE_FIELDS: tuple[str, ...] = tuple(TestCase.model_fields)
LIST_FIELDS: tuple[str, ...] = (
    "context",
    "retrieval_context",
    "tools_called",
    "expected_tools",
    "tags",
)


# -- conversations ---------------------------------------------------------------------

Role = Literal["user", "assistant", "system"]
ROLES: tuple[str, ...] = ("user", "assistant", "system")


class Turn(BaseModel):
    """One message of a conversation: who spoke, what they said, and, for the assistant, how it got there.

    A ``system`` turn is an instruction the assistant was given (its system prompt, or one sent later):
    the metrics show it to the judge as context and never judge it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role = Field(description="'user', 'assistant', or 'system' (instructions to the assistant: context, not judged).")
    content: str = Field(description="What was said.")
    retrieval_context: list[str] | None = Field(
        None, description="What the assistant retrieved for this turn (assistant turns only)."
    )
    tools_called: list[ToolCall] | None = Field(None, description="Tools the assistant called for this turn.")

    _normalize_called = field_validator("tools_called", mode="before")(_tools)

    @model_validator(mode="after")
    def _assistant_only(self) -> Turn:
        for name in ("retrieval_context", "tools_called"):
            if self.role != "assistant" and getattr(self, name) is not None:
                raise ValueError(f"{name} belongs on assistant turns; this turn's role is {self.role!r}")
        return self


class ConversationalTestCase(BaseModel):
    """A whole conversation between a user and the application under test, judged as one case."""

    __test__: ClassVar[bool] = False  # not a pytest test class
    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: list[Turn] = Field(description="The messages in order; at least one from the assistant.")
    chatbot_role: str | None = Field(None, description="The role the assistant was to play (role_adherence).")
    scenario: str | None = Field(None, description="The situation the conversation happens in.")
    expected_outcome: str | None = Field(None, description="How the conversation should end.")
    user_description: str | None = Field(None, description="Who the user is.")
    name: str | None = Field(None, description="A short identifier shown in reports.")
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("turns")
    @classmethod
    def _has_assistant(cls, turns: list[Turn]) -> list[Turn]:
        if not turns:
            raise ValueError("a conversation needs at least one turn")
        if not any(turn.role == "assistant" for turn in turns):
            raise ValueError("no turn has role 'assistant': there is nothing to judge")
        return turns

    def field_value(self, field: str) -> Any:
        """The value of a field by name; ``KeyError`` for a name that is not a field."""
        if field not in type(self).model_fields:
            raise KeyError(field)
        return getattr(self, field)

    @property
    def assistant_turns(self) -> list[int]:
        """The indices (in ``turns``) of the assistant's turns."""
        return [i for i, turn in enumerate(self.turns) if turn.role == "assistant"]

    @property
    def system_turns(self) -> list[int]:
        """The indices (in ``turns``) of the system turns: the assistant's instructions, context for the judge."""
        return [i for i, turn in enumerate(self.turns) if turn.role == "system"]


#: A case of either kind: a dataset holds one kind, a metric judges one kind (``Metric.case_type``).
Case = TestCase | ConversationalTestCase
CONVERSATION_FIELDS: tuple[str, ...] = tuple(ConversationalTestCase.model_fields)
TURN_FIELDS: tuple[str, ...] = tuple(Turn.model_fields)
