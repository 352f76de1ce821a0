"""A judge backend for tests: it answers from queues of canned replies and records every request.

Tests import it as ``from scripted import ScriptedBackend``: ``tests/`` has no
``__init__.py``, so pytest's default (prepend) import mode puts ``tests/`` on
``sys.path`` while it collects the test files.

A queued item that is an exception instance is raised instead of answered, so a
test can script a backend failure (``SchemaViolation("...")``) at a given call.
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
)
from localeval.backends.schema import parse_reply
from localeval.distribution import renormalize

FULL_CAPABILITIES = Capabilities(
    json_schema=True, distribution=True, multi_token_candidates=True, max_top_logprobs=None
)


class ScriptExhausted(RuntimeError):
    """The test asked the backend more often than it scripted replies for."""


class ScriptedBackend:
    """Implements :class:`localeval.backends.base.Backend` with canned replies.

    ``json_values``: the values ``generate_json`` returns, in order (each is
    validated against the request's schema, as a real backend does).
    ``logprobs``: for each ``candidate_distribution`` call, the raw
    log-probability of each candidate; the keys must be the request's candidates.
    """

    def __init__(
        self,
        json_values: Iterable[Any] = (),
        logprobs: Iterable[Mapping[str, float] | BaseException] = (),
        *,
        capabilities: Capabilities = FULL_CAPABILITIES,
        fingerprint: Fingerprint | None = None,
    ) -> None:
        self.json_values = list(json_values)
        self.logprobs = list(logprobs)
        self.requests: list[JsonRequest | DistributionRequest] = []
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
            value=parse_reply(text, request.json_schema), text=text, finish_reason="stop"
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
        return DistributionReply(distribution=renormalize(ordered))

    def close(self) -> None:
        self.closed = True


def _next(queue: list[Any], operation: str) -> Any:
    if not queue:
        raise ScriptExhausted(f"ScriptedBackend: no scripted reply left for {operation}")
    item = queue.pop(0)
    if isinstance(item, BaseException):
        raise item
    return item
