"""What deepeval asks a model and what it reads back, as localeval requests and replies; no deepeval import.

deepeval calls a model in two ways (:mod:`localeval.integrations.deepeval`):

* ``generate(prompt, schema)``: ``schema`` is a pydantic model; here its JSON Schema becomes a
  :class:`~localeval.backends.base.JsonRequest` (:func:`json_request`), answered constrained and validated.
* ``generate_raw_response(prompt, top_logprobs)``: G-Eval's call. It parses ``choices[0].message.content``
  as JSON with ``reason`` and ``score``, then, in ``choices[0].logprobs.content``, finds the last token whose
  text is the score and weighs the decimal tokens among that position's ``top_logprobs`` (each at least 1%
  probable) by their probabilities. Here the reply is a JSON reply constrained to :data:`SCORE_SCHEMA`, and the
  score's position is read with the judge's candidate distribution (:func:`raw_response`): one
  ``logprobs.content`` entry, the score's, whose alternatives are the scores 0-10 with the log-probabilities
  the judge gave them. A backend that sees past the candidate gives each score's probability of being the
  whole answer, so "10" is one alternative as deepeval's ``int(token)`` wants it; one that reads one
  position only offers 0-9 (``capabilities.multi_token_candidates``).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from localeval.backends.base import JsonReply, JsonRequest, Message, TextRequest, Usage
from localeval.distribution import CandidateDistribution
from localeval.errors import SchemaViolation

#: The most characters a string of a reply may take where deepeval's schema sets no bound: a small model that
#: loops inside a string (a reason, a statement) then closes it, where it would run until the token limit and
#: the reply be cut off (arrays get their bound from the backend: its ``max_items``).
DEFAULT_MAX_CHARS = 400
#: Every score deepeval's G-Eval can ask for: its rubrics' ranges lie within 0-10.
SCORES = tuple(str(score) for score in range(11))
#: The scores a backend that reads a single position can offer (one character each).
ONE_CHARACTER_SCORES = SCORES[:10]
#: G-Eval's reply (deepeval's ``ReasonScore``, its score an integer of 0-10 as its prompt asks), reason first
#: as deepeval's example shows it, so the score is read after the reason that leads to it.
SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "score": {"enum": [int(score) for score in SCORES]}},
    "required": ["reason", "score"],
    "additionalProperties": False,
}
#: Keywords whose values are data, not schemas: never walked for strings to bound.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
#: Where the score's digits begin in a reply to :data:`SCORE_SCHEMA`: after its key (a quote inside the reason
#: is escaped, so ``"score"`` followed by a colon is the key).
_SCORE_VALUE = re.compile(r'"score"\s*:\s*(?=\d)')


def user_messages(prompt: object) -> tuple[Message, ...]:
    """deepeval's prompt as the one user message of a request; only text prompts are taken.

    Raises ``ValueError`` (never ``TypeError``: deepeval takes that for "this model takes no schema"
    and asks again without one).
    """
    if not isinstance(prompt, str):
        raise ValueError(f"localeval's deepeval model takes a text prompt, got {type(prompt).__name__} "
                         "(a multimodal prompt?)")
    return (Message(role="user", content=prompt),)


def bounded_strings(schema: dict[str, Any], max_chars: int | None) -> dict[str, Any]:
    """A copy of ``schema`` in which every string without a ``maxLength`` has ``max_chars`` (None: as it is).

    A reply within the bound is one the unbounded schema accepts too.
    """
    bounded = copy.deepcopy(schema)
    if max_chars is not None:
        _bound_strings(bounded, max_chars)
    return bounded


def _bound_strings(node: Any, max_chars: int) -> None:
    if isinstance(node, list):
        for item in node:
            _bound_strings(item, max_chars)
    if not isinstance(node, dict):
        return
    types = node.get("type")
    if (types == "string" or (isinstance(types, list) and "string" in types)) and "maxLength" not in node:
        node["maxLength"] = max(max_chars, node.get("minLength", 0))
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            _bound_strings(value, max_chars)


def json_request(prompt: object, schema: object, max_tokens: int, max_chars: int | None) -> JsonRequest:
    """The request for a reply that ``schema`` (a pydantic model class) validates: its JSON Schema, with
    strings bounded to ``max_chars`` (:func:`bounded_strings`)."""
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise ValueError(f"localeval's deepeval model takes a pydantic model as schema, got {schema!r}")
    return JsonRequest(messages=user_messages(prompt), json_schema=bounded_strings(schema.model_json_schema(),
                       max_chars), max_tokens=max_tokens)


def text_request(prompt: object, max_tokens: int) -> TextRequest:
    """The request for free text (deepeval's ``generate`` without a schema)."""
    return TextRequest(messages=user_messages(prompt), max_tokens=max_tokens)


def score_request(prompt: object, max_tokens: int, max_chars: int | None) -> JsonRequest:
    """G-Eval's reply, constrained to :data:`SCORE_SCHEMA` (its reason bounded to ``max_chars``)."""
    return JsonRequest(messages=user_messages(prompt), json_schema=bounded_strings(SCORE_SCHEMA, max_chars),
                       max_tokens=max_tokens)


def score_start(reply: JsonReply) -> int:
    """Where the score's digits begin in ``reply.text`` (a reply to :data:`SCORE_SCHEMA`)."""
    found = list(_SCORE_VALUE.finditer(reply.text))
    score = str(reply.value["score"])
    if not found or not reply.text[found[-1].end():].startswith(score):
        raise SchemaViolation(f"no score {score} after a \"score\" key in the reply: {reply.text[:200]!r}")
    return found[-1].end()


# -- the raw response: the part of OpenAI's ChatCompletion that deepeval reads ----------------


class _Shape(BaseModel):
    model_config = ConfigDict(frozen=True)


class TopLogprob(_Shape):
    """One alternative at a position: its text and log-probability."""

    token: str
    logprob: float
    bytes: list[int]


class TokenLogprob(TopLogprob):
    """The token written at a position, with the alternatives there (most probable first)."""

    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(_Shape):
    content: list[TokenLogprob]


class ReplyMessage(_Shape):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(_Shape):
    index: int = 0
    message: ReplyMessage
    logprobs: ChoiceLogprobs
    finish_reason: str


class ResponseUsage(_Shape):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class RawResponse(_Shape):
    """What ``generate_raw_response`` returns, shaped as OpenAI's ChatCompletion where deepeval reads it."""

    object: Literal["chat.completion"] = "chat.completion"
    model: str
    choices: list[Choice]
    usage: ResponseUsage


def _alternative(token: str, logprob: float) -> TopLogprob:
    return TopLogprob(token=token, logprob=logprob, bytes=list(token.encode()))


def raw_response(reply: JsonReply, distribution: CandidateDistribution, top_logprobs: int, model: str,
                 usage: Usage) -> RawResponse:
    """G-Eval's raw response: ``reply`` as the message, and the score's position with the alternatives
    ``distribution`` read there, the ``top_logprobs`` most probable of them (a score the judge gave no
    probability, outside a server's top-k, is left out). A score that is not one of the distribution's
    candidates (10 from a backend that reads one position) gets no entry: deepeval then keeps the raw score."""
    score = str(reply.value["score"])
    listed = sorted(((c, lp) for c, lp in distribution.logprobs.items() if lp > -math.inf), key=lambda p: -p[1])
    alternatives = [_alternative(token, logprob) for token, logprob in listed[:top_logprobs]]
    content = []
    if score in distribution.logprobs:
        own = _alternative(score, distribution.logprobs[score])
        content.append(TokenLogprob(**own.model_dump(), top_logprobs=alternatives))
    choice = Choice(message=ReplyMessage(content=reply.text), logprobs=ChoiceLogprobs(content=content),
                    finish_reason=reply.finish_reason)
    counted = ResponseUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                            total_tokens=usage.prompt_tokens + usage.completion_tokens)
    return RawResponse(model=model, choices=[choice], usage=counted)
