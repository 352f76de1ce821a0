"""Metrics that judge a list of items one by one: extracted lists, verdict lists, bounded schemas.

The RAG metrics (claims, statements, retrieved nodes), summarization (claims,
questions), the safety metrics (opinions, statements) and prompt alignment
(instructions) all ask a judge the same two things, through
:class:`~localeval.backends.base.JsonRequest` and ``judge.generate_json``, which
validates the reply against the schema and refuses a cut-off one. The schemas
are built so that a small model cannot go wrong in the ways deepeval's users
report:

* a verdict list has exactly as many entries as there are items judged
  (``minItems == maxItems == N``), each one of the metric's enum values, so a
  length mismatch or a "yes." cannot reach the arithmetic;
* an extracted list (statements, claims, truths, opinions, questions) has at
  most a few items of at most :data:`MAX_CHARS` characters, so a model that
  starts repeating itself has to stop, and ``max_tokens`` leaves room for the
  longest reply the schema allows at two characters a token.

Every verdict request goes through :func:`judge_verdicts`, which reads the verdicts as written
or, with the metric's ``verdict_reading = "weighted"``, as the judge's probability of each choice
where it wrote it (:func:`read_verdicts`; the arithmetic is :mod:`localeval.metrics.verdicts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import Field, model_validator

from localeval.backends.base import Backend, Capabilities, DistributionRequest, JsonReply
from localeval.data.case import TestCase
from localeval.data.results import MetricResult
from localeval.errors import BackendError, MetricInputError
from localeval.metrics.judged import Exchange, JudgedMetric, ask
from localeval.metrics.sentences import split_sentences
from localeval.metrics.verdicts import VerdictReading, Verdicts, verdict_prefills
from localeval.prompts import RenderedPrompt, load_prompt

#: ``verdict_reading = "checked"``: the reading the judge's check found better (see :class:`VerdictMetric`).
CHECKED = "checked"

#: The longest statement, claim, truth, opinion or question the judge may write.
MAX_CHARS = 200
#: What an output is judged by: its sentences, split by rules, or a list the judge writes first.
ItemSource = Literal["sentences", "extracted"]
#: How many statements the judge may list from one output (``statements = "extracted"``), by default.
MAX_STATEMENTS = 10


#: Why a judge cannot give weighted verdicts, by the capability it lacks.
NO_LOGPROBS = "the judge gives no log-probabilities"
NO_CONTINUATION = "the judge's prefill mode cannot continue its reply"


class JudgedStatements(NamedTuple):
    """The output's statements with a verdict on each: the verdicts in order, each beside its statement,
    counted by choice, the details a result records, and the verdicts call, which the reason continues."""

    verdicts: Verdicts
    judged: list[dict[str, str]]
    counts: dict[str, float]
    details: dict[str, Any]
    exchange: Exchange


class Listed(NamedTuple):
    """Items to judge: the distinct ones, how many blanks or repeats were dropped, and the call
    that listed them (None: split by rules, no call)."""

    items: list[str]
    dropped: int
    exchange: Exchange | None


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


def items_schema(key: str, max_items: int, max_chars: int = MAX_CHARS, min_items: int = 1) -> dict[str, Any]:
    """``{key: [...]}``: ``min_items`` to ``max_items`` non-empty strings of at most ``max_chars``."""
    return {
        "type": "object",
        "properties": {
            key: {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": max_chars},
                "minItems": min_items,
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


def extract(judge: Backend, prompt: RenderedPrompt, key: str, max_items: int, min_items: int = 1) -> Listed:
    """The distinct strings the judge lists under ``key``, stripped; how many it dropped; the call.

    Blank strings and repeats are dropped, not judged: a small model that loops
    would otherwise weigh one statement many times. With ``min_items = 1`` (the
    default) a list of only blank strings is an error; ``min_items = 0`` lets the
    judge say there is nothing to list (an output without opinions).
    """
    reply = ask(judge, prompt, items_schema(key, max_items, min_items=min_items), items_tokens(max_items))
    written = [s.strip() for s in reply.value[key] if s.strip()]
    if not written and min_items > 0:
        raise BackendError(f"the judge listed no {key}, only blank strings")
    items = list(dict.fromkeys(written))
    return Listed(items, len(reply.value[key]) - len(items), Exchange(prompt, reply.text))


def judge_verdicts(
    judge: Backend, prompt: RenderedPrompt, count: int, choices: Sequence[str],
    reading: VerdictReading = "written", allow_fallback: bool = False,
) -> tuple[Verdicts, Exchange]:
    """One verdict per item judged, in the items' order, each one of ``choices``, read as ``reading``
    says (:func:`read_verdicts`); and the call, which the reason continues."""
    reply = ask(judge, prompt, verdicts_schema(count, choices), verdicts_tokens(count))
    written = [str(v) for v in reply.value["verdicts"]]
    return read_verdicts(judge, prompt, reply, written, choices, reading, allow_fallback), Exchange(prompt, reply.text)


def weighing_unavailable(capabilities: Capabilities) -> str | None:
    """Why a judge with these capabilities cannot give weighted verdicts; None when it can.

    A verdict's distribution is read after the reply written so far, a prefill the model must
    continue as its own text, with candidates of several characters: a backend without
    log-probabilities cannot, and neither can a server whose prefill mode has the model write the
    prefill itself (``grammar``, ``instruction``: ``multi_token_candidates`` false).
    """
    if not capabilities.distribution:
        return NO_LOGPROBS
    return None if capabilities.multi_token_candidates else NO_CONTINUATION


def read_verdicts(
    judge: Backend, prompt: RenderedPrompt, reply: JsonReply, written: Sequence[str], choices: Sequence[str],
    reading: VerdictReading = "written", allow_fallback: bool = False,
) -> Verdicts:
    """The ``written`` verdicts of ``reply`` to ``prompt``, read as ``reading`` says.

    ``"weighted"``: for each verdict, the judge's distribution over ``choices`` right where it wrote
    it: the prompt's messages, and as the prefill the reply as the judge wrote it, up to and with the
    verdict's opening quote (``{"verdicts": ["yes", "``), so the model reads its own reply again
    (a judge that keeps its last prompt's state, llama.cpp in-process, reads only the new tokens).
    The verdict request sends no prefill, so none is put before the reply. A judge that cannot give
    them (:func:`weighing_unavailable`) is an error naming both ways out, unless ``allow_fallback``:
    then the written verdicts are counted, and their ``reading`` says so and why.
    """
    if reading == "written":
        return Verdicts.as_written(written)
    missing = weighing_unavailable(judge.capabilities)
    if missing is not None:
        if not allow_fallback:
            raise BackendError(
                f"verdict_reading 'weighted' reads the judge's log-probabilities after the reply it wrote, but "
                f"{missing} ({judge.fingerprint.kind}); set verdict_reading = 'written', or allow_fallback = true "
                "to fall back to it"
            )
        return Verdicts.as_written(written, reading=f"written ({missing})")
    try:
        prefills = verdict_prefills(reply.text, written)
    except ValueError as err:
        raise BackendError(f"cannot find the verdicts in the judge's reply {reply.text[:200]!r}: {err}") from err
    distributions = [
        judge.candidate_distribution(
            DistributionRequest(messages=prompt.messages, prefill=prefill, candidates=tuple(choices))
        ).distribution
        for prefill in prefills
    ]
    return Verdicts.from_distributions(written, distributions)


class VerdictMetric(JudgedMetric):
    """Base of the metrics whose judge gives verdicts on a list of items: how the verdicts are read.

    ``verdict_reading = "written"`` (the default) counts each verdict the judge wrote;
    ``"weighted"`` counts each by the judge's probability of each choice where it wrote it (see
    :mod:`localeval.metrics.verdicts`). Subclasses ask with :meth:`judge_verdicts`.
    """

    verdict_reading: VerdictReading = Field(
        "written",
        description="How verdicts count: the one the judge wrote (1 each), or weighted by its "
        "probability of each choice there (expected counts; needs log-probabilities); 'checked': the "
        "reading the judge's check found better for this metric's family, read by the run.",
    )
    verdict_reading_source: str = Field(
        "configured",
        description="Where the reading came from: 'configured' (given, or the default); 'checked' until a run "
        "reads the judge's check, then 'checked: …' with what the check measured.",
    )
    allow_fallback: bool = Field(
        False, description="verdict_reading = 'weighted': count the written verdicts when the judge gives no "
        "log-probabilities (recorded).",
    )

    @model_validator(mode="before")
    @classmethod
    def _checked_reading(cls, data: Any) -> Any:
        """``verdict_reading = "checked"``: as written until a run reads the judge's check."""
        if isinstance(data, dict) and data.get("verdict_reading") == CHECKED:
            return {**data, "verdict_reading": "written", "verdict_reading_source": CHECKED}
        return data

    @property
    def awaiting_check(self) -> str | None:
        if self.verdict_reading_source == CHECKED:
            return "verdict_reading 'checked'"
        return super().awaiting_check

    def _result(self, *, start: float, **fields: Any) -> MetricResult:
        """Every result of a reading chosen by the judge's check says so, beside the reading it used."""
        if self.verdict_reading_source != "configured":
            fields["details"] = {**fields.get("details", {}), "verdict_reading_source": self.verdict_reading_source}
        return super()._result(start=start, **fields)

    @model_validator(mode="after")
    def _strict_reads_written(self) -> VerdictMetric:
        if self.strict_mode and self.verdict_reading == "weighted":
            raise ValueError(
                "strict_mode needs verdict_reading = 'written': a weighted score is almost never exactly "
                "perfect, so strict mode would fail nearly every case"
            )
        return self

    def judge_verdicts(
        self, judge: Backend, prompt: RenderedPrompt, count: int, choices: Sequence[str]
    ) -> tuple[Verdicts, Exchange]:
        """:func:`judge_verdicts`, read as this metric's options say."""
        return judge_verdicts(judge, prompt, count, choices, self.verdict_reading, self.allow_fallback)


class ItemsMetric(VerdictMetric):
    """Base of judged metrics that list items and judge each (see the module's docstring).

    Subclasses set ``kind``, ``prompt_folder`` and implement ``judge_case``; this
    base gives them their prompts by step and the items of an output.
    """

    def output_items(
        self,
        case: TestCase,
        judge: Backend,
        source: ItemSource,
        step: str,
        override: Path | None,
        max_items: int,
        min_items: int = 1,
    ) -> Listed:
        """The distinct items the output is judged by, and how many blanks or repeats were dropped.

        ``source = "sentences"``: the output's sentences, split by rules, nothing
        generated. ``"extracted"``: what the judge lists under ``step`` (e.g.
        "claims") with that step's prompt, ``min_items`` to ``max_items``.
        """
        if source == "extracted":
            prompt = self.render(step, override, actual_output=case.actual_output, max_items=max_items)
            return extract(judge, prompt, step, max_items, min_items)
        written = split_sentences(case.actual_output or "")
        if not written:
            raise MetricInputError(self.display_name, "actual_output", "the output has no sentence to judge")
        items = list(dict.fromkeys(written))
        return Listed(items, len(written) - len(items), None)

    def render(self, step: str, override: Path | None, **variables: Any) -> RenderedPrompt:
        """This metric's prompt for ``step`` (e.g. "verdicts"), or the user's file instead."""
        return load_prompt(self.prompt_name(step), override).render(**variables)

    def prompt_name(self, step: str) -> str:
        """The shipped prompt of ``step``: ``prompts/<prompt_folder>/<step>.txt``, unless the step is shared."""
        return f"{self.prompt_folder}/{step}"


class StatementsMetric(ItemsMetric):
    """Base of metrics that give a verdict on each statement of the output (answer relevancy, PII leakage).

    The statements are the output's sentences, split by rules (``statements =
    "sentences"``, the default: nothing generated) or what the judge lists first
    (``"extracted"``, at most ``max_statements``).
    """

    statements: ItemSource = Field(
        "sentences",
        description=(
            "Where the statements come from: the output's sentences (nothing generated), or a list the "
            "judge writes first (finer-grained, slower)."
        ),
    )
    max_statements: int = Field(
        MAX_STATEMENTS, ge=1, description="The most statements the judge may list (statements = 'extracted')."
    )
    statements_prompt: Path | None = Field(None, description="Your own prompt file for listing the statements.")
    verdicts_prompt: Path | None = Field(None, description="Your own prompt file for the verdicts.")

    def judge_statements(
        self, case: TestCase, judge: Backend, choices: Sequence[str], **variables: Any
    ) -> JudgedStatements:
        """A verdict, one of ``choices``, on each statement: the "verdicts" prompt rendered with the
        statements and ``variables``."""
        statements, dropped, _ = self.output_items(
            case, judge, self.statements, "statements", self.statements_prompt, self.max_statements
        )
        prompt = self.render("verdicts", self.verdicts_prompt, statements=statements, **variables)
        verdicts, asked = self.judge_verdicts(judge, prompt, len(statements), choices)
        judged = [{"statement": s, "verdict": v} for s, v in zip(statements, verdicts.written)]
        counts = verdicts.counts(choices)
        details = {
            "statements": statements,
            "statements_from": self.statements,
            "dropped": dropped,
            "verdicts": judged,
            "counts": counts,
            **verdicts.evidence(),
        }
        return JudgedStatements(verdicts, judged, counts, details, asked)
