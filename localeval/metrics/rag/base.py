"""What the six RAG metrics share: strict mode, the reason step, and bounded reply schemas.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from localeval.backends.base import Backend, JsonRequest
from localeval.case import TestCase
from localeval.errors import BackendError, MetricInputError, PromptError
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.judged import REASON_SCHEMA, REASON_TOKENS, strict_requested
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


def ask(judge: Backend, prompt: RenderedPrompt, schema: dict[str, Any], max_tokens: int) -> Any:
    """The judge's reply to ``prompt`` as JSON conforming to ``schema`` (validated by the backend)."""
    request = JsonRequest(messages=prompt.messages, json_schema=schema, max_tokens=max_tokens)
    return judge.generate_json(request).value


def extract(judge: Backend, prompt: RenderedPrompt, key: str, max_items: int) -> tuple[list[str], int]:
    """The distinct strings the judge lists under ``key``, stripped, and how many it dropped.

    Blank strings and repeats are dropped, not judged: a small model that loops
    would otherwise weigh one statement many times. All blank is an error.
    """
    value = ask(judge, prompt, items_schema(key, max_items), items_tokens(max_items))
    written = [s.strip() for s in value[key] if s.strip()]
    if not written:
        raise BackendError(f"the judge listed no {key}, only blank strings")
    items = list(dict.fromkeys(written))
    return items, len(value[key]) - len(items)


def judge_verdicts(judge: Backend, prompt: RenderedPrompt, count: int, choices: Sequence[str]) -> list[str]:
    """One verdict per item judged, in the items' order, each one of ``choices``."""
    value = ask(judge, prompt, verdicts_schema(count, choices), verdicts_tokens(count))
    return list(value["verdicts"])


def tally(verdicts: Sequence[str], choices: Sequence[str]) -> dict[str, int]:
    """How many of each verdict, every choice listed (zeros included)."""
    return {c: sum(1 for v in verdicts if v == c) for c in choices}


def format_score(score: float) -> str:
    """A score as the reason prompt shows it: 0.75, 1, 0.33."""
    return f"{score:.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Judgement:
    """What a RAG metric's judging step found, before strict mode and the reason.

    ``score`` is the metric's formula; ``summary`` is the reason when none is
    generated; ``details`` is the evidence; ``reason_variables`` is what the
    reason prompt sees besides the score.
    """

    score: float
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    reason_variables: dict[str, Any] = field(default_factory=dict)


class RagMetric(Metric):
    """Base of the RAG metrics: a judging step, then strict mode, then an optional reason.

    Subclasses set ``kind``, ``prompt_folder`` and implement ``judge_case``.
    ``strict_mode`` makes the score binary: 1.0 only when the formula gives a
    perfect 1.0, else 0.0, with threshold 1.0. For a metric where lower is better
    (hallucination) it is the mirror image: 0.0 only when the formula gives 0.0,
    else 1.0, with threshold 0.0. ``details["raw_score"]`` keeps the formula's value.
    """

    needs_judge = True
    #: The folder under prompts/ with this metric's prompt files.
    prompt_folder: ClassVar[str]

    include_reason: bool = Field(True, description="Have the judge explain the score, after scoring.")
    strict_mode: bool = Field(False, description="Binary: only a perfect score counts; sets the threshold.")
    reason_prompt: Path | None = Field(None, description="Your own prompt file for the reason.")

    @model_validator(mode="before")
    @classmethod
    def _strict(cls, data: Any) -> Any:
        return {**data, "threshold": 0.0 if cls.lower_is_better else 1.0} if strict_requested(data) else data

    def judge_case(self, case: TestCase, judge: Backend) -> Judgement:
        raise NotImplementedError

    def verdict(self, case: TestCase, judge: Backend | None) -> Verdict:
        if judge is None:
            raise BackendError(f"metric '{self.display_name}' needs a judge backend")
        judged = self.judge_case(case, judge)
        details: dict[str, Any] = {"raw_score": judged.score, **judged.details}
        reason = judged.summary
        if self.include_reason:
            try:
                reason = self._reason(judge, judged)
            except (BackendError, PromptError) as err:  # the score stands; say why the reason is missing
                details["reason_error"] = f"{type(err).__name__}: {err}"
        return Verdict(score=self._final_score(judged.score), reason=reason, details=details)

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

    def _final_score(self, raw: float) -> float:
        if not self.strict_mode:
            return raw
        if self.lower_is_better:
            return 0.0 if raw == 0.0 else 1.0
        return 1.0 if raw == 1.0 else 0.0

    def _reason(self, judge: Backend, judged: Judgement) -> str:
        prompt = self.render("reason", self.reason_prompt, score=format_score(judged.score), **judged.reason_variables)
        reason = str(ask(judge, prompt, REASON_SCHEMA, REASON_TOKENS)["reason"]).strip()
        if not reason:
            raise BackendError("the judge wrote a blank reason")
        return reason
