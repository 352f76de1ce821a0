"""Turning chat messages into the prompt text a model reads.

The distribution operation needs the assistant's reply to be *started* in the
prompt (``prefill``), which chat-completion APIs do not offer; so the in-process
backend renders the chat itself, with the model's own template.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from localeval.backends.base import Message

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class ChatFormat(Protocol):
    """Renders messages, then the start of the assistant's reply, as one prompt string."""

    @property
    def identity(self) -> str:
        """Names the format in fingerprints: a change of template changes it."""
        ...

    def render(self, messages: Sequence[Message], prefill: str = "") -> str: ...


class JinjaChatFormat:
    """A Hugging Face style chat template (the one stored in a GGUF file, or ChatML)."""

    def __init__(self, template: str, bos_token: str = "", eos_token: str = "") -> None:
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True,
            extensions=["jinja2.ext.loopcontrols"],
        )
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        self.template = template
        self._compiled = env.from_string(template)
        self._tokens = {"bos_token": bos_token, "eos_token": eos_token}

    @property
    def identity(self) -> str:
        return "jinja:" + hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:16]

    def render(self, messages: Sequence[Message], prefill: str = "") -> str:
        prompt = self._compiled.render(
            messages=[m.model_dump() for m in messages],
            add_generation_prompt=True,
            **self._tokens,
        )
        return prompt + prefill


class PlainFormat:
    """For base models with no chat format: the messages as paragraphs, then the prefill.

    The last message is expected to end where the answer starts (for example
    with "Answer:"); a blank line separates it from what came before.
    """

    identity = "plain"

    def render(self, messages: Sequence[Message], prefill: str = "") -> str:
        body = "\n\n".join(m.content.strip() for m in messages if m.content.strip())
        return body + "\n\n" + prefill


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


def chat_format_for(
    kind: str, embedded: str | None, bos_token: str = "", eos_token: str = ""
) -> ChatFormat:
    """The format for a model: ``kind`` is its manifest's chat_template setting.

    "gguf" uses the template stored in the model file, and plain text when the
    file has none (a base model: chat markup would only confuse it).
    """
    if kind == "plain" or (kind == "gguf" and not embedded):
        return PlainFormat()
    if kind == "chatml":
        return JinjaChatFormat(CHATML, bos_token, eos_token)
    if kind == "gguf" and embedded:
        return JinjaChatFormat(embedded, bos_token, eos_token)
    raise ValueError(f"unknown chat template kind {kind!r}")
