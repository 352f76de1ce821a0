"""Test cases and goldens: what a metric judges."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
