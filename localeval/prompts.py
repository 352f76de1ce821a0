"""Prompt templates: text files under ``prompts/``, rendered strictly.

A file holds one chat. Lines ``[[system]]``, ``[[user]]`` and ``[[assistant]]``
start a message of that role; text before any marker is a user message. A
final ``[[assistant]]`` section is the *prefill*: the start of the model's
reply, written into the prompt (for G-Eval, ``Score: `` so that the next token
is the score). Templates use Jinja2 syntax; a variable that is not given is an
error, never a blank.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from localeval.backends.base import Message
from localeval.errors import PromptError
from localeval.resources import data_path

_MARKER = re.compile(r"^\[\[(system|user|assistant)\]\]\n", re.MULTILINE)
_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
)


@dataclass(frozen=True)
class RenderedPrompt:
    messages: tuple[Message, ...]
    prefill: str

    def continued(self, reply: str, follow_up: RenderedPrompt) -> RenderedPrompt:
        """This chat, the judge's ``reply`` to it (after the prefill), then ``follow_up``'s messages.

        One growing conversation: a judge that keeps the state of its last prompt
        (llama.cpp in-process, llama.cpp's server, Ollama) reads only the follow-up,
        not the case again. ``follow_up`` is a prompt file with user messages only,
        and maybe a prefill of its own.
        """
        answer = Message(role="assistant", content=f"{self.prefill}{reply}".strip())
        return RenderedPrompt((*self.messages, answer, *follow_up.messages), follow_up.prefill)


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed prompt file. ``sha256`` identifies its text; results do not record it.

    The cache keys on the rendered request, whose messages hold the prompt's text, so an
    edited prompt file is a new key without the hash taking part.
    """

    source: str
    sections: tuple[tuple[str, str, int], ...]  #: (role, body, line of the body's start)
    sha256: str

    @classmethod
    def from_text(cls, text: str, source: str = "<string>") -> PromptTemplate:
        parts = _MARKER.split(text)
        sections = [("user", parts[0], 1)] if parts[0].strip() else []
        line = 1 + parts[0].count("\n")
        for role, body in zip(parts[1::2], parts[2::2]):
            sections.append((role, body, line + 1))  # the body starts below its marker
            line += 1 + body.count("\n")
        if not sections:
            raise PromptError(f"{source}: the prompt is empty")
        return cls(source, tuple(sections), hashlib.sha256(text.encode("utf-8")).hexdigest())

    @classmethod
    def from_file(cls, path: Path) -> PromptTemplate:
        try:
            return cls.from_text(path.read_text(encoding="utf-8"), str(path))
        except OSError as err:
            raise PromptError(f"{path}: cannot read prompt ({err.strerror})") from err

    def render(self, **variables: Any) -> RenderedPrompt:
        rendered = [(role, self._render(body, start, variables)) for role, body, start in self.sections]
        prefill = ""
        if rendered[-1][0] == "assistant":
            # The prefill keeps its trailing space: it decides what the next token is.
            prefill = rendered.pop()[1].rstrip("\n")
        messages = tuple(Message.model_validate({"role": role, "content": body.strip()}) for role, body in rendered)
        if not messages:
            raise PromptError(f"{self.source}: the prompt has no message before the prefill")
        return RenderedPrompt(messages, prefill)

    def _render(self, body: str, start: int, variables: dict[str, Any]) -> str:
        try:
            return _ENV.from_string(body).render(**variables)
        except jinja2.UndefinedError as err:
            raise PromptError(f"{self.source}: {err.message}") from err
        except jinja2.TemplateSyntaxError as err:
            raise PromptError(f"{self.source}:{start + err.lineno - 1}: {err.message}") from err


def load_prompt(name: str, override: Path | None = None) -> PromptTemplate:
    """A shipped prompt by name, e.g. ``"geval/score"``, or the user's file instead."""
    template = PromptTemplate.from_file(override or shipped_prompt_path(name))
    if override is None:
        with _RECORDING_LOCK:
            for used in _RECORDINGS:
                used[name] = template.sha256
    return template


def shipped_prompt_path(name: str) -> Path:
    return data_path("prompts", *f"{name}.txt".split("/"))


def shipped_prompt_sha256(name: str) -> str | None:
    """The sha256 of a shipped prompt's text as it is now (:attr:`PromptTemplate.sha256`, the one
    definition); None when there is no such prompt, or none that reads."""
    try:
        return PromptTemplate.from_file(shipped_prompt_path(name)).sha256
    except PromptError:
        return None


_RECORDINGS: list[dict[str, str]] = []
_RECORDING_LOCK = threading.Lock()


@contextmanager
def recording_prompts() -> Iterator[dict[str, str]]:
    """The shipped prompts loaded while the block runs (in any thread), by name, with their text's
    sha256: what a measurement (a judge check) was made with, so that it can tell when it is outdated."""
    used: dict[str, str] = {}
    with _RECORDING_LOCK:
        _RECORDINGS.append(used)
    try:
        yield used
    finally:
        with _RECORDING_LOCK:
            del _RECORDINGS[next(i for i, other in enumerate(_RECORDINGS) if other is used)]
