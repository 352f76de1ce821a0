"""Turning chat messages into the prompt a model reads, and into the pieces its tokenizer reads.

The distribution operation needs the assistant's reply to be *started* in the
prompt (``prefill``), which chat-completion APIs do not offer; so the in-process
backend renders the chat itself, with the model's own template.

A rendered prompt (:class:`Prompt`) keeps apart what the template wrote (markup:
``<|im_start|>user``) and what the messages hold (contents, and the prefill). A
message's content is text, whatever it spells: a case, a golden or a target's
output that contains ``<|im_end|>`` must not close its turn. So the tokenizer
reads special tokens only in markup (:func:`token_pieces`), and the text around
each of them — markup and contents together — as one run of text, as llama.cpp
reads a prompt between two special tokens: text without special-token strings is
read as exactly the tokens it always was. Where the contents are is found by
rendering the template a second time with a marker for each content
(:meth:`JinjaChatFormat.render`): no list of forbidden strings, any template.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from localeval.backends.base import Message
from localeval.errors import BackendError

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class Segment:
    """A stretch of a rendered prompt: the template's own text (``markup``), or a message's content."""

    text: str
    markup: bool


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt: its segments in order, adjacent ones of a kind merged, none empty."""

    segments: tuple[Segment, ...]

    @classmethod
    def of(cls, segments: Iterable[Segment]) -> Prompt:
        merged: list[Segment] = []
        for segment in segments:
            if not segment.text:
                continue
            if merged and merged[-1].markup == segment.markup:
                segment = Segment(merged.pop().text + segment.text, segment.markup)
            merged.append(segment)
        return cls(tuple(merged))

    @property
    def text(self) -> str:
        """The whole prompt as one string (what a server is sent, and ``str(prompt)``)."""
        return "".join(segment.text for segment in self.segments)

    def __str__(self) -> str:
        return self.text

    def then(self, text: str) -> Prompt:
        """This prompt with ``text`` written after it, by the reply (content: a candidate's prefix)."""
        return Prompt.of((*self.segments, Segment(text, markup=False)))


class ChatFormat(Protocol):
    """Renders messages, then the start of the assistant's reply, as one prompt."""

    @property
    def identity(self) -> str:
        """Names the format in fingerprints: a change of what it renders changes it."""
        ...

    def render(self, messages: Sequence[Message], prefill: str = "") -> Prompt: ...


#: Where a content goes while a template renders (:meth:`JinjaChatFormat.render`): characters of
#: Unicode's private use area, which no template writes and no string filter changes.
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"
_MARK = re.compile(f"{_MARK_OPEN}([0-9]+){_MARK_CLOSE}")


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

    def render_text(self, messages: Sequence[Message], prefill: str = "") -> str:
        """The prompt as the template writes it, then the prefill: one string."""
        return self._render([m.model_dump() for m in messages]) + prefill

    def render(self, messages: Sequence[Message], prefill: str = "") -> Prompt:
        """The same text, each content (and the prefill) a segment of its own.

        The template is rendered again with a marker for each non-empty content; the
        text between the markers is the template's. A template may trim a content
        (many do); one that changes it otherwise cannot be followed: a BackendError.
        """
        shown = self._render([m.model_dump() for m in messages])
        marked = self._render([
            {**m.model_dump(), "content": f"{_MARK_OPEN}{i}{_MARK_CLOSE}"} if m.content else m.model_dump()
            for i, m in enumerate(messages)
        ])
        segments = _traced(shown, _MARK.split(marked), [m.content for m in messages])
        if segments is None:
            raise BackendError(
                f"the chat template ({self.identity}) changes message contents in a way that cannot be "
                "followed (only trimming can): which text is a message's and which the template's is "
                "unknown, and a message's text must never become special tokens; use chat_template = "
                "'chatml' or a template that writes each content as it is"
            )
        return Prompt.of((*segments, Segment(prefill, markup=False)))

    def _render(self, messages: list[dict[str, str]]) -> str:
        return self._compiled.render(messages=messages, add_generation_prompt=True, **self._tokens)


def _traced(shown: str, pieces: list[str], contents: Sequence[str]) -> list[Segment] | None:
    """``shown`` cut into the template's text and the contents; None where they do not line up.

    ``pieces`` is the marked rendering split at its markers: markup, content index, markup, ...
    Each content is found as it is, or trimmed as a template's ``trim`` leaves it.
    """
    segments: list[Segment] = []
    at = 0
    for k in range(0, len(pieces), 2):
        markup = pieces[k]
        if not shown.startswith(markup, at):
            return None
        segments.append(Segment(markup, markup=True))
        at += len(markup)
        if k + 1 == len(pieces):
            break
        content, following = contents[int(pieces[k + 1])], pieces[k + 2]
        written = next((form for form in dict.fromkeys(
            (content, content.strip(), content.lstrip(), content.rstrip()))
            if shown.startswith(form, at) and shown.startswith(following, at + len(form))), None)
        if written is None:
            return None
        segments.append(Segment(written, markup=False))
        at += len(written)
    return segments if at == len(shown) else None


class PlainFormat:
    """For base models with no chat format: the messages as paragraphs, then the prefill.

    The last message is expected to end where the answer starts (for example
    with "Answer:"): nothing follows it but the prefill, after a blank line. A
    blank line separates the messages.
    """

    #: Version 2: a blank line after the last message only before a prefill.
    identity = "plain:answer-after-last"

    def render(self, messages: Sequence[Message], prefill: str = "") -> Prompt:
        segments: list[Segment] = []
        for content in (m.content.strip() for m in messages):
            if content:
                segments += [Segment("\n\n", markup=True)] if segments else []
                segments.append(Segment(content, markup=False))
        if prefill:
            segments += [Segment("\n\n", markup=True), Segment(prefill, markup=False)]
        return Prompt.of(segments)


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


# -- what a tokenizer reads -------------------------------------------------------------


@dataclass(frozen=True)
class SpecialTokens:
    """A model's special tokens: those its tokenizer makes of their text only when told to parse
    special tokens (llama.cpp: control and unknown tokens), by text.

    ``strip_before``/``strip_after``: the texts of those that drop the whitespace before or after
    them (llama.cpp's LSTRIP and RSTRIP attributes).
    """

    ids: Mapping[str, int]
    strip_before: frozenset[str] = frozenset()
    strip_after: frozenset[str] = frozenset()
    #: The texts, longest first: the order in which llama.cpp looks for them.
    by_length: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        texts = sorted((t for t in self.ids if t), key=len, reverse=True)
        object.__setattr__(self, "by_length", tuple(texts))


def token_pieces(prompt: Prompt, specials: SpecialTokens) -> list[str | int]:
    """``prompt`` as its tokenizer is to read it: special token ids, and runs of text between them.

    Special tokens are looked for in the markup only, as llama.cpp looks for them in a
    whole prompt (each text, longest first, at every place it occurs); a content is
    text through and through. Everything between two special tokens — markup and
    contents alike — is one run, to be tokenized as text (llama.cpp: ``parse_special``
    false), as llama.cpp tokenizes the text between special tokens: a prompt without
    special-token strings in its contents gives the same tokens as the whole text
    tokenized with special tokens parsed.
    """
    pieces: list[str | int] = []
    for segment in prompt.segments:
        for piece in _split_at_specials(segment.text, specials) if segment.markup else [segment.text]:
            if isinstance(piece, str) and pieces and isinstance(pieces[-1], str):
                pieces[-1] += piece
            else:
                pieces.append(piece)
    return _stripped(pieces, specials)


def _split_at_specials(text: str, specials: SpecialTokens) -> list[str | int]:
    pieces: list[str | int] = [text]
    for special in specials.by_length:
        if special not in text:
            continue
        split: list[str | int] = []
        for piece in pieces:
            if isinstance(piece, int):
                split.append(piece)
                continue
            for i, part in enumerate(piece.split(special)):
                split += [specials.ids[special], part] if i else [part]
        pieces = split
    return pieces


#: The characters C's isspace() takes (llama.cpp strips these beside an LSTRIP/RSTRIP token).
_C_SPACE = " \t\n\v\f\r"


def _stripped(pieces: list[str | int], specials: SpecialTokens) -> list[str | int]:
    """The runs beside a whitespace-stripping special token stripped; empty runs dropped."""
    stripping_before = {specials.ids[t] for t in specials.strip_before}
    stripping_after = {specials.ids[t] for t in specials.strip_after}
    out: list[str | int] = []
    for i, piece in enumerate(pieces):
        if isinstance(piece, str):
            if i > 0 and pieces[i - 1] in stripping_after:
                piece = piece.lstrip(_C_SPACE)
            if i + 1 < len(pieces) and pieces[i + 1] in stripping_before:
                piece = piece.rstrip(_C_SPACE)
            if not piece:
                continue
        out.append(piece)
    return out
