"""A conversation in the HTML report: the transcript, each turn with the verdicts given on it beside it.

A result's evidence names the turns it judged by number, from 1:
``details["verdicts"] = [{"turn": 4, "verdict": "kept"}, ...]``.
Shapes are recognised, not metric kinds, so a new metric that records per-turn
verdicts this way shows beside the transcript too. A system turn (the assistant's
instructions) keeps its place and number, marked as context that no metric judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from localeval.data.results import MetricResult
from localeval.reports.evidence import tone
from localeval.reports.rules import turn_verdicts


def is_conversation(inputs: Mapping[str, Any]) -> bool:
    """Whether a case's recorded inputs are a conversation's."""
    return isinstance(inputs.get("turns"), list)


def verdicts_by_turn(results: Sequence[MetricResult]) -> dict[int, list[tuple[str, str]]]:
    """Per turn number: (metric, verdict) for every per-turn verdict in the results, in the results' order."""
    found: dict[int, list[tuple[str, str]]] = {}
    for result in results:
        for index, verdict in turn_verdicts(result):
            found.setdefault(index, []).append((result.metric, verdict))
    return found


def render_transcript(turns: list[Any], results: Sequence[MetricResult]) -> str:
    """The turns as an ordered list, user and assistant apart, each with its verdicts beside it."""
    verdicts = verdicts_by_turn(results)
    items = []
    for index, turn in enumerate(turns):
        turn = turn if isinstance(turn, Mapping) else {"role": "?", "content": str(turn)}
        role = str(turn.get("role", "?"))
        note = " · instructions, not judged" if role == "system" else ""
        chips = "".join(
            f'<li class="chip {tone(verdict)}" title="{escape(metric)}: {escape(verdict)}">'
            f'<span class="chip-metric">{escape(metric)}</span> {escape(verdict)}</li>'
            for metric, verdict in verdicts.get(index + 1, [])
        )
        items.append(
            f'<li class="turn {escape(role)}" data-turn="{index}"><div class="said">'
            f'<span class="role">{escape(role)} <small>#{index + 1}{note}</small></span>'
            f'<div class="text">{escape(str(turn.get("content", "")))}</div>{_extras(turn)}</div>'
            f'<ul class="turn-verdicts">{chips}</ul></li>'
        )
    return f'<ol class="transcript">{"".join(items)}</ol>'


def _extras(turn: Mapping[str, Any]) -> str:
    parts = []
    context = turn.get("retrieval_context")
    if isinstance(context, list) and context:
        listed = "".join(f"<li>{escape(str(item))}</li>" for item in context)
        parts.append(f'<details class="extra"><summary>retrieved ({len(context)})</summary><ul>{listed}</ul></details>')
    tools = turn.get("tools_called")
    if isinstance(tools, list) and tools:
        names = ", ".join(escape(str(t.get("name") if isinstance(t, Mapping) else t)) for t in tools)
        parts.append(f'<div class="extra tools">tools called: {names}</div>')
    return "".join(parts)
