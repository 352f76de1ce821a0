"""A judge wrapper the benchmarks share: every call counted by outcome, the usage of its replies added up.

Benchmarks run as scripts, so this folder is first on ``sys.path`` for those in it
(``from counting import CountingBackend``); ``speed/`` puts it there itself.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from localeval import Backend, Capabilities, DistributionReply, DistributionRequest, Fingerprint, JsonReply, JsonRequest

Reply = TypeVar("Reply", JsonReply, DistributionReply)


@dataclass
class Counts:
    """What the answered calls add up to."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: tokens the in-process model really evaluates: counted by a hook of the speed benchmark, not here
    forward_tokens: int = 0


class CountingBackend:
    """Delegates to a backend; counts each call and how it ended, and adds up the usage of its replies.

    ``outcomes`` keys are the operation and "ok" or the error's type (``"generate_json ok"``,
    ``"generate_json SchemaViolation"``); ``errors`` keeps each failure's message, ``calls``
    each answered call (operation, seconds, tokens). Safe to share between threads.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.errors: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.counts = Counts()
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    @property
    def fingerprint(self) -> Fingerprint:
        return self.backend.fingerprint

    def generate_json(self, request: JsonRequest) -> JsonReply:
        return self._counted("generate_json", lambda: self.backend.generate_json(request))

    def candidate_distribution(self, request: DistributionRequest) -> DistributionReply:
        return self._counted("candidate_distribution", lambda: self.backend.candidate_distribution(request))

    def close(self) -> None:
        self.backend.close()

    def snapshot(self) -> Counts:
        """A copy of the counts so far, to subtract from a later one."""
        with self._lock:
            return Counts(**vars(self.counts))

    def failures(self) -> dict[str, int]:
        """The outcomes other than "ok"."""
        with self._lock:
            return {key: n for key, n in self.outcomes.items() if not key.endswith(" ok")}

    def _counted(self, operation: str, call: Callable[[], Reply]) -> Reply:
        start = time.perf_counter()
        try:
            reply = call()
        except Exception as err:
            with self._lock:
                self.outcomes[f"{operation} {type(err).__name__}"] += 1
                self.errors.append(f"{type(err).__name__}: {err}"[:300])
            raise
        seconds = time.perf_counter() - start
        usage = reply.usage
        with self._lock:
            self.outcomes[f"{operation} ok"] += 1
            self.counts.calls += 1
            self.counts.prompt_tokens += usage.prompt_tokens
            self.counts.completion_tokens += usage.completion_tokens
            self.calls.append({"operation": operation, "seconds": seconds, "prompt_tokens": usage.prompt_tokens,
                               "completion_tokens": usage.completion_tokens})
        return reply
