"""What the six RAG metrics share: items to judge, verdict requests and bounded reply schemas.

Strict mode and the reason are the judged-metric base's (:mod:`localeval.metrics.judged`);
a RAG metric's reason continues the conversation of its verdicts request.

Every judge call is a :class:`JsonRequest` through ``judge.generate_json``, which
validates the reply against the schema and refuses a cut-off one. The schemas are
built so that a small model cannot go wrong in the ways deepeval's users report:

* a verdict list has exactly as many entries as there are items judged
  (``minItems == maxItems == N``), each one of the metric's enum values, so a
  length mismatch or a "yes." cannot reach the arithmetic;
* an extracted list (statements, claims, truths) has at most a few items of at
  most :data:`MAX_CHARS` characters, so a model that starts repeating itself has
  to stop, and ``max_tokens`` leaves room for the longest reply the schema allows
  at two characters a token.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from localeval.backends.base import Backend
from localeval.case import TestCase
from localeval.errors import BackendError, MetricInputError
from localeval.metrics.judged import Exchange, JudgedMetric, ask
from localeval.metrics.rag.sentences import split_sentences
from localeval.prompts import RenderedPrompt, load_prompt

#: The longest statement, claim or truth the judge may write.
MAX_CHARS = 200
#: What an output is judged by: its sentences, split by rules, or a list the judge writes first.
ItemSource = Literal["sentences", "extracted"]


def verdicts_schema(count: int, choices: Sequence[str]) -> dict[str, Any]:
    """``{"verdicts": [...]}``: exactly ``count`` verdicts, each one of ``choices``."""
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {"type": "string", "enum": list(choices)},
                "minItems": count,
                "maxItems": count,
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    }


def items_schema(key: str, max_items: int, max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """``{key: [...]}``: one to ``max_items`` non-empty strings of at most ``max_chars``."""
    return {
        "type": "object",
        "properties": {
            key: {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": max_chars},
                "minItems": 1,
                "maxItems": max_items,
            }
        },
        "required": [key],
        "additionalProperties": False,
    }


def verdicts_tokens(count: int) -> int:
    """Room for ``count`` verdicts with the separators a small model likes to write."""
    return 32 + 12 * count


def items_tokens(max_items: int, max_chars: int = MAX_CHARS) -> int:
    """Room for ``max_items`` strings of ``max_chars`` at two characters a token."""
    return 32 + max_items * (max_chars // 2 + 8)


def extract(judge: Backend, prompt: RenderedPrompt, key: str, max_items: int) -> tuple[list[str], int]:
    """The distinct strings the judge lists under ``key``, stripped, and how many it dropped.

    Blank strings and repeats are dropped, not judged: a small model that loops
    would otherwise weigh one statement many times. All blank is an error.
    """
    value = ask(judge, prompt, items_schema(key, max_items), items_tokens(max_items)).value
    written = [s.strip() for s in value[key] if s.strip()]
    if not written:
        raise BackendError(f"the judge listed no {key}, only blank strings")
    items = list(dict.fromkeys(written))
    return items, len(value[key]) - len(items)


def judge_verdicts(
    judge: Backend, prompt: RenderedPrompt, count: int, choices: Sequence[str]
) -> tuple[list[str], Exchange]:
    """One verdict per item judged, in the items' order, each one of ``choices``; and the call, which
    the reason continues."""
    reply = ask(judge, prompt, verdicts_schema(count, choices), verdicts_tokens(count))
    return list(reply.value["verdicts"]), Exchange(prompt, reply.text)


def tally(verdicts: Sequence[str], choices: Sequence[str]) -> dict[str, int]:
    """How many of each verdict, every choice listed (zeros included)."""
    return {c: sum(1 for v in verdicts if v == c) for c in choices}


class RagMetric(JudgedMetric):
    """Base of the RAG metrics: a judging step that ends with a verdicts request (see
    :class:`~localeval.metrics.judged.JudgedMetric` for strict mode and the reason).

    Subclasses set ``kind``, ``prompt_folder`` and implement ``judge_case``,
    returning the verdicts request as the judgement's ``conversation``.
    """

    def output_items(
        self, case: TestCase, judge: Backend, source: ItemSource, step: str, override: Path | None, max_items: int
    ) -> tuple[list[str], int]:
        """The distinct items the output is judged by, and how many blanks or repeats were dropped.

        ``source = "sentences"``: the output's sentences, split by rules, nothing
        generated. ``"extracted"``: what the judge lists under ``step`` (e.g.
        "claims") with that step's prompt, at most ``max_items``.
        """
        if source == "extracted":
            prompt = self.render(step, override, actual_output=case.actual_output, max_items=max_items)
            return extract(judge, prompt, step, max_items)
        written = split_sentences(case.actual_output or "")
        if not written:
            raise MetricInputError(self.display_name, "actual_output", "the output has no sentence to judge")
        items = list(dict.fromkeys(written))
        return items, len(written) - len(items)

    def render(self, step: str, override: Path | None, **variables: Any) -> RenderedPrompt:
        """This metric's prompt for ``step`` (e.g. "verdicts"), or the user's file instead."""
        return load_prompt(f"{self.prompt_folder}/{step}", override).render(**variables)
