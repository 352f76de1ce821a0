"""What every metric that asks a judge shares: strict mode, the reason step, JSON requests.

A judged metric scores a case in two parts, run by :meth:`JudgedMetric.verdict`:

1. its scoring step, :meth:`JudgedMetric.judge_case`, asks the judge whatever
   the metric needs and returns a :class:`Judgement`: the raw score, a summary,
   the evidence, the last judge call (an :class:`Exchange`) and the variables of
   the reason prompt;
2. with ``include_reason``, the judge explains the score *after* scoring, told
   the raw score, so the score never depends on the reason. The reason is a
   follow-up turn of the last scoring call's conversation
   (:meth:`RenderedPrompt.continued`): a judge that keeps the state of its last
   prompt (llama.cpp in-process, its server, Ollama) reads only the question,
   not the case again. A scoring step that made no judge call has no
   conversation to continue; the reason prompt is then sent on its own, as a
   fresh request. If the reason fails, the score stands and
   ``details["reason_error"]`` says why; the reason is then the summary.

A new judged metric sets ``kind`` and ``prompt_folder`` (the folder under
``prompts/`` holding its ``reason.txt``: a follow-up question, user messages
only, rendered with ``score`` and the judgement's ``reason_variables``) and
implements ``judge_case``. It may override :meth:`JudgedMetric.final_score`
(how the raw score becomes the result's score), :meth:`JudgedMetric.strict_options`
(what strict mode sets), ``reason_schema`` and ``reason_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from localeval.backends.base import Backend, JsonReply, JsonRequest
from localeval.errors import BackendError, PromptError
from localeval.metrics.base import Metric, Verdict
from localeval.metrics.reasons import cut_loop
from localeval.prompts import RenderedPrompt, load_prompt

REASON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string", "minLength": 1, "maxLength": 400}},
    "required": ["reason"],
    "additionalProperties": False,
}
#: Tokens for a reason: REASON_SCHEMA allows 400 characters, and white space around them.
REASON_TOKENS = 512


def strict_requested(options: Any) -> bool:
    """Whether raw options turn ``strict_mode`` on, read as pydantic will read them ("false" is False).

    Strict mode changes other options (the threshold, G-Eval's range) before validation;
    an unreadable value counts as off here and is reported by field validation.
    """
    if not isinstance(options, dict):
        return False
    try:
        return TypeAdapter(bool).validate_python(options.get("strict_mode", False))
    except ValidationError:
        return False


def ask(judge: Backend, prompt: RenderedPrompt, schema: dict[str, Any], max_tokens: int) -> JsonReply:
    """The judge's reply to ``prompt``: JSON conforming to ``schema`` (validated by the backend) and its text."""
    return judge.generate_json(JsonRequest(messages=prompt.messages, json_schema=schema, max_tokens=max_tokens))


def format_score(score: float) -> str:
    """A score as a prompt shows it: 0.75, 1, 0.33, 3.2."""
    return f"{score:.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Exchange:
    """One judge call: the prompt sent and what the judge wrote after the prompt's prefill."""

    prompt: RenderedPrompt
    reply: str

    def continued(self, follow_up: RenderedPrompt) -> RenderedPrompt:
        """This call's conversation, the judge's reply, then ``follow_up``."""
        return self.prompt.continued(self.reply, follow_up)


@dataclass(frozen=True)
class Judgement:
    """What a judged metric's scoring step found, before strict mode and the reason.

    ``score`` is the raw score (the formula's value, or G-Eval's score on its
    range); ``summary`` is the reason when none is generated; ``details`` is the
    evidence; ``conversation`` is the judge call the reason continues (None: the
    step made no judge call, so the reason is a fresh request);
    ``reason_variables`` is what the reason prompt sees besides the score.
    """

    score: float
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    conversation: Exchange | None = None
    reason_variables: dict[str, Any] = field(default_factory=dict)


class JudgedMetric(Metric):
    """Base of the metrics that ask a judge: a scoring step, strict mode, then an optional reason.

    ``strict_mode`` makes the score binary: 1.0 only when the raw score is a
    perfect 1.0, else 0.0, with threshold 1.0. For a metric where lower is better
    (hallucination) it is the mirror image: 0.0 only when the raw score is 0.0,
    else 1.0, with threshold 0.0. ``details["raw_score"]`` keeps the raw score.
    """

    needs_judge = True
    #: The folder under prompts/ with this metric's prompt files (its reason prompt: ``reason.txt``).
    prompt_folder: ClassVar[str]
    reason_schema: ClassVar[dict[str, Any]] = REASON_SCHEMA
    reason_tokens: ClassVar[int] = REASON_TOKENS

    include_reason: bool = Field(True, description="Have the judge explain the score, after scoring.")
    strict_mode: bool = Field(False, description="Binary: only a perfect score counts; sets the threshold.")
    reason_prompt: Path | None = Field(None, description="Your own prompt file for the reason.")

    @model_validator(mode="before")
    @classmethod
    def _strict(cls, data: Any) -> Any:
        return {**data, **cls.strict_options()} if strict_requested(data) else data

    @classmethod
    def strict_options(cls) -> dict[str, Any]:
        """The options strict mode sets, over the ones given: the threshold of a perfect score."""
        return {"threshold": 0.0 if cls.lower_is_better else 1.0}

    def judge_case(self, case: Any, judge: Backend) -> Judgement:
        """The scoring step: ask the judge, compute the raw score, keep the last call to continue."""
        raise NotImplementedError

    def final_score(self, raw: float) -> float:
        """The result's score from the raw score: itself, or in strict mode 1.0 or 0.0 (see the class)."""
        if not self.strict_mode:
            return raw
        perfect = 0.0 if self.lower_is_better else 1.0
        return perfect if raw == perfect else 1.0 - perfect

    def verdict(self, case: Any, judge: Backend | None) -> Verdict:
        if judge is None:
            raise BackendError(f"metric '{self.display_name}' needs a judge backend")
        judged = self.judge_case(case, judge)
        details: dict[str, Any] = {"raw_score": judged.score, **judged.details}
        reason = judged.summary
        if self.include_reason:
            try:
                reason, cut = cut_loop(self._reason(judge, judged))
            except (BackendError, PromptError) as err:  # the score stands; say why the reason is missing
                details["reason_error"] = f"{type(err).__name__}: {err}"
            else:
                if cut:
                    details["reason_loop_cut"] = cut  # characters of a loop left out (metrics/reasons.py)
        return Verdict(score=self.final_score(judged.score), reason=reason, details=details)

    def _reason(self, judge: Backend, judged: Judgement) -> str:
        question = load_prompt(f"{self.prompt_folder}/reason", self.reason_prompt).render(
            score=format_score(judged.score), **judged.reason_variables
        )
        prompt = question if judged.conversation is None else judged.conversation.continued(question)
        reason = str(ask(judge, prompt, self.reason_schema, self.reason_tokens).value["reason"]).strip()
        if not reason:
            raise BackendError("the judge wrote a blank reason")
        return reason
