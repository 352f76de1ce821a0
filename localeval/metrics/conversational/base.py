"""What the conversational metrics share: the transcript, its place at the start of every prompt, verdicts.

Every conversational metric's first prompt starts with the same text: one system
message, then a user message opening with ``Conversation:`` and the transcript
(``prompts/conversation/transcript.txt``: every turn's role and content, and the
retrieval context and tool calls of assistant turns). Only after it comes what
the metric asks. :meth:`ConversationalMetric.prompt_start` is that first prompt,
so a run (:mod:`localeval.run.schedule`) puts the metrics of one conversation next to
each other, and a judge that keeps its last prompt's state (llama.cpp in-process,
the prefix cache of llama.cpp's server and Ollama) reads the transcript once for
all of them, not once per metric.

Turns are numbered from 1, as a reader counts them, in the prompts and in the
evidence: ``details["verdicts"] = [{"turn": 2, "verdict": ...}]`` is about
``turns[1]`` (the dataset's error messages name fields by index: ``turns[1].role``).

A ``system`` turn (the assistant's instructions, wherever the log has it) keeps its
place and its number in the transcript, labelled as context (:data:`SYSTEM_LABEL`),
and no metric judges it: the metrics judge assistant turns and the user's intentions.
The label is given here as the turn's role, so the shipped transcript template, and
with it the transcript of a conversation without system turns, is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from localeval.backends.base import Backend
from localeval.data.case import ConversationalTestCase
from localeval.errors import MetricInputError, PromptError
from localeval.metrics.items import VerdictMetric, read_verdicts
from localeval.metrics.judged import Exchange, ask
from localeval.metrics.verdicts import Verdicts
from localeval.prompts import RenderedPrompt, load_prompt

#: The turn fields a transcript shows besides role and content, unless a metric says otherwise.
TURN_EXTRAS: tuple[str, ...] = ("retrieval_context", "tools_called")
#: What the transcript calls a system turn, where it names the other turns' roles: "Turn 1, <this>:".
SYSTEM_LABEL = "system message (the assistant's instructions: context, not a turn to judge)"


def transcript(case: ConversationalTestCase, shown: Iterable[str] = TURN_EXTRAS) -> str:
    """The conversation as every conversational prompt shows it; ``shown``: the assistant turns' extra fields."""
    turns = [{**dict(turn), "role": SYSTEM_LABEL} if turn.role == "system" else turn for turn in case.turns]
    prompt = load_prompt("conversation/transcript").render(turns=turns, shown=tuple(shown))
    return "\n".join(m.content for m in prompt.messages).strip()


def prompt_text(prompt: RenderedPrompt) -> str:
    """A prompt's messages as one text, for ordering calls by their start."""
    return "\n".join(m.content for m in prompt.messages)


def turn_verdicts(indices: Sequence[int], verdicts: Sequence[str]) -> list[dict[str, Any]]:
    """Per-turn evidence: each judged turn's number (its index in ``turns`` + 1) and its verdict."""
    return [{"turn": i + 1, "verdict": v} for i, v in zip(indices, verdicts)]


class ConversationalMetric(VerdictMetric):
    """Base of the judged metrics on conversations. Subclasses implement ``first_prompt`` and ``judge_case``.

    Their verdicts are read as ``verdict_reading`` says (:class:`~localeval.metrics.items.VerdictMetric`):
    :meth:`per_turn_verdicts` for one request about many turns, :meth:`one_verdict` for one about one.
    """

    case_type = ConversationalTestCase

    def first_prompt(self, case: ConversationalTestCase) -> RenderedPrompt:
        """The first prompt this metric sends about ``case``; it starts with the shared transcript block."""
        raise NotImplementedError

    def prompt_start(self, case: Any) -> str:
        """The first prompt itself: the transcript opens it, so the calls about one conversation sort together."""
        try:
            return prompt_text(self.first_prompt(case))
        except (PromptError, MetricInputError):
            # A broken prompt file, or a conversation with nothing to judge: the run reports it when it measures
            # the case.
            return super().prompt_start(case)

    def render(self, step: str, override: Path | None, case: ConversationalTestCase, **variables: Any) -> RenderedPrompt:
        """This metric's prompt for ``step`` (or the user's file instead), given the transcript and ``variables``."""
        return load_prompt(f"{self.prompt_folder}/{step}", override).render(transcript=transcript(case), **variables)

    def per_turn_verdicts(
        self, judge: Backend, prompt: RenderedPrompt, indices: Sequence[int], choices: Sequence[str]
    ) -> tuple[list[dict[str, Any]], Verdicts, Exchange]:
        """One verdict per turn in ``indices`` from one request: the evidence, the verdicts, and the call."""
        verdicts, asked = self.judge_verdicts(judge, prompt, len(indices), choices)
        return turn_verdicts(indices, verdicts.written), verdicts, asked

    def one_verdict(self, judge: Backend, prompt: RenderedPrompt, choices: Sequence[str]) -> tuple[Verdicts, Exchange]:
        """A single verdict, one of ``choices``: ``{"verdict": ...}``, read as this metric's options say."""
        schema = {
            "type": "object",
            "properties": {"verdict": {"type": "string", "enum": list(choices)}},
            "required": ["verdict"],
            "additionalProperties": False,
        }
        reply = ask(judge, prompt, schema, 32)
        verdicts = read_verdicts(judge, prompt, reply, [str(reply.value["verdict"])], choices,
                                 self.verdict_reading, self.allow_fallback)
        return verdicts, Exchange(prompt, reply.text)
