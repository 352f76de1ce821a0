"""What the agentic metrics share: which tool fields may be empty, and tool calls as prompts show them."""

from __future__ import annotations

import json
from typing import Any

from localeval.data.case import ToolCall

#: Fields where an empty list is a meaningful value ("no tool was called / expected"), unlike an absent one:
#: the agentic metrics' ``empty_allowed``.
TOOL_FIELDS: tuple[str, ...] = ("tools_called", "expected_tools")
#: The most characters of a tool's output a prompt shows; the rest is cut, and the cut is marked.
MAX_OUTPUT_CHARS = 600


def json_text(value: Any, limit: int | None = None) -> str:
    """A value as compact JSON (strings quoted), cut to ``limit`` characters with a marker of what was cut."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if limit is not None and len(text) > limit:
        return f"{text[:limit]}… [{len(text) - limit} more characters]"
    return text


def call_views(calls: list[ToolCall], max_output_chars: int = MAX_OUTPUT_CHARS) -> list[dict[str, str]]:
    """Tool calls as the prompts show them: name, description, arguments and output as JSON text ("" when absent)."""
    return [
        {
            "name": call.name,
            "description": call.description or "",
            "arguments": json_text(call.input_parameters or {}),
            "output": "" if call.output is None else json_text(call.output, max_output_chars),
        }
        for call in calls
    ]
