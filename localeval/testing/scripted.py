"""A judge for tests: it answers from queues of canned replies and records every request.

Unit-test your own metric's arithmetic and prompts without a model::

    from localeval.testing import ScriptedJudge

    judge = ScriptedJudge(json_values=[{"verdicts": ["yes", "no"]}])
    result = MyMetric().measure(case, judge)
    assert result.score == 0.5
    assert "Paris" in judge.requests[0].messages[-1].content

Each ``generate_json`` reply is the next value of ``json_values``, validated
against the request's schema exactly as a real backend validates (so a metric
whose schema the scripted value breaks fails as it would in production). Each
``candidate_distribution`` reply is the next mapping of ``logprobs``: the raw
log-probability of each of the request's candidates, renormalized as the real
backends do. Each ``generate_text`` reply is the next of ``texts``. A queued
item that is an exception instance is raised instead of answered, to script a failure (``SchemaViolation("...")``) at a given call.

It is evidence about a metric's arithmetic and prompts, never about a backend.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from localeval.backends.base import (
    Capabilities,
    DistributionReply,
    DistributionRequest,
    Fingerprint,
    JsonReply,
    JsonRequest,
    TextReply,
    TextRequest,
    Usage,
)
from localeval.backends.schema import parse_reply
from localeval.distribution import renormalize

#: What a scripted judge claims to do unless told otherwise: everything a metric may ask.
FULL_CAPABILITIES = Capabilities(
    json_schema=True, distribution=True, multi_token_candidates=True, max_top_logprobs=None, text=True,
    text_as_data=True,
)


#: The tokens a reply says it cost unless told otherwise.
NO_USAGE = Usage()


class ScriptExhausted(RuntimeError):
    """The test asked the judge more often than it scripted replies for."""


class ScriptedJudge:
    """A :class:`~localeval.backends.base.Backend` with canned replies; ``requests`` lists what it was asked.

    ``usage`` is what every reply says it cost (tokens), so a test can check how a
    run counts them.
    """

    def __init__(
        self,
        json_values: Iterable[Any] = (),
        logprobs: Iterable[Mapping[str, float] | BaseException] = (),
        *,
        capabilities: Capabilities = FULL_CAPABILITIES,
        fingerprint: Fingerprint | None = None,
        usage: Usage = NO_USAGE,
        texts: Iterable[str | BaseException] = (),
    ) -> None:
        self.json_values = list(json_values)
        self.texts = list(texts)
        self.logprobs = list(logprobs)
        self.requests: list[JsonRequest | DistributionRequest | TextRequest] = []
        self.usage = usage
        self.closed = False
        self._capabilities = capabilities
        self._fingerprint = fingerprint or Fingerprint(
            kind="scripted", model="scripted-model", model_sha256="0" * 64, runtime="scripted 1"
        )

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    def generate_json(self, request: JsonRequest) -> JsonReply:
        self.requests.append(request)
        value = _next(self.json_values, "generate_json")
        text = json.dumps(value)
        return JsonReply(
            value=parse_reply(text, request.json_schema), text=text, finish_reason="stop", usage=self.usage
        )

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        self.requests.append(request)
        logprobs = _next(self.logprobs, "candidate_distribution")
        if set(logprobs) != set(request.candidates):
            raise RuntimeError(
                f"scripted logprobs are for {sorted(logprobs)}, "
                f"the request asks for {list(request.candidates)}"
            )
        ordered = {c: logprobs[c] for c in request.candidates}
        return DistributionReply(distribution=renormalize(ordered), usage=self.usage)

    def generate_text(self, request: TextRequest) -> TextReply:
        """The next of ``texts`` (a target's scripted output)."""
        self.requests.append(request)
        return TextReply(text=_next(self.texts, "generate_text"), finish_reason="stop", usage=self.usage)

    def close(self) -> None:
        """Nothing to free; ``closed`` records that it was called."""
        self.closed = True


def _next(queue: list[Any], operation: str) -> Any:
    if not queue:
        raise ScriptExhausted(f"ScriptedJudge: no scripted reply left for {operation}")
    item = queue.pop(0)
    if isinstance(item, BaseException):
        raise item
    return item
